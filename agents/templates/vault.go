package templates

import (
	"context"
	"io/fs"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// Vault is what the library is handed of the vault by the composition
// root: the files it keeps, word of a person's edits, and where margin's
// folder is.
type Vault struct {
	Files  Files
	Events Events
	// OutputFolder is margin's folder; the library keeps <output>/Templates.
	OutputFolder string
}

// Files reads and writes the library's files, confined to the vault: the
// vault's *edit.Root.
type Files interface {
	Read(name string) (edit.Snapshot, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	WriteContext(ctx context.Context, name string, base edit.Fingerprint, content []byte) (edit.Fingerprint, error)
}

// Events tells of the vault's changes once its first scan is done: the
// *vault.Vault.
type Events interface {
	Subscribe(fn func([]vault.Change))
	Ready() <-chan struct{}
}
