package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/margin-md/margin/vault/store"
)

// The index lives in a database file of its own, apart from the state
// database of agents and ledger, because everything in it can be rebuilt
// from the vault. That allows what the state database cannot: a rollback
// journal (see store.OpenRebuildable), a cold build that writes without
// syncing, and, when in doubt, deleting the file.

// Open opens the index kept in the database file at path, creating it (and
// its folder) if need be. A file whose cold build was cut short is deleted
// first (see coldMarker), and the index starts empty.
func Open(ctx context.Context, path string) (*Index, error) {
	if err := dropInterruptedBuild(path); err != nil {
		return nil, fmt.Errorf("opening index: %w", err)
	}
	db, err := store.OpenRebuildable(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening index: %w", err)
	}
	if err := store.Migrate(ctx, db, "index", schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening index: %w", err)
	}
	ix := &Index{db: db}
	// The file the cold build syncs, open for as long as the database is:
	// closing any descriptor of it drops every lock SQLite holds on it in
	// this process (POSIX record locks are the process's), and another
	// margin would then write while this one reads or writes.
	if path != ":memory:" && path != "" {
		if ix.file, err = os.Open(path); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening index: %w", err)
		}
		if ix.ranker, err = store.OpenReaderNoWait(path); err != nil {
			db.Close()
			ix.file.Close()
			return nil, fmt.Errorf("opening index: %w", err)
		}
	}
	if err := ix.repair(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("opening index: %w", err), ix.Close())
	}
	return ix, nil
}

// A coldMarker is a file beside the index database that says a cold build
// is writing it without syncing (see BeginBulk). It is on disk before any
// unsynced page is, and removed only once the database is synced. Its
// builder holds an flock on it, so that another process can tell a build
// under way (locked) from one whose process died (not locked): after a
// crash, or a power cut that may have torn pages, such a file cannot be
// trusted.
type coldMarker struct {
	f    *os.File // locked
	path string
}

func coldMarkerPath(db string) string { return db + "-cold" }

// markCold creates the marker of a cold build of db, locked. It returns nil
// and no error when another process's build holds it, or where markers
// cannot be locked (see coldBuilds).
func markCold(db string) (*coldMarker, error) {
	if !coldBuilds {
		return nil, nil
	}
	path := coldMarkerPath(db)
	if f, err := os.Open(path); err == nil {
		held := errors.Is(lock(f), errLocked)
		f.Close()
		if held {
			return nil, nil
		}
	}
	// Locked before it is given its name, so that nobody can find the
	// marker unlocked while this build runs.
	f, err := os.CreateTemp(filepath.Dir(db), filepath.Base(path)+"-*")
	if err != nil {
		return nil, err
	}
	m := &coldMarker{f: f, path: path}
	err = lock(f)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		os.Remove(f.Name())
		f.Close()
		return nil, err
	}
	return m, nil
}

// release syncs the database db and its journal, then removes the marker
// and unlocks it. After an error the marker is still locked.
func (m *coldMarker) release(db *os.File) error {
	if err := syncFile(db); err != nil {
		return fmt.Errorf("syncing the index: %w", err)
	}
	// SQLite locks the database file, not its journal: closing a file of
	// the journal's own costs no lock.
	if err := syncPath(db.Name() + "-journal"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("syncing the index: %w", err)
	}
	if err := os.Remove(m.path); err != nil {
		return err
	}
	return m.f.Close()
}

// dropInterruptedBuild deletes the database db if a cold build of it left
// its marker behind and no process holds it any more.
func dropInterruptedBuild(db string) error {
	if !coldBuilds {
		return nil
	}
	path := coldMarkerPath(db)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	switch err := lock(f); {
	case errors.Is(err, errLocked):
		return nil // a build under way in another process
	case err != nil:
		return err
	}
	// Another process may have dealt with it, and begun a build of its own,
	// between the open and the lock.
	locked, err := f.Stat()
	if err != nil {
		return err
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(locked, named) {
		return nil
	}
	if err := removeDB(db); err != nil {
		return err
	}
	return os.Remove(path)
}

// Damaged reports whether err says an index database is damaged (SQLite
// found it malformed, or not a database at all). Its file can be removed
// (Remove) and the vault indexed again.
func Damaged(err error) bool {
	var sqlErr *sqlite.Error
	if !errors.As(err, &sqlErr) {
		return false
	}
	switch sqlErr.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// Remove deletes the index database at path, which must not be open, with
// its journal and the marker of a cold build.
func Remove(path string) error {
	if err := removeDB(path); err != nil {
		return err
	}
	if err := os.Remove(coldMarkerPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// syncFile syncs the index database through the file Open keeps for it; a
// variable so that tests can make it fail.
var syncFile = (*os.File).Sync

func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func syncDir(dir string) error { return syncPath(dir) }

// DropFrom removes the index's tables from db, the state database, where
// margin kept the index before it had a file of its own, and gives their
// space back. It reports whether there was anything to remove.
func DropFrom(ctx context.Context, db *sql.DB) (bool, error) {
	var found bool
	err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name IN ('sections_fts', 'notes_fts'))`).Scan(&found)
	if err != nil || !found {
		return false, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`DROP VIEW IF EXISTS entries`,
		`DROP TABLE IF EXISTS sections_fts`, `DROP TABLE IF EXISTS notes_fts`, `DROP TABLE IF EXISTS fields_fts`,
		`DROP TABLE IF EXISTS files`, `DROP TABLE IF EXISTS notes`, `DROP TABLE IF EXISTS sections`,
		`DROP TABLE IF EXISTS checklist_items`, `DROP TABLE IF EXISTS tags`, `DROP TABLE IF EXISTS aliases`,
		`DROP TABLE IF EXISTS links`, `DROP TABLE IF EXISTS index_state`,
		`DELETE FROM schema_migrations WHERE component = 'index'`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return false, fmt.Errorf("dropping the old index: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("dropping the old index: %w", err)
	}
	if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
		return true, fmt.Errorf("reclaiming the old index's space: %w", err)
	}
	return true, nil
}
