package index

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/vault/store"
)

func statCount(t *testing.T, ix *Index) int {
	t.Helper()
	stat, err := ix.Stat(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(stat)
}

// A cold build writes without syncing: while it runs, its marker is held
// and other processes leave the file alone; once its process is gone, the
// file is not trusted and the index starts again empty.
func TestOpenDropsAnInterruptedColdBuild(t *testing.T) {
	ix, dbPath := openIndex(t)
	b := beginBulk(t, ix)
	apply(t, ix, fixtureUpdates()...)
	if _, err := os.Stat(coldMarkerPath(dbPath)); err != nil {
		t.Fatalf("no marker during a cold build: %v", err)
	}
	if n := statCount(t, reopen(t, dbPath)); n != len(vault) {
		t.Fatalf("another process opening the index during a cold build sees %d files, want %d", n, len(vault))
	}
	// The builder dies, and its lock with it.
	b.marker.f.Close()
	if n := statCount(t, reopen(t, dbPath)); n != 0 {
		t.Errorf("after an interrupted cold build the index has %d files, want none", n)
	}
	if _, err := os.Stat(coldMarkerPath(dbPath)); !os.IsNotExist(err) {
		t.Errorf("marker of the interrupted build still there: %v", err)
	}
}

func TestFinishSyncsAndRemovesTheMarker(t *testing.T) {
	ctx := context.Background()
	ix, dbPath := openIndex(t)
	b := beginBulk(t, ix)
	apply(t, ix, fixtureUpdates()...)
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(coldMarkerPath(dbPath)); !os.IsNotExist(err) {
		t.Errorf("marker left after Finish: %v", err)
	}
	var sync int
	if err := ix.write(ctx, func(wc *writeConn, _ *sql.Tx) error {
		return wc.conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync)
	}); err != nil {
		t.Fatal(err)
	}
	if sync != 1 {
		t.Errorf("write connection's synchronous = %d after Finish, want 1 (NORMAL)", sync)
	}
	if n := statCount(t, reopen(t, dbPath)); n != len(vault) {
		t.Errorf("reopened index has %d files, want %d", n, len(vault))
	}
}

// When the cold build cannot sync the file, its marker stays held while
// the index is open, and the next Open after it rebuilds the index.
func TestFinishThatCannotSyncLeavesTheMarker(t *testing.T) {
	ctx := context.Background()
	ix, dbPath := openIndex(t)
	b := beginBulk(t, ix)
	sync := syncFile
	t.Cleanup(func() { syncFile = sync })
	syncFile = func(*os.File) error { return errors.New("input/output error") }
	apply(t, ix, fixtureUpdates()...)
	if err := b.Finish(ctx); err == nil {
		t.Fatal("Finish succeeded without syncing")
	}
	syncFile = sync
	if n := statCount(t, reopen(t, dbPath)); n != len(vault) {
		t.Errorf("opened beside the unsynced index: %d files, want %d", n, len(vault))
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if n := statCount(t, reopen(t, dbPath)); n != 0 {
		t.Errorf("opened after the unsynced index was closed: %d files, want none", n)
	}
}

// Two processes find the same empty index: one builds it in bulk, the
// other indexes the usual way, into the same file.
func TestBeginBulkLeavesAnotherProcesssBuildAlone(t *testing.T) {
	ix, dbPath := openIndex(t)
	beginBulk(t, ix)
	other := reopen(t, dbPath)
	if b, err := other.BeginBulk(context.Background()); b != nil || err != nil {
		t.Errorf("BeginBulk beside another process's cold build = %v, %v; want nil, nil", b, err)
	}
}

// cancelAfter is a context that ends once its Err has been asked n times,
// so that a test can end it in the middle of a batch.
type cancelAfter struct {
	context.Context
	n atomic.Int32
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestApplyStopsBetweenUpdatesWhenCancelled(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(2)
	err := ix.Apply(ctx, fixtureUpdates())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a context ended mid-batch = %v, want context.Canceled", err)
	}
	if n := statCount(t, ix); n != 0 {
		t.Errorf("%d files indexed by a cancelled batch, want none", n)
	}
}

// The index used to live in the state database; opening the vault moves
// it out.
func TestDropFromTheStateDatabase(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir()+"/state.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := store.Migrate(ctx, db, "index", schema); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db, "agents", []string{`CREATE TABLE agents (id INTEGER PRIMARY KEY)`}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		dropped, err := DropFrom(ctx, db)
		if err != nil || dropped != want {
			t.Fatalf("DropFrom #%d = %v, %v; want %v", i+1, dropped, err, want)
		}
	}
	var tables []string
	if err := collect(ctx, db, `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name`, nil, func(r *sql.Rows) error {
		var name string
		err := r.Scan(&name)
		tables = append(tables, name)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"agents", "schema_migrations"}; !slices.Equal(tables, want) {
		t.Errorf("tables after DropFrom = %q, want %q", tables, want)
	}
	// The index can be migrated again, into its own file.
	var steps int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE component = 'index'`).Scan(&steps); err != nil || steps != 0 {
		t.Errorf("index migration steps left: %d (%v)", steps, err)
	}
}
