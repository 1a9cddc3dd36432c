// Package store opens margin's embedded SQLite databases (the state database
// and the note index) and applies the schema migrations each component
// registers.
//
// It owns the connection settings every margin process must agree on (WAL,
// or a rollback journal for the rebuildable index; busy timeout, foreign
// keys, synchronous=NORMAL, immediate write transactions) and the
// schema_migrations bookkeeping table. It must not
// define any component's tables: the index, agents, change sets and ledger
// bring their own steps and call Migrate with them.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// busyTimeout is how long a connection waits for another margin process (or
// another connection of this one) to release the write lock before giving up.
// Index batches and wake bookkeeping commit within a fraction of a second, so
// ten seconds only runs out when something is truly stuck.
const busyTimeout = 10 * time.Second

// Open opens (creating if needed) the state database at path and its parent
// directory. Every pooled connection gets the same pragmas, because SQLite
// settings such as foreign_keys and busy_timeout are per connection. In a
// vault, path is in the folder OpenDir checked, which SQLite cannot do.
func Open(ctx context.Context, path string) (*sql.DB, error) {
	return open(ctx, path, "WAL", 0)
}

// OpenRebuildable opens (creating if needed) a database that margin can
// rebuild from the vault at any time: the note index. It differs from Open
// in its journal and page size. A first index appends a few tens of
// megabytes to a new file; a rollback journal records nothing for pages
// that did not exist before, where WAL writes every page twice (to the
// log, then back into the database), which cost a tenth of the time of a
// cold index of 10,000 notes. The price is that readers and a committing
// writer wait for each other (busy_timeout), which for the index's short
// transactions is milliseconds. TRUNCATE rather than DELETE keeps the
// journal file, saving a file creation and deletion per transaction.
func OpenRebuildable(ctx context.Context, path string) (*sql.DB, error) {
	return open(ctx, path, "TRUNCATE", RebuildablePageSize)
}

// OpenReaderNoWait opens a read-only pool on the database at path, made
// by Open or OpenRebuildable, whose connections fail with SQLITE_BUSY at
// once rather than wait for a lock: for a reader beside another that
// already holds one, which must never wait for a writer that in turn
// waits for that other reader.
func OpenReaderNoWait(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "0")
	q.Add("_pragma", pageCache)
	db, err := sql.Open("sqlite", FileURI(abs, q))
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	return db, nil
}

// CloseRebuildable closes a database OpenRebuildable opened and removes
// its journal file, which TRUNCATE leaves empty between transactions and
// a person would find beside the index after every command. Switching the
// journal to DELETE makes SQLite delete the file under the RESERVED lock,
// so never while another process writes; when it cannot, the empty file
// stays, which is harmless, so that is not an error.
func CloseRebuildable(db *sql.DB) error {
	db.Exec(`PRAGMA journal_mode = DELETE`)
	return db.Close()
}

// RebuildablePageSize is the page size of a database OpenRebuildable
// creates (one it opens keeps its own). Twice SQLite's default halves the
// pages, and the system calls, of a cold index, which is 3% faster with
// them; the search table's leaves (4 KB) fit two to a page.
const RebuildablePageSize = 8192

// pageCache is the page cache of each pooled connection: 1 MiB where
// SQLite's default is 2. A serve at 100k notes holds up to nine
// connections to its three databases at once, and their caches live in
// the driver's C heap, outside Go's and not given back once grown: at
// the serve's peak it held 25-27 MB with 1 MiB, 31-36 on main in the
// same runs, and keyword searches of 10k notes were no slower (at
// 256 KiB their p50 was 8% slower). See BENCHMARKS.md.
const pageCache = "cache_size(-1024)"

// BulkCacheSize is SQLite's default page cache (2 MiB), for the one
// connection that copies a cold build into the index, which looked
// slower with less.
const BulkCacheSize = `PRAGMA cache_size = -2000`

// open opens path with journal; pageSize, unless 0, is the page size of a
// database it creates.
func open(ctx context.Context, path, journal string, pageSize int) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, journal, pageSize))
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	return db, nil
}

