package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// ErrNothingToUndo matches the error of an undo of an item margin has no
// write of; it matches vault.ErrNotFound.
var ErrNothingToUndo = fmt.Errorf("no write of margin to undo: %w", vault.ErrNotFound)

// ConflictError refuses an undo: the note no longer holds what margin
// wrote there, so putting back what it replaced would overwrite the
// person's edit. Nothing was written.
// Of a write the history compacted (a write of no change item, once
// committed), Original and Margin are the lines it changed.
type ConflictError struct {
	Path     string `json:"path"`
	Original string `json:"original"` // what margin's write replaced
	Margin   string `json:"margin"`   // what margin wrote
	Current  string `json:"current"`  // the note now
	// Later is margin's later write that changed the item's lines since,
	// maybe back to what the item wrote: it is to be undone first.
	Later *LaterWrite `json:"later,omitempty"`
}

// LaterWrite names one of margin's writes in a refusal.
type LaterWrite struct {
	Write     int64    `json:"write"`
	Actor     string   `json:"actor"`
	ChangeSet string   `json:"changeSet,omitempty"`
	Items     []string `json:"items,omitempty"`
}

func (e *ConflictError) Error() string {
	if l := e.Later; l != nil && len(l.Items) > 0 {
		return fmt.Sprintf("%s: a later write of margin (item %s of %s) changed these lines since; undo it first; nothing was undone",
			e.Path, strings.Join(l.Items, " "), l.ChangeSet)
	} else if l != nil {
		return fmt.Sprintf("%s: a later write of margin (write %d by %s) changed it since; undo it first (margin undo %d); nothing was undone",
			e.Path, l.Write, l.Actor, l.Write)
	}
	return fmt.Sprintf("%s no longer holds what margin wrote there (edited since?); nothing was undone", e.Path)
}

// Is makes errors.Is(err, edit.ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == edit.ErrConflict }

// Undone is what an undo did.
type Undone struct {
	Path string // the note changed
	// Write is the write undone; undoing the undo's own write puts
	// margin's text back.
	Write int64
}

// Undo reverses margin's latest write for the item of the change set: the
// note gets back exactly what that write replaced, in the region the item
// changed, when that region still holds what margin wrote (the person's
// edits elsewhere in the note stay), and no later write of margin's that
// still stands changed it since, even back to the same text: that write
// is to be undone first. Otherwise it is a *ConflictError and nothing is
// written. The undo is a write recorded like any other, for the same
// item, so undoing again redoes it. It goes through the editor when the
// note is open there.
func (h *History) Undo(ctx context.Context, ed edit.Editor, changeSet, item string) (Undone, error) {
	w, err := scanItemWrite(h.db.QueryRowContext(ctx, `SELECT `+itemWriteColumns+`
		FROM history h JOIN history_items i ON i.write_id = h.id
		WHERE h.change_set = ? AND i.item = ? AND h.state = 'written' ORDER BY h.id DESC LIMIT 1`, changeSet, item))
	if errors.Is(err, sql.ErrNoRows) {
		return Undone{}, fmt.Errorf("item %s of %s: %w", item, changeSet, ErrNothingToUndo)
	}
	if err != nil {
		return Undone{}, fmt.Errorf("reading margin's history: %w", err)
	}
	later, err := h.laterWrite(ctx, w.id, item)
	if err != nil {
		return Undone{}, err
	}
	ctx = edit.WithCause(ctx, edit.Cause{Task: w.task, ChangeSet: changeSet, Item: item, Template: w.template, Model: w.model, Undo: w.id})
	if edit.CauseOf(ctx).Actor == "" {
		ctx = edit.WithCause(ctx, edit.Cause{Actor: "person"})
	}
	p, before, after := w.path, w.before, w.after
	if w.created && later == nil {
		// The item created the note: its undo removes it, as margin wrote it.
		if err := h.uncreate(ctx, ed, p, after); err != nil {
			return Undone{}, err
		}
		return Undone{Path: p, Write: w.id}, nil
	}
	var refused *ConflictError
	_, err = h.root.Change(ctx, ed, p, func(cur edit.Current) ([]byte, error) {
		refused = nil
		switch {
		case later != nil:
		case w.removed && !cur.Exists:
			return before, nil // the undo of an undone creation creates the note again
		case w.removed:
		case cur.Exists:
			if out, ok := Splice(before, after, cur.Content); ok {
				return out, nil
			}
		}
		refused = &ConflictError{Path: p, Original: string(before), Margin: string(after), Current: string(cur.Content), Later: later}
		return nil, refused
	})
	if err != nil {
		if refused != nil {
			return Undone{}, refused
		}
		return Undone{}, fmt.Errorf("undoing item %s of %s: %w", item, changeSet, err)
	}
	return Undone{Path: p, Write: w.id}, nil
}

// itemWrite is a change item's share of one of margin's writes, as undo
// reverses it.
type itemWrite struct {
	id                    int64
	path, set, item       string
	removed               bool   // the write removed the note (an undo of its creation)
	created               bool   // the item's write created the note
	before, after         []byte // what the item's share replaced and wrote
	task, template, model string
}

