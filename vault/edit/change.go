package edit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Editor is the editor a person has notes open in (the server implements
// it). An open note's buffer is the truth, so a change to it goes through
// the editor, never to disk (SPEC §1.2).
type Editor interface {
	// Open returns the buffer of the note at path when it is open.
	Open(path string) (text string, version int, ok bool)
	// ApplyEdit asks the editor to make the buffer of version read
	// newText; applied is false when the editor refused, which it does
	// when the buffer is no longer at version. An error matching
	// ErrNotOpen says the note was closed since Open.
	ApplyEdit(ctx context.Context, path string, version int, newText string) (applied bool, err error)
}

// ErrEditorRefused is the editor saying no to an edit of a note open in it.
var ErrEditorRefused = errors.New("the editor refused the edit of the open note")

// ErrNotOpen is matched by an Editor's ApplyEdit error for a note that was
// closed since Open: Change then edits the file on disk instead.
var ErrNotOpen = errors.New("no longer open in the editor")

// changeAttempts is Change's one retry policy. A lost race means a save
// landed between reading the note and writing it back (or typing, in its
// buffer); the next attempt reads that and changes it instead, at once, as
// the save is already complete. Losing three in a row means something saves the note
// continuously (an autosave, a sync tool): the change is then refused,
// with nothing written, rather than forced over the person's text.
const changeAttempts = 3

// Current is a note as Change found it: the text a change is made to.
type Current struct {
	Content []byte // nil when the note does not exist
	Exists  bool
	// InEditor says Content is the editor's buffer, which may hold typing
	// not saved yet, rather than the file.
	InEditor bool
}

// Fingerprint is the fingerprint of the note; zero when it does not exist.
func (c Current) Fingerprint() Fingerprint {
	if !c.Exists {
		return ""
	}
	return FingerprintOf(c.Content)
}

// CurrentOf is the note at name as Change would find it now: the buffer
// when it is open in ed, else the file. A preview of a change is made
// from it, so it shows what Change would make of the same text.
func (r *Root) CurrentOf(ed Editor, name string) (Current, error) {
	p, err := Clean(name)
	if err != nil {
		return Current{}, fmt.Errorf("reading %s: %w", name, err)
	}
	if ed != nil {
		if text, _, open := ed.Open(p); open {
			return Current{Content: []byte(text), Exists: true, InEditor: true}, nil
		}
	}
	snap, err := r.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Current{}, nil
	}
	if err != nil {
		return Current{}, err
	}
	return Current{Content: snap.Content, Exists: true}, nil
}

// Changed is what Change did to a note.
type Changed struct {
	// Content is the note's text now: what the change made of it, or the
	// text it left as it was. Nil when the note does not exist.
	Content []byte
	// Fingerprint is FingerprintOf(Content); zero when the note does not
	// exist.
	Fingerprint Fingerprint
	// Written is false when the change left the note as it was.
	Written bool
	// InEditor says Content is the editor's buffer: a change went there,
	// and reaches the disk when the person saves.
	InEditor bool
}

// Change changes the note at name (vault-relative) to what change makes of
// it as it is now. Returning nil, or the text as it is, leaves the note
// alone; returning text for a note that does not exist creates it.
//
// A note open in ed (nil when there is no editor) is changed in its buffer,
// through ApplyEdit with the buffer's version; otherwise the file is
// written compare-and-swap against what was read. Either way, when the
// note changed in between (a save, a creation or a removal on disk; typing
// in the buffer, or the note closed), change is called again with the note
// as it is now, up to changeAttempts times: a person's edit is never
// overwritten. So change must depend on its Current alone, and may run
// more than once; to refuse a note that is no longer the one the caller
// read earlier, it compares the Current (or its fingerprint) with that and
// returns an error.
//
// Nothing is written when change fails (its error is returned as it is),
// when the editor refuses (ErrEditorRefused) or fails, or when the note
// kept changing (the error wraps what the last attempt lost to, usually a
// *ConflictError). The one error with the change made is a failure to sync
// the directory after the write (see Write): Changed then says Written.
func (r *Root) Change(ctx context.Context, ed Editor, name string, change func(Current) ([]byte, error)) (Changed, error) {
	return r.ChangeParts(ctx, ed, name, func(cur Current) ([]byte, []Part, error) {
		out, err := change(cur)
		return out, nil, err
	})
}

