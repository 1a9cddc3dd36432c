// Package vault is margin's view of a markdown vault: it keeps the index in
// step with the files (a full scan at start, then the watcher), tells
// subscribers which notes changed, answers searches, and is the only way to
// write into the vault.
//
// Its sub-packages do one job each and know nothing of each other: note
// parses, index stores and searches, watch reports file changes, edit writes
// safely, store opens the state database. This package wires them together.
// It must not import margin's server or agents packages.
package vault

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
	"github.com/margin-md/margin/vault/watch"
)

// ErrNotFound is returned for a note that is not in the vault.
var ErrNotFound = errors.New("not found")

// Options configure a Vault. Zero values take SPEC defaults.
type Options struct {
	Dir         string
	DailyFolder string // used when .obsidian/daily-notes.json is absent
	DailyFormat string // moment.js format, likewise
	// Locale is the language daily notes are named in (moment.js's name:
	// ko, zh-cn, …); "" infers it from the daily notes already there.
	Locale      string
	TaskFolders []string
	Ignore      []string // globs relative to the vault
	// NoGitignore indexes what git ignores too (config
	// vault.respect_gitignore: false); by default, in a git work tree,
	// paths git ignores are not indexed.
	NoGitignore  bool
	OutputFolder string
	StateDir     string // relative to Dir
	MaxFileSize  int64
	Debounce     time.Duration
	Logger       *slog.Logger
	// OnStatus is told when a scan or rescan finishes.
	OnStatus func(IndexEvent)
}

