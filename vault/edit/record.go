package edit

import (
	"context"
	"sync/atomic"
)

// Cause says who and what made margin write: the history of margin's
// writes (SPEC §11) keeps it with each write. It travels in the context of
// the write (WithCause), so the parts that write need not know who records.
type Cause struct {
	// Actor is who the write is for: an agent id, an MCP client's name,
	// or the person ("person via CLI", "person via <editor>").
	Actor     string
	Task      string // the task note the write is about
	ChangeSet string
	Item      string
	Template  string // name@version
	Model     string
	// Undo names the write record this write reverses.
	Undo int64
}

type causeKey struct{}

// WithCause returns ctx carrying c over the cause ctx already carries:
// fields c leaves empty keep their earlier value, so the command line can
// name the person and the change sets the item.
func WithCause(ctx context.Context, c Cause) context.Context {
	old := CauseOf(ctx)
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&old.Actor, c.Actor}, {&old.Task, c.Task}, {&old.ChangeSet, c.ChangeSet}, {&old.Item, c.Item},
		{&old.Template, c.Template}, {&old.Model, c.Model},
	} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	if c.Undo != 0 {
		old.Undo = c.Undo
	}
	return context.WithValue(ctx, causeKey{}, old)
}

// CauseOf returns the cause ctx carries; zero when none.
func CauseOf(ctx context.Context) Cause {
	c, _ := ctx.Value(causeKey{}).(Cause)
	return c
}

// Part is one item's share of a write that applies several at once (a
// change set's confirmed items): the note's text before and after that
// item alone, so that one item can be undone without the others. A nil
// Before says the item created the note.
type Part struct {
	Item          string
	Before, After []byte
}

// Record is one write margin is about to make.
type Record struct {
	Path    string // vault-relative, cleaned
	Before  []byte // what the write replaces; nil when the note did not exist
	Existed bool
	After   []byte
	// Removed says the write removes the note (RemoveContext): After is nil.
	Removed bool
	// InEditor says the write goes into the editor's buffer, which reaches
	// the disk when the person saves.
	InEditor bool
	Cause    Cause
	Parts    []Part
}

// A Recorder keeps the record of margin's writes. Begin is called before a
// write lands; a write whose Begin fails is not made. done is called after,
// with whether it landed: a process killed in between leaves a record whose
// write is unknown, which the Recorder settles against the file when it
// starts again.
type Recorder interface {
	Begin(ctx context.Context, rec Record) (done func(landed bool), err error)
}

// SetRecorder makes every later write of r recorded by rec (nil: none).
func (r *Root) SetRecorder(rec Recorder) {
	if rec == nil {
		r.recorder.Store(nil)
		return
	}
	r.recorder.Store(&rec)
}

type recorderSlot = atomic.Pointer[Recorder]

// begin records a write about to land; the done it returns is never nil.
func (r *Root) begin(ctx context.Context, rec Record) (func(bool), error) {
	p := r.recorder.Load()
	if p == nil {
		return func(bool) {}, nil
	}
	rec.Cause = CauseOf(ctx)
	done, err := (*p).Begin(ctx, rec)
	if err != nil {
		return nil, err
	}
	return done, nil
}
