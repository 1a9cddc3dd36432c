package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/margin-md/margin/vault/edit"
)

// editNote changes the note at p to what change makes of its current
// text (exists is false when there is no such note; a nil result changes
// nothing). A note open in the editor is changed there, in its buffer,
// through workspace/applyEdit, and a refusal writes nothing. Otherwise the
// file is written compare-and-swap, and re-read and changed again when a
// person saved it meanwhile: nothing of theirs is ever overwritten.
func (e *Engine) editNote(ctx context.Context, p string, change func(cur []byte, exists bool) ([]byte, error)) error {
	if e.opts.Editor != nil {
		if text, version, open := e.opts.Editor.Open(p); open {
			out, err := change([]byte(text), true)
			if err != nil || out == nil {
				return err
			}
			applied, err := e.opts.Editor.ApplyEdit(ctx, p, version, string(out))
			if err != nil {
				return fmt.Errorf("%s is open in the editor: %w; nothing was written", p, err)
			}
			if !applied {
				return fmt.Errorf("%s: %w; nothing was written", p, ErrEditorRefused)
			}
			return nil
		}
	}
	const attempts = 3
	var err error
	for range attempts {
		if err := ctx.Err(); err != nil {
			return err
		}
		snap, rerr := e.v.Root().Read(p)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		out, cerr := change(snap.Content, rerr == nil)
		if cerr != nil || out == nil {
			return cerr
		}
		if _, err = e.v.Root().Write(p, snap.Fingerprint, out); !errors.Is(err, edit.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%s kept changing (%d attempts): %w", p, attempts, err)
}
