package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// ErrNothingToUndo matches the error of an undo of an item margin has no
// write of; it matches vault.ErrNotFound.
var ErrNothingToUndo = fmt.Errorf("no write of margin to undo: %w", vault.ErrNotFound)

// ConflictError refuses an undo: the note no longer holds what margin
// wrote there, so putting back what it replaced would overwrite the
// person's edit. Nothing was written.
type ConflictError struct {
	Path     string `json:"path"`
	Original string `json:"original"` // what margin's write replaced
	Margin   string `json:"margin"`   // what margin wrote
	Current  string `json:"current"`  // the note now
}

func (e *ConflictError) Error() string {
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
// edits elsewhere in the note stay). Otherwise it is a *ConflictError and
// nothing is written. The undo is a write recorded like any other, for
// the same item, so undoing again redoes it. It goes through the editor
// when the note is open there.
func (h *History) Undo(ctx context.Context, ed edit.Editor, changeSet, item string) (Undone, error) {
	var (
		id             int64
		p              string
		existed        bool
		removed        bool
		before, after  []byte
		partB, partA   []byte
		whole          bool
		partCreated    bool // the item's part created the note
		task, template string
		model          string
	)
	var pre, suf, partPre, partSuf int
	err := h.db.QueryRowContext(ctx, `SELECT h.id, h.path, h.existed, h.removed, h.before, h.before_pre, h.before_suf, h.after,
			i.before, i.before_pre, i.before_suf, i.after, i.after IS NULL, i.after IS NOT NULL AND i.before IS NULL, h.task, h.template, h.model
		FROM history h JOIN history_items i ON i.write_id = h.id
		WHERE h.change_set = ? AND i.item = ? AND h.state = 'written' ORDER BY h.id DESC LIMIT 1`, changeSet, item).
		Scan(&id, &p, &existed, &removed, &before, &pre, &suf, &after, &partB, &partPre, &partSuf, &partA, &whole, &partCreated, &task, &template, &model)
	if errors.Is(err, sql.ErrNoRows) {
		return Undone{}, fmt.Errorf("item %s of %s: %w", item, changeSet, ErrNothingToUndo)
	}
	if err != nil {
		return Undone{}, fmt.Errorf("reading margin's history: %w", err)
	}
	before = grow(after, pre, suf, before)
	created := !existed && whole || partCreated
	if !whole {
		before, after = grow(partA, partPre, partSuf, partB), partA
	}
	ctx = edit.WithCause(ctx, edit.Cause{Task: task, ChangeSet: changeSet, Item: item, Template: template, Model: model, Undo: id})
	if edit.CauseOf(ctx).Actor == "" {
		ctx = edit.WithCause(ctx, edit.Cause{Actor: "person"})
	}
	if created {
		// The item created the note: its undo removes it, as margin wrote it.
		if err := h.uncreate(ctx, ed, p, after); err != nil {
			return Undone{}, err
		}
		return Undone{Path: p, Write: id}, nil
	}
	var refused *ConflictError
	_, err = h.root.Change(ctx, ed, p, func(cur edit.Current) ([]byte, error) {
		refused = nil
		switch {
		case removed && !cur.Exists:
			return before, nil // the undo of an undone creation creates the note again
		case removed:
		case cur.Exists:
			if out, ok := Splice(before, after, cur.Content); ok {
				return out, nil
			}
		}
		refused = &ConflictError{Path: p, Original: string(before), Margin: string(after), Current: string(cur.Content)}
		return nil, refused
	})
	if err != nil {
		if refused != nil {
			return Undone{}, refused
		}
		return Undone{}, fmt.Errorf("undoing item %s of %s: %w", item, changeSet, err)
	}
	return Undone{Path: p, Write: id}, nil
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
	b, a, c := lines(before), lines(after), lines(cur)
	pre, suf := edit.CommonEndsFunc(a, b, bytes.Equal)
	wrote, replaced := a[pre:len(a)-suf], b[pre:len(b)-suf]
	// The lines margin wrote alone when they are found once; else with a
	// line of context on each side that has one.
	at, n := -1, 0
	if len(wrote) > 0 {
		at, n = find(c, wrote)
	}
	skip := 0
	if n != 1 {
		above, below := a[max(pre-1, 0):pre], a[len(a)-suf:min(len(a)-suf+1, len(a))]
		if len(above)+len(below) == 0 {
			return nil, false
		}
		needle := append(append(append([][]byte{}, above...), wrote...), below...)
		if at, n = find(c, needle); n != 1 {
			return nil, false
		}
		skip = len(above)
	}
	start := at + skip
	var buf bytes.Buffer
	for _, l := range c[:start] {
		buf.Write(l)
	}
	for _, l := range replaced {
		buf.Write(l)
	}
	for _, l := range c[start+len(wrote):] {
		buf.Write(l)
	}
	return buf.Bytes(), true
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
