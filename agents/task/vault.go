package task

import (
	"context"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/related"
	"github.com/margin-md/margin/vault/store"
)

// Vault is what the task runtime is handed of the vault by the
// composition root. The runtime hands its change sets and its template
// library the parts they need of it.
type Vault struct {
	Files  Files
	Index  Index
	Events Events
	Rules  vault.Rules
	// OutputFolder is margin's folder, where reports and journals live.
	OutputFolder string
	// MaxFileSize is the largest note margin edits (vault.max_file_size).
	MaxFileSize int64
	// Related finds the notes near a task by meaning; nil where the vault
	// has no vectors (a command that does not open them).
	Related Related
	// Lock tries the lock the one margin process that runs the vault's
	// agents holds (see lead): store.TryLock on AgentsLock in the state
	// dir.
	Lock func() (*store.Lock, error)
}

// Reader reads a file of the vault, confined to it.
type Reader interface {
	Read(name string) (edit.Snapshot, error)
}

// Files reads and writes the vault's files, confined to it: the vault's
// *edit.Root. It is what the runtime, its change sets and its template
// library write through.
type Files interface {
	changes.Files
	templates.Files
}

// Index is what the runtime asks the vault's index: the *index.Index.
type Index interface {
	Note(ctx context.Context, path string) (index.NoteMeta, error)
	Tasks(ctx context.Context) ([]index.TaskMeta, error)
	TasksAt(ctx context.Context, paths []string) ([]index.TaskMeta, error)
	StatPaths(ctx context.Context, paths []string) (map[string]index.FileStat, error)
	LinkedEntries(ctx context.Context, taskPath string) ([]index.EntryMeta, error)
	LinkedTasks(ctx context.Context, path string) ([]string, error)
	ResolveLink(ctx context.Context, from, target string) (string, error)
}

// Related finds up to limit notes nearest the note at path by meaning
// that it neither links to nor is linked from (vault/related), best
// first: the workspace's RelatedNow. It finds none, at once and without
// error, while no note has vectors of the current embedding model.
type Related interface {
	RelatedNow(ctx context.Context, path string, limit int) ([]related.Note, error)
}

// Events tells of the vault's changes once its first scan is done: the
// *vault.Vault.
type Events interface {
	Subscribe(fn func([]vault.Change))
	Ready() <-chan struct{}
}

// Stores are the agents' tables and their change sets', which the
// composition root opens in the vault's state database.
type Stores struct {
	Agents  *Store
	Changes *changes.Store
}

func (v Vault) changes() changes.Vault {
	return changes.Vault{Files: v.Files, Events: v.Events, Rules: v.Rules, OutputFolder: v.OutputFolder, MaxFileSize: v.MaxFileSize}
}

func (v Vault) templates() templates.Vault {
	return templates.Vault{Files: v.Files, Events: v.Events, OutputFolder: v.OutputFolder}
}
