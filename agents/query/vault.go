package query

import (
	"context"
	"io/fs"

	"github.com/margin-md/margin/vault/edit"
)

// Files is how the engine reads and writes the vault's files, confined to
// the vault; the composition root hands it the vault's *edit.Root.
type Files interface {
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Change(ctx context.Context, ed edit.Editor, name string, change func(edit.Current) ([]byte, error)) (edit.Changed, error)
}
