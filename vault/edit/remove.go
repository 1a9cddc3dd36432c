package edit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// RemoveContext removes the note at name if, and only if, it still has the
// fingerprint base: the undo of margin's creation of a note, recorded in
// the history of margin's writes as a write of nothing (ctx names its
// cause). The note is moved aside under a temp name first, which is
// atomic, and what was moved is checked: a save that landed in between is
// put back and the removal refused with a *ConflictError. A symlink is
// refused: margin removes only what it created.
func (r *Root) RemoveContext(ctx context.Context, name string, base Fingerprint) error {
	p, err := Clean(name)
	if err != nil {
		return fmt.Errorf("removing %s: %w", name, err)
	}
	if err := r.remove(ctx, p, base); err != nil {
		return fmt.Errorf("removing %s: %w", p, err)
	}
	return nil
}

func (r *Root) remove(ctx context.Context, p string, base Fingerprint) error {
	info, err := r.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &ConflictError{Path: p, Base: base}
	case err != nil:
		return r.classify(err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	}
	cur, err := r.onDisk(p)
	if err != nil {
		return err
	}
	if err := cur.check(p, base); err != nil {
		return err
	}
	done, err := r.begin(ctx, Record{Path: p, Before: cur.content, Existed: true, Removed: true})
	if err != nil {
		return fmt.Errorf("recording the removal in margin's history: %w", err)
	}
	r.commitMu.Lock()
	defer r.commitMu.Unlock()
	aside := path.Join(path.Dir(p), tempName())
	if err := r.root.Rename(p, aside); err != nil {
		done(false)
		if errors.Is(err, fs.ErrNotExist) {
			return &ConflictError{Path: p, Base: base}
		}
		return r.classify(err)
	}
	moved, busy, err := r.readOnce(aside)
	if err == nil && !busy && moved.exists && moved.fp == base {
		r.root.Remove(aside) // best effort: a leftover temp file is ignored, and removed at the next start
		done(true)
		return r.syncDir(path.Dir(p))
	}
	// Not the note that was checked: a save landed in between. It goes
	// back, unless the name was taken again meanwhile.
	done(false)
	if lerr := r.root.Link(aside, p); lerr != nil {
		return fmt.Errorf("a save that landed while margin removed %s could not be put back (%v); it is kept as %s", p, lerr, aside)
	}
	r.root.Remove(aside)
	return &ConflictError{Path: p, Base: base, Current: moved.fp}
}