// itemWriteColumns are what scanItemWrite reads, of history h joined to
// history_items i.
const itemWriteColumns = `h.id, h.path, h.change_set, i.item, h.existed, h.removed, h.before, h.before_pre, h.before_suf, h.after,
	i.before, i.before_pre, i.before_suf, i.after, i.after IS NULL, i.after IS NOT NULL AND i.before IS NULL, h.task, h.template, h.model`

func scanItemWrite(row interface{ Scan(...any) error }) (itemWrite, error) {
	var (
		w                           itemWrite
		existed, whole, partCreated bool
		partB, partA                []byte
		pre, suf, partPre, partSuf  int
	)
	err := row.Scan(&w.id, &w.path, &w.set, &w.item, &existed, &w.removed, &w.before, &pre, &suf, &w.after,
		&partB, &partPre, &partSuf, &partA, &whole, &partCreated, &w.task, &w.template, &w.model)
	if err != nil {
		return w, err
	}
	w.before = grow(w.after, pre, suf, w.before)
	w.created = !existed && whole || partCreated
	if !whole {
		w.before, w.after = grow(partA, partPre, partSuf, partB), partA
	}
	return w, nil
}

// uncreate removes the note margin created at p, if it is still exactly
// what margin wrote and not open in the editor, whose buffer would bring
// it back.
func (h *History) uncreate(ctx context.Context, ed edit.Editor, p string, wrote []byte) error {
	if ed != nil {
		if _, _, open := ed.Open(p); open {
			return fmt.Errorf("%s is open in the editor: close it to undo its creation; nothing was removed: %w", p, edit.ErrConflict)
		}
	}
	cur, err := h.root.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &ConflictError{Path: p, Margin: string(wrote)}
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(cur.Content, wrote) {
		return &ConflictError{Path: p, Margin: string(wrote), Current: string(cur.Content)}
	}
	var ce *edit.ConflictError
	if err := h.root.RemoveContext(ctx, p, cur.Fingerprint); errors.As(err, &ce) {
		now, _ := h.root.ReadFile(p)
		return &ConflictError{Path: p, Margin: string(wrote), Current: string(now)}
	} else if err != nil {
		return err
	}
	return nil
}

// Splice makes of cur, a note that margin's write turned from before into
// after and that may have been edited since, the note with that write
// reversed: the lines it changed, found in cur, get back what they were.
// ok is false when cur no longer holds them, or holds them more than once
// with nothing to tell which is margin's.
func Splice(before, after, cur []byte) (out []byte, ok bool) {
	if bytes.Equal(cur, after) {
		return bytes.Clone(before), true
	}
	c := lines(cur)
	start, end, replaced, ok := locate(before, after, c)
	if !ok {
		return nil, false
	}
	var buf bytes.Buffer
	for _, l := range c[:start] {
		buf.Write(l)
	}
	for _, l := range replaced {
		buf.Write(l)
	}
	for _, l := range c[end:] {
		buf.Write(l)
	}
	return buf.Bytes(), true
}

// locate finds in the lines of a text the lines a write that turned before
// into after wrote there: c[start:end] are they, and replaced what they
// replaced. ok is false when the text does not hold them, or holds them
// more than once with nothing to tell which are the write's.
func locate(before, after []byte, c [][]byte) (start, end int, replaced [][]byte, ok bool) {
	w := wroteBy(before, after)
	start, end, ok = w.in(c)
	return start, end, w.replaced, ok
}

// wrote is what a write wrote, to be found in a text.
type wrote struct {
	lines, replaced [][]byte
	// above and below are a line of context each side, where there is one.
	above, below [][]byte
}

func wroteBy(before, after []byte) wrote {
	b, a := lines(before), lines(after)
	pre, suf := edit.CommonEndsFunc(a, b, bytes.Equal)
	return wrote{lines: a[pre : len(a)-suf], replaced: b[pre : len(b)-suf],
		above: a[max(pre-1, 0):pre], below: a[len(a)-suf : min(len(a)-suf+1, len(a))]}
}

// in finds the lines written in c: alone when they are found once; else
// with the lines of context.
func (w wrote) in(c [][]byte) (start, end int, ok bool) {
	at, n := -1, 0
	if len(w.lines) > 0 {
		at, n = find(c, w.lines)
	}
	skip := 0
	if n != 1 {
		if len(w.above)+len(w.below) == 0 {
			return 0, 0, false
		}
		needle := append(append(append([][]byte{}, w.above...), w.lines...), w.below...)
		if at, n = find(c, needle); n != 1 {
			return 0, 0, false
		}
		skip = len(w.above)
	}
	start = at + skip
	return start, start + len(w.lines), true
}

