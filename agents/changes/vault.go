package changes

import (
	"context"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// Vault is what the change sets are handed of the vault by the
// composition root: the files they write, word of a person's saves, and
// how the vault reads a task note.
type Vault struct {
	Files  Files
	Events Events
	Rules  vault.Rules
	// OutputFolder is margin's folder, where change set files live.
	OutputFolder string
	// MaxFileSize is the largest note margin edits (vault.max_file_size).
	MaxFileSize int64
}

// Files reads and writes change set files and task notes, confined to the
// vault: the vault's *edit.Root.
type Files interface {
	Read(name string) (edit.Snapshot, error)
	CurrentOf(ed edit.Editor, name string) (edit.Current, error)
	WriteContext(ctx context.Context, name string, base edit.Fingerprint, content []byte) (edit.Fingerprint, error)
	Change(ctx context.Context, ed edit.Editor, name string, change func(edit.Current) ([]byte, error)) (edit.Changed, error)
	ChangeParts(ctx context.Context, ed edit.Editor, name string, change func(edit.Current) ([]byte, []edit.Part, error)) (edit.Changed, error)
	MoveContext(ctx context.Context, from, to string) (moved bool, err error)
	RemoveEmptyFolder(name string) (removed bool, err error)
}

// Events tells of the vault's changes once its first scan is done: the
// *vault.Vault.
type Events interface {
	Subscribe(fn func([]vault.Change))
	Ready() <-chan struct{}
}