func (o *Options) setDefaults() {
	if o.DailyFolder == "" {
		o.DailyFolder = "Daily"
	}
	if o.DailyFormat == "" {
		o.DailyFormat = "YYYY-MM-DD"
	}
	if o.TaskFolders == nil {
		o.TaskFolders = []string{"Tasks"}
	}
	if o.OutputFolder == "" {
		o.OutputFolder = "Margin"
	}
	if o.StateDir == "" {
		o.StateDir = ".margin"
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = 5 << 20
	}
	if o.Debounce <= 0 {
		o.Debounce = 150 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Vault is an open vault.
type Vault struct {
	dir    string
	opts   Options
	logger *slog.Logger
	parse  note.Options
	rules  Rules
	ignore func(rel string, isDir bool) bool // for the watcher: what is not a note
	// excluded is what is not part of the vault at all (see ignoreRules):
	// the index does not account for it, not even as skipped.
	excluded func(rel string, isDir bool) bool
	root     *edit.Root
	state    string  // the state dir's absolute path
	db       *sql.DB // the state database (agents, ledger, queries); the index has a file of its own
	index    *index.Index
	watcher  *watch.Watcher // nil until Run

	ready     chan struct{}
	readyOnce sync.Once
	stopped   chan struct{} // closed when Run returns; runErr says why

	mu          sync.Mutex // guards the fields below
	runErr      error
	subscribers []func([]Change)
	lastScan    ScanResult
	lastRescan  time.Time
	rescanWhy   string
}

// Open opens the vault at opts.Dir and its index. It does not scan: call
// Scan (commands) or Run (the server).
func Open(ctx context.Context, opts Options) (*Vault, error) {
	opts.setDefaults()
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("vault %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("vault %s is not a directory", dir)
	}

	rules := readRules(dir, opts)
	root, err := edit.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening vault %s: %w", dir, err)
	}
	state, err := store.OpenDir(dir, opts.StateDir)
	if err != nil {
		root.Close()
		return nil, err
	}
	db, err := store.Open(ctx, filepath.Join(state, "state.db"))
	if err != nil {
		root.Close()
		return nil, err
	}
	if dropped, err := index.DropFrom(ctx, db); err != nil {
		opts.Logger.Warn("could not remove the old index from the state database", "err", err)
	} else if dropped {
		opts.Logger.Info("moved the index out of the state database: indexing the vault again")
	}
	indexDB := filepath.Join(state, "index.db")
	idx, err := index.Open(ctx, indexDB)
	if index.Damaged(err) {
		// The index is margin's to rebuild; a damaged one must not keep
		// margin from starting.
		opts.Logger.Warn("the index is damaged: removing it and indexing the vault again", "err", err)
		if err = index.Remove(indexDB); err == nil {
			idx, err = index.Open(ctx, indexDB)
		}
	}
	if err != nil {
		db.Close()
		root.Close()
		return nil, err
	}
	excluded, ignore, err := ignoreRules(dir, opts.StateDir, &rules)
	if err != nil {
		idx.Close()
		db.Close()
		root.Close()
		return nil, fmt.Errorf("vault.ignore: %w", err)
	}
	warnOnce(state, rules.Warnings, opts.Logger)

	v := &Vault{
		dir:      dir,
		state:    state,
		opts:     opts,
		logger:   opts.Logger,
		parse:    rules.noteOptions(),
		rules:    rules,
		ignore:   ignore,
		excluded: excluded,
		root:     root,
		db:       db,
		index:    idx,
		ready:    make(chan struct{}),
		stopped:  make(chan struct{}),
	}
	return v, nil
}

// Dir is the vault's absolute path.
func (v *Vault) Dir() string { return v.dir }

// StateDir is the absolute path of margin's state dir in the vault, checked
// at Open to hold no symbolic link.
func (v *Vault) StateDir() string { return v.state }

// Ready is closed when the first scan has finished. A Run that stops
// before that leaves it open, as the index is not current: WaitReady says
// why.
func (v *Vault) Ready() <-chan struct{} { return v.ready }

// errStoppedEarly is WaitReady's answer when Run ended before the first
// scan finished without an error of its own: its context ended.
var errStoppedEarly = errors.New("the vault stopped before its first scan finished")

// WaitReady waits for the first scan: it returns nil once the scan has
// finished, the error that stopped Run before it did (the watcher could not
// start, the scan failed), or ctx's error.
func (v *Vault) WaitReady(ctx context.Context) error {
	select {
	case <-v.ready:
		return nil
	case <-v.stopped:
		select {
		case <-v.ready: // the scan finished; Run stopped since
			return nil
		default:
		}
		if err := v.Err(); err != nil {
			return err
		}
		return errStoppedEarly
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Err is the error that stopped Run, nil while it runs or when its context
// ended it.
func (v *Vault) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.runErr
}

// Close releases the index and the vault root.
func (v *Vault) Close() error {
	return errors.Join(v.index.Close(), v.db.Close(), v.root.Close())
}

// Root is the writer for everything margin puts into the vault.
func (v *Vault) Root() *edit.Root { return v.root }

// DB is margin's state database, for components that keep their own tables
// in it (migrated with vault/store). The vault closes it.
func (v *Vault) DB() *sql.DB { return v.db }

// Options are the options the vault was opened with, defaults applied.
func (v *Vault) Options() Options { return v.opts }

// Index gives read access to the note index.
func (v *Vault) Index() *index.Index { return v.index }

// Path turns a file:// URI or an absolute or vault-relative path into a
// clean vault-relative path, refusing anything outside the vault.
func (v *Vault) Path(p string) (string, error) {
	return v.root.Rel(p)
}

// removeStaleTemp removes a temp file that a margin process died before
// renaming into place (see edit.RemoveStaleTemp). The note it was meant to
// replace is intact; the temp file is only clutter a person would see.
func (v *Vault) removeStaleTemp(rel string) {
	removed, err := v.root.RemoveStaleTemp(rel)
	switch {
	case err != nil:
		v.logger.Warn("cannot remove a temp file left by an interrupted write", "path", rel, "err", err)
	case removed:
		v.logger.Info("removed a temp file left by an interrupted write", "path", rel)
	}
}

// warnOnce logs the rules' warnings when they differ from those the last
// open logged: status and doctor always carry them (and vault/status to
// editors), and logged at every open they would head the output of every
// command a person types in a terminal.
func warnOnce(state string, warnings []string, log *slog.Logger) {
	p := filepath.Join(state, "warned")
	said := strings.Join(warnings, "\n")
	if old, err := os.ReadFile(p); err == nil && string(old) == said {
		return
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	if err := os.WriteFile(p, []byte(said), 0o644); err != nil {
		log.Debug("could not record the warnings said", "err", err)
	}
}
