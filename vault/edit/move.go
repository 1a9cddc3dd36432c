package edit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// MoveContext moves the file at from to to, which must not exist: the
// file is copied to to (created as Write creates, so a file that appears
// there meanwhile is never replaced), then from is removed if it is still
// what was copied. A save that changed from in between keeps it: the copy
// is removed again and the move refused with a *ConflictError. The history
// of margin's writes has both writes (ctx names their cause). moved is
// false when there is nothing at from.
func (r *Root) MoveContext(ctx context.Context, from, to string) (moved bool, err error) {
	snap, err := r.Read(from)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("moving %s: %w", from, err)
	}
	fp, err := r.WriteContext(ctx, to, "", snap.Content)
	if err != nil {
		return false, fmt.Errorf("moving %s to %s: %w", from, to, err)
	}
	if err := r.RemoveContext(ctx, from, snap.Fingerprint); err != nil {
		if rerr := r.RemoveContext(ctx, to, fp); rerr != nil {
			return false, fmt.Errorf("moving %s to %s: %w; the copy stays: %w", from, to, err, rerr)
		}
		return false, fmt.Errorf("moving %s to %s: %w", from, to, err)
	}
	return true, nil
}

// RemoveEmptyFolder removes the folder at name if it is empty, as a move
// of the last file out of it leaves it; removed is false for a folder
// that holds anything, or none at all.
func (r *Root) RemoveEmptyFolder(name string) (removed bool, err error) {
	p, err := Clean(name)
	if err != nil {
		return false, fmt.Errorf("removing the folder %s: %w", name, err)
	}
	info, err := r.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, r.classify(err)
	case !info.IsDir():
		return false, fmt.Errorf("removing the folder %s: not a folder", p)
	}
	entries, err := fs.ReadDir(r.root.FS(), p)
	if err != nil || len(entries) > 0 {
		return false, r.classify(err)
	}
	// rmdir: a file created in it meanwhile makes this fail, and stays.
	if err := r.root.Remove(p); err != nil {
		return false, nil
	}
	return true, nil
}