// dsn is the file: URI of the database at abs with margin's connection
// settings.
func dsn(abs, journal string, pageSize int) string {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	q.Set("_journal_mode", journal)
	q.Set("_foreign_keys", "on")
	q.Set("_synchronous", "NORMAL")
	// A deferred transaction that reads and then writes cannot wait for the
	// lock in WAL mode: it fails with SQLITE_BUSY at once when another process
	// committed meanwhile. Taking the write lock at BEGIN lets busy_timeout
	// do its job. Transactions begun with TxOptions{ReadOnly: true} still
	// BEGIN DEFERRED, so readers never take the write lock.
	q.Set("_txlock", "immediate")
	// Keep sorter and temp b-trees of large index batches off the disk.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Add("_pragma", pageCache)
	if pageSize != 0 {
		q.Add("_pragma", fmt.Sprintf("page_size(%d)", pageSize))
	}
	return FileURI(abs, q)
}

// FileURI is the file: URI of the database at abs with query q (the
// driver's _pragma and other settings), so that characters such as '?',
// '#' and '%' in a vault path are escaped instead of being read as URI
// syntax.
func FileURI(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// schemaTable records which migration steps of which component have run.
const schemaTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	component  TEXT    NOT NULL,
	step       INTEGER NOT NULL,
	applied_at TEXT    NOT NULL,
	PRIMARY KEY (component, step)
) WITHOUT ROWID`

// Migrate brings component's tables up to date by running each step of steps
// that has not run yet, in order, each in its own transaction together with
// the row that records it. Step numbers are 1-based positions in steps, so a
// component only ever appends steps; it never edits or reorders released ones.
// A database that has more steps of component than steps holds was written by
// a newer margin, and Migrate refuses it rather than guess.
func Migrate(ctx context.Context, db *sql.DB, component string, steps []string) error {
	if component == "" {
		return errors.New("migrating: empty component name")
	}
	if _, err := db.ExecContext(ctx, schemaTable); err != nil {
		return fmt.Errorf("migrating %s: creating schema table: %w", component, err)
	}
	done, err := appliedSteps(ctx, db, component)
	if err != nil {
		return fmt.Errorf("migrating %s: %w", component, err)
	}
	if done > len(steps) {
		return fmt.Errorf("migrating %s: database has step %d but this margin knows only %d steps; it was written by a newer margin", component, done, len(steps))
	}
	for i := done; i < len(steps); i++ {
		if err := migrateStep(ctx, db, component, i+1, steps[i]); err != nil {
			return fmt.Errorf("migrating %s: %w", component, err)
		}
	}
	return nil
}

// rowQuerier is what appliedSteps needs from a *sql.DB or *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func appliedSteps(ctx context.Context, q rowQuerier, component string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(step), 0) FROM schema_migrations WHERE component = ?`, component).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading applied steps: %w", err)
	}
	return n, nil
}

// migrateStep runs one step unless another process ran it while this one was
// waiting for the write lock.
func migrateStep(ctx context.Context, db *sql.DB, component string, step int, sqlText string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	defer tx.Rollback()
	done, err := appliedSteps(ctx, tx, component)
	if err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	if done >= step {
		return nil
	}
	if _, err := tx.ExecContext(ctx, sqlText); err != nil {
		return fmt.Errorf("step %d: %w", step, err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (component, step, applied_at) VALUES (?, ?, ?)`,
		component, step, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return fmt.Errorf("step %d: recording: %w", step, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("step %d: committing: %w", step, err)
	}
	return nil
}

// Check reads all of db and reports the problems PRAGMA quick_check finds,
// if any.
func Check(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return fmt.Errorf("checking: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var msg string
		if err := rows.Scan(&msg); err != nil {
			return fmt.Errorf("checking: %w", err)
		}
		if msg != "ok" {
			problems = append(problems, msg)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("checking: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("damaged: %s", strings.Join(problems, "; "))
	}
	return nil
}
