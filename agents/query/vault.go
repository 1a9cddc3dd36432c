package query

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// Vault is what the engine is handed of the vault by the composition
// root.
type Vault struct {
	Files Files
	Index Index
	Daily Daily
	Rules vault.Rules
	// OutputFolder is margin's folder: the global context and the domain
	// modules live there, and nothing in it is evidence.
	OutputFolder string
}

// Files is how the engine reads and writes the vault's files, confined to
// the vault: the vault's *edit.Root.
type Files interface {
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Change(ctx context.Context, ed edit.Editor, name string, change func(edit.Current) ([]byte, error)) (edit.Changed, error)
}

// Index is what the flow asks the vault's index: the *index.Index.
type Index interface {
	Entries(ctx context.Context, from, to string) ([]index.EntryMeta, error)
	Search(ctx context.Context, q index.Query) ([]index.Hit, error)
	Find(ctx context.Context, q index.Query) (index.Result, error)
	Text(ctx context.Context, path string) (index.NoteText, error)
}

// Daily says where the vault keeps its daily notes and which template
// Obsidian makes a new one from: the *vault.Vault.
type Daily interface {
	DailyFormat() note.DailyFormat
	DailyTemplate() (string, error)
}

// Store is the query flow's tables in the vault's state database: the
// clarification sessions and what the Parser extracted from log entries.
type Store struct {
	db *sql.DB
}

// OpenStore migrates the query flow's tables in db, the vault's state
// database.
func OpenStore(ctx context.Context, db *sql.DB) (*Store, error) {
	if err := store.Migrate(ctx, db, "query", schema); err != nil {
		return nil, fmt.Errorf("opening the query store: %w", err)
	}
	return &Store{db: db}, nil
}
