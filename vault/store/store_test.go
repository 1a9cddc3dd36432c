package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTemp(t *testing.T, name string) (*sql.DB, string) {
	t.Helper()
	return openTempWith(t, Open, name)
}

func openTempWith(t *testing.T, open func(context.Context, string) (*sql.DB, error), name string) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nested", "dir", name)
	db, err := open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func TestOpenPragmas(t *testing.T) {
	t.Run("state", func(t *testing.T) { testPragmas(t, Open, "wal", "4096") })
	t.Run("rebuildable", func(t *testing.T) { testPragmas(t, OpenRebuildable, "truncate", fmt.Sprint(RebuildablePageSize)) })
}

func testPragmas(t *testing.T, open func(context.Context, string) (*sql.DB, error), journal, pageSize string) {
	// A vault path may hold characters that are URI syntax.
	db, _ := openTempWith(t, open, "state ?#%.db")
	ctx := context.Background()
	tests := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", journal},
		{"page_size", pageSize},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
		{"busy_timeout", fmt.Sprint(busyTimeout.Milliseconds())},
		{"temp_store", "2"},     // MEMORY
		{"cache_size", "-1024"}, // KiB: pageCache
	}
	// Pin a second pooled connection so the check covers more than the first.
	conns := make([]*sql.Conn, 2)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	for _, tt := range tests {
		t.Run(tt.pragma, func(t *testing.T) {
			for i, c := range conns {
				var got string
				if err := c.QueryRowContext(ctx, "PRAGMA "+tt.pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if !strings.EqualFold(got, tt.want) {
					t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, tt.pragma, got, tt.want)
				}
			}
		})
	}
}

func TestOpenFTS5(t *testing.T) {
	db, _ := openTemp(t, "fts.db")
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')`); err != nil {
		t.Fatalf("FTS5 unavailable: %v", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO t(body) VALUES ('Café au lait with the release team')`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`cafe`, `"release team"`, `rel*`} {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE t MATCH ?`, q).Scan(&n); err != nil {
			t.Fatalf("MATCH %s: %v", q, err)
		}
		if n != 1 {
			t.Errorf("MATCH %s: %d rows, want 1", q, n)
		}
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	v1 := []string{
		`CREATE TABLE a (id INTEGER PRIMARY KEY, x TEXT)`,
		// Several statements in one step.
		`CREATE TABLE b (id INTEGER PRIMARY KEY); CREATE INDEX b_id ON b(id)`,
	}
	v2 := append(append([]string{}, v1...), `ALTER TABLE a ADD COLUMN y TEXT`)
	tests := []struct {
		name    string
		runs    [][]string // successive Migrate calls for component "c"
		wantErr string     // from the last run
		want    int        // steps recorded after all runs
	}{
		{"fresh", [][]string{v1}, "", 2},
		{"idempotent", [][]string{v1, v1}, "", 2},
		{"appended step", [][]string{v1, v2}, "", 3},
		{"newer database", [][]string{v2, v1}, "newer margin", 3},
		{"failing step rolls back", [][]string{{`CREATE TABLE a (id INTEGER)`, `CREATE TABLE nope (`}}, "step 2", 1},
		{"no steps", [][]string{nil}, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openTemp(t, "m.db")
			var err error
			for i, steps := range tt.runs {
				err = Migrate(ctx, db, "c", steps)
				if i < len(tt.runs)-1 && err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
			}
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Migrate error = %v, want containing %q", err, tt.wantErr)
			}
			got, err := appliedSteps(ctx, db, "c")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("applied steps = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMigrateComponentsIndependent(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, "m.db")
	if err := Migrate(ctx, db, "index", []string{`CREATE TABLE i (x)`}); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, db, "agents", []string{`CREATE TABLE g1 (x)`, `CREATE TABLE g2 (x)`}); err != nil {
		t.Fatal(err)
	}
	for comp, want := range map[string]int{"index": 1, "agents": 2, "ledger": 0} {
		got, err := appliedSteps(ctx, db, comp)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %d steps, want %d", comp, got, want)
		}
	}
	if err := Migrate(ctx, db, "", nil); err == nil {
		t.Error("empty component name accepted")
	}
}

// TestTwoHandlesConcurrent stands in for two margin processes sharing a vault:
// two independent pools on one file, both migrating and writing at once.
func TestTwoHandlesConcurrent(t *testing.T) {
	ctx := context.Background()
	dbA, path := openTemp(t, "shared.db")
	dbB, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer dbB.Close()

	steps := []string{`CREATE TABLE n (who TEXT, i INTEGER)`}
	const writers, rows = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for _, db := range []*sql.DB{dbA, dbB} {
		for w := range writers {
			wg.Go(func() {
				if err := Migrate(ctx, db, "race", steps); err != nil {
					errs <- err
					return
				}
				for i := range rows {
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						errs <- err
						return
					}
					var n int
					// Read then write in one transaction: the pattern that
					// fails with SQLITE_BUSY under deferred transactions.
					if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n); err != nil {
						tx.Rollback()
						errs <- err
						return
					}
					if _, err := tx.ExecContext(ctx, `INSERT INTO n VALUES (?, ?)`, fmt.Sprint(w), i); err != nil {
						tx.Rollback()
						errs <- err
						return
					}
					if err := tx.Commit(); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent writer: %v", err)
	}
	var n int
	if err := dbB.QueryRowContext(ctx, `SELECT count(*) FROM n`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := 2 * writers * rows; n != want {
		t.Errorf("rows = %d, want %d", n, want)
	}
}

// TestReadOnlyTxDoesNotWaitForWriters: a read transaction must not queue
// behind a writer holding the lock, or every search would stall during an
// index batch.
func TestReadOnlyTxDoesNotWaitForWriters(t *testing.T) {
	ctx := context.Background()
	dbA, path := openTemp(t, "ro.db")
	if err := Migrate(ctx, dbA, "c", []string{`CREATE TABLE k (v TEXT); INSERT INTO k VALUES ('before')`}); err != nil {
		t.Fatal(err)
	}
	dbB, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer dbB.Close()
	w, err := dbA.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Rollback()
	if _, err := w.ExecContext(ctx, `UPDATE k SET v = 'during'`); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r, err := dbB.BeginTx(short, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read transaction while a write is open: %v", err)
	}
	defer r.Rollback()
	var v string
	if err := r.QueryRowContext(short, `SELECT v FROM k`).Scan(&v); err != nil || v != "before" {
		t.Errorf("read during write = %q, %v; want the committed %q", v, err, "before")
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, "r.db")
	if err := Migrate(ctx, db, "c", []string{`CREATE TABLE k (v TEXT)`}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO k VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	var v string
	if err := db2.QueryRowContext(ctx, `SELECT v FROM k`).Scan(&v); err != nil || v != "kept" {
		t.Fatalf("after reopen: %q, %v", v, err)
	}
}

func TestReaderNoWaitPageCache(t *testing.T) {
	_, path := openTempWith(t, OpenRebuildable, "index.db")
	db, err := OpenReaderNoWait(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var got string
	if err := db.QueryRow("PRAGMA cache_size").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "-1024" {
		t.Errorf("the reader's PRAGMA cache_size = %s, want -1024 (pageCache)", got)
	}
}
