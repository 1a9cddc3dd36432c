package query

import (
	"context"

	"github.com/margin-md/margin/vault/edit"
)

// editNote changes the note at p to what change makes of its current
// text (exists is false when there is no such note; a nil result changes
// nothing), through the editor when the note is open there: see
// edit.Root.Change, which re-applies change to a version a person saved
// meanwhile, so nothing of theirs is ever overwritten.
func (e *Engine) editNote(ctx context.Context, p string, change func(cur []byte, exists bool) ([]byte, error)) error {
	_, err := e.v.Files.Change(ctx, e.opts.Editor, p, func(cur edit.Current) ([]byte, error) {
		return change(cur.Content, cur.Exists)
	})
	return err
}