// lines splits text after each newline, keeping it.
func lines(text []byte) [][]byte {
	var out [][]byte
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n') + 1
		if i == 0 {
			i = len(text)
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}

// find returns where needle first occurs in hay as whole lines, and how
// many times (at most 2: more is ambiguous all the same).
func find(hay, needle [][]byte) (at, n int) {
	at = -1
	for i := 0; i+len(needle) <= len(hay) && n < 2; i++ {
		match := true
		for j := range needle {
			if !bytes.Equal(hay[i+j], needle[j]) {
				match = false
				break
			}
		}
		if match {
			if n == 0 {
				at = i
			}
			n++
		}
	}
	return at, n
}

// ErrItemWrite refuses the undo by write id of a write that applied
// change items: their undo goes through the change set, which records it
// as a decision and knows the later writes that changed the items' lines.
var ErrItemWrite = errors.New("this write applied change items: undo them through their change set")

// UndoWrite reverses margin's write id that applied no change item (a
// report, a journal entry, a log entry, a template, the global context, a
// change set file): the file gets back exactly what the write replaced
// where it still holds what margin wrote; a person's edits elsewhere in
// it stay. Otherwise it is a *ConflictError naming the later write of
// margin's, if one changed the file since, and nothing is written. The
// undo is a write recorded like any other, so undoing it redoes the write.
func (h *History) UndoWrite(ctx context.Context, ed edit.Editor, id int64) (Undone, error) {
	var (
		w                itemWrite
		existed, part    bool
		pre, suf         int
		changeSet, items string
	)
	err := h.db.QueryRowContext(ctx, `SELECT h.path, h.existed, h.removed, h.before, h.before_pre, h.before_suf, h.after, h.after_part,
			h.task, h.change_set, h.template, h.model, COALESCE((SELECT group_concat(item, ' ') FROM history_items WHERE write_id = h.id), '')
		FROM history h WHERE h.id = ? AND h.state = 'written'`, id).
		Scan(&w.path, &existed, &w.removed, &w.before, &pre, &suf, &w.after, &part, &w.task, &changeSet, &w.template, &w.model, &items)
	if errors.Is(err, sql.ErrNoRows) {
		return Undone{}, fmt.Errorf("write %d: %w", id, ErrNothingToUndo)
	}
	if err != nil {
		return Undone{}, fmt.Errorf("reading margin's history: %w", err)
	}
	if items != "" {
		return Undone{}, fmt.Errorf("write %d applied item %s of change set %s (margin undo %s %s): %w",
			id, strings.ReplaceAll(items, " ", ", "), changeSet, changeSet, items, ErrItemWrite)
	}
	if !part {
		// Kept whole: before is what shrink kept of it.
		w.before = grow(w.after, pre, suf, w.before)
	}
	ctx = edit.WithCause(ctx, edit.Cause{Task: w.task, ChangeSet: changeSet, Template: w.template, Model: w.model, Undo: id})
	if edit.CauseOf(ctx).Actor == "" {
		ctx = edit.WithCause(ctx, edit.Cause{Actor: "person"})
	}
	p := w.path
	if !existed {
		// The write created the file: its undo removes it, as margin wrote it.
		if err := h.uncreate(ctx, ed, p, w.after); err != nil {
			return Undone{}, h.withLater(ctx, err, p, id)
		}
		return Undone{Path: p, Write: id}, nil
	}
	var refused *ConflictError
	_, err = h.root.Change(ctx, ed, p, func(cur edit.Current) ([]byte, error) {
		refused = nil
		switch {
		case w.removed && !cur.Exists:
			return w.before, nil // the undo of an undone creation creates the file again
		case w.removed:
		case cur.Exists && part && len(cur.Content) == pre+len(w.after)+suf && bytes.Equal(cur.Content[pre:pre+len(w.after)], w.after):
			// Only what differed is kept (compact): margin's bytes where it put them.
			return slices.Concat(cur.Content[:pre], w.before, cur.Content[pre+len(w.after):]), nil
		case cur.Exists:
			// Whole, or the whole lines that differed (shrink): found in the file as it is now.
			if out, ok := Splice(w.before, w.after, cur.Content); ok {
				return out, nil
			}
		}
		refused = &ConflictError{Path: p, Original: string(w.before), Margin: string(w.after), Current: string(cur.Content)}
		return nil, refused
	})
	if err != nil {
		if refused != nil {
			return Undone{}, h.withLater(ctx, refused, p, id)
		}
		return Undone{}, fmt.Errorf("undoing write %d: %w", id, err)
	}
	return Undone{Path: p, Write: id}, nil
}

// withLater names in a refusal the latest write of margin's to the same
// file after write id that still stands: the write to undo first.
func (h *History) withLater(ctx context.Context, err error, p string, id int64) error {
	var refused *ConflictError
	if !errors.As(err, &refused) {
		return err
	}
	later, lerr := h.standing(ctx, `SELECT h.id, h.actor, h.change_set, h.undo_of,
			COALESCE((SELECT group_concat(item, ' ') FROM history_items WHERE write_id = h.id), '')
		FROM history h WHERE h.path = ? AND h.id > ? AND h.state = 'written' ORDER BY h.id DESC`, p, id)
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	refused.Later = later
	return refused
}