// ChangeParts is Change for a change made of several items, each of which
// may be undone alone: change also returns each item's part of what it
// made (see Part), which the history of margin's writes keeps.
func (r *Root) ChangeParts(ctx context.Context, ed Editor, name string, change func(Current) ([]byte, []Part, error)) (Changed, error) {
	p, err := Clean(name)
	if err != nil {
		return Changed{}, fmt.Errorf("changing %s: %w", name, err)
	}
	for range changeAttempts {
		if err = ctx.Err(); err != nil {
			return Changed{}, err
		}
		var (
			res   Changed
			retry bool
		)
		text, version, open := "", 0, false
		if ed != nil {
			text, version, open = ed.Open(p)
		}
		if open {
			res, retry, err = r.changeOpen(ctx, ed, p, text, version, change)
		} else {
			res, retry, err = r.changeOnDisk(ctx, p, change)
		}
		if !retry {
			return res, err
		}
	}
	return Changed{}, fmt.Errorf("%s kept changing while margin changed it (%d attempts); nothing was written: %w", p, changeAttempts, err)
}

// changeOpen is one attempt on the editor's buffer. retry says it lost a
// race, to err: the buffer moved on past version, or the note was closed,
// before the editor applied the edit.
func (r *Root) changeOpen(ctx context.Context, ed Editor, p, text string, version int, change func(Current) ([]byte, []Part, error)) (res Changed, retry bool, err error) {
	cur := []byte(text)
	out, parts, err := change(Current{Content: cur, Exists: true, InEditor: true})
	if err != nil {
		return Changed{}, false, err
	}
	if out == nil || bytes.Equal(out, cur) {
		return Changed{Content: cur, Fingerprint: FingerprintOf(cur), InEditor: true}, false, nil
	}
	done, err := r.begin(ctx, Record{Path: p, Before: cur, Existed: true, After: out, InEditor: true, Parts: parts})
	if err != nil {
		return Changed{}, false, fmt.Errorf("recording the write in margin's history: %w; nothing was written", err)
	}
	applied, err := ed.ApplyEdit(ctx, p, version, string(out))
	done(err == nil && applied)
	switch {
	case errors.Is(err, ErrNotOpen):
		return Changed{}, true, err
	case err != nil:
		return Changed{}, false, fmt.Errorf("%s is open in the editor: %w; nothing was written", p, err)
	case applied:
		return Changed{Content: out, Fingerprint: FingerprintOf(out), Written: true, InEditor: true}, false, nil
	}
	refused := fmt.Errorf("%s: %w; nothing was written", p, ErrEditorRefused)
	// A refusal of a buffer that has moved on (or was closed) since Open
	// is a lost race; of the same buffer, the editor's answer.
	_, now, open := ed.Open(p)
	return Changed{}, !open || now != version, refused
}

// changeOnDisk is one compare-and-swap attempt on the file. retry says it
// lost a race, to err: a save, a creation or a removal since the read.
func (r *Root) changeOnDisk(ctx context.Context, p string, change func(Current) ([]byte, []Part, error)) (res Changed, retry bool, err error) {
	snap, err := r.Read(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Changed{}, false, err
	}
	out, parts, err := change(Current{Content: snap.Content, Exists: exists})
	if err != nil {
		return Changed{}, false, err
	}
	if out == nil || (exists && bytes.Equal(out, snap.Content)) {
		return Changed{Content: snap.Content, Fingerprint: snap.Fingerprint}, false, nil
	}
	fp, err := r.write(ctx, p, snap.Fingerprint, out, parts)
	if err != nil {
		err = fmt.Errorf("writing %s: %w", p, err)
	}
	switch {
	case errors.Is(err, ErrConflict):
		return Changed{}, true, err
	case fp.IsZero():
		return Changed{}, false, err
	}
	// The one error with the change in place: the directory's sync (Write).
	return Changed{Content: out, Fingerprint: fp, Written: true}, false, err
}
