package index

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// bulkQueries cover every column of notes_fts and its filters.
var bulkQueries = []Query{
	{Text: "kubernetes"}, {Text: "deploy latency"}, {Text: "release team", Mode: ModePhrase},
	{Text: "cafe"}, {Text: "naive"}, {Text: "someday"}, {Text: "launch"}, {Text: "kube*"},
	{Text: "deploy", Tags: []string{"ops"}}, {Text: "deploy", Fields: TaskFilter{Status: []string{"open"}}},
}

func fixtureUpdates() []Update {
	us := make([]Update, len(vault))
	for i, f := range vault {
		us[i] = f.update()
	}
	return us
}

// checkLikeApply fails unless ix is sound and answers bulkQueries as an
// index built by Apply alone does.
func checkLikeApply(t *testing.T, ix *Index) {
	t.Helper()
	ctx := context.Background()
	if err := ix.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	want := loadVault(t)
	if got, w := schemaOf(t, ix), schemaOf(t, want); !reflect.DeepEqual(got, w) {
		t.Errorf("schema = %q, want %q", got, w)
	}
	var markers int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM index_state WHERE key <> 'fts_unmerged'`).Scan(&markers); err != nil || markers != 0 {
		t.Errorf("%d markers left in index_state (%v)", markers, err)
	}
	for _, q := range bulkQueries {
		got, err := ix.Search(ctx, q)
		if err != nil {
			t.Fatalf("Search %+v: %v", q, err)
		}
		w, err := want.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("Search %+v = %v, want %v", q, hitKeys(got), hitKeys(w))
		}
	}
}

// schemaOf lists the index's tables and indexes as SQL.
func schemaOf(t *testing.T, ix *Index) []string {
	t.Helper()
	var out []string
	err := collect(context.Background(), ix.db, `SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name`, nil,
		func(r *sql.Rows) error {
			var q string
			err := r.Scan(&q)
			out = append(out, q)
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func beginBulk(t *testing.T, ix *Index) *Bulk {
	t.Helper()
	b, err := ix.BeginBulk(context.Background())
	if err != nil || b == nil {
		t.Fatalf("BeginBulk = %v, %v", b, err)
	}
	return b
}

func TestBulk(t *testing.T) {
	ctx := context.Background()
	ix, dbPath := openIndex(t)
	b := beginBulk(t, ix)
	us := fixtureUpdates()
	apply(t, ix, us[:4]...)
	apply(t, ix, us[4:]...)
	if hits, err := ix.Search(ctx, Query{Text: "kubernetes"}); err != nil || len(hits) != 0 {
		t.Errorf("search during a cold build = %v, %v; want nothing yet", hitKeys(hits), err)
	}
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range scratchTables {
		if _, err := os.Stat(b.scratchPath(st)); !os.IsNotExist(err) {
			t.Errorf("scratch database left behind: %v", err)
		}
	}
	checkLikeApply(t, ix)
	// A second Bulk on a full index is declined.
	if b, err := ix.BeginBulk(ctx); b != nil || err != nil {
		t.Errorf("BeginBulk on a full index = %v, %v; want nil, nil", b, err)
	}
	// Nothing is left to repair on reopening.
	checkLikeApply(t, reopen(t, dbPath))
}

func TestBulkSpoiled(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	b := beginBulk(t, ix)
	us := fixtureUpdates()
	// A note indexed twice during the build: its first sections are not in
	// the scratch table's reach any more, so Finish must rebuild.
	apply(t, ix, us...)
	apply(t, ix, us[0])
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	checkLikeApply(t, ix)
}

func TestBulkOtherWriter(t *testing.T) {
	ctx := context.Background()
	ix, dbPath := openIndex(t)
	b := beginBulk(t, ix)
	us := fixtureUpdates()
	apply(t, ix, us[1:]...)
	// Another process indexes a note the usual way meanwhile.
	apply(t, reopen(t, dbPath), us[0])
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	checkLikeApply(t, ix)
}

func TestBulkCrash(t *testing.T) {
	ix, dbPath := openIndex(t)
	beginBulk(t, ix)
	apply(t, ix, fixtureUpdates()...)
	// The process dies before Finish: the next Open finds sections that
	// notes_fts lacks and rebuilds it.
	checkLikeApply(t, reopen(t, dbPath))
}

// TestMergeColdOnceAfterABulk: the search table a cold build of
// mergeAfter notes copied in is merged by the first MergeCold, in whichever
// process, and by no later one; a smaller build is left as it is.
func TestMergeColdOnceAfterABulk(t *testing.T) {
	ctx := context.Background()
	for _, notes := range []int{mergeAfter - 1, mergeAfter} {
		ix, dbPath := openIndex(t)
		if merged, err := ix.MergeCold(ctx); merged || err != nil {
			t.Fatalf("MergeCold of an empty index = %v, %v; want false", merged, err)
		}
		b := beginBulk(t, ix)
		var us []Update
		for i := range notes {
			us = append(us, fixture{path: fmt.Sprintf("Notes/n%04d.md", i), kind: note.KindNote, content: fmt.Sprintf("# N%d\n\nword%d text\n", i, i)}.update())
		}
		apply(t, ix, us...)
		if err := b.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		ix.Close()
		ix = reopen(t, dbPath) // as margin serve after margin status
		for i, want := range []bool{notes >= mergeAfter, false} {
			if merged, err := ix.MergeCold(ctx); merged != want || err != nil {
				t.Errorf("%d notes: MergeCold #%d = %v, %v; want %v", notes, i+1, merged, err, want)
			}
		}
		if got := searchPaths(t, ix, Query{Text: "word7"}); !slices.Equal(got, []string{"Notes/n0007.md"}) {
			t.Errorf("%d notes: search after MergeCold = %v", notes, got)
		}
	}
}

// TestBulkFoldsEveryNote: notes reach the scratch build foldNotes at a
// time, in batches that are not multiples of it; every one is found.
func TestBulkFoldsEveryNote(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	b := beginBulk(t, ix)
	n := 2*foldNotes + 7
	var us []Update
	for i := range n {
		us = append(us, fixture{path: fmt.Sprintf("Notes/n%03d.md", i), kind: note.KindNote,
			content: fmt.Sprintf("# N%d\n\nshared word and token%d\n", i, i)}.update())
	}
	apply(t, ix, us[:foldNotes+3]...)
	apply(t, ix, us[foldNotes+3:]...)
	if err := b.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := ix.Find(ctx, Query{Text: "shared", Limit: 1}); err != nil || res.Total != n {
		t.Errorf("shared: total %d (%v), want %d", res.Total, err, n)
	}
	for _, i := range []int{0, foldNotes - 1, foldNotes, foldNotes + 3, n - 1} {
		if got := hitKeys(search(t, ix, Query{Text: fmt.Sprintf("token%d", i)})); len(got) != 1 {
			t.Errorf("token%d = %v, want its note", i, got)
		}
	}
	if err := ix.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestFoldDrainsAfterBuildStops: once the scratch build has given up,
// fold takes every batch Apply hands it without waiting for build.
func TestFoldDrainsAfterBuildStops(t *testing.T) {
	b := &Bulk{rows: make(chan []ftsRow)}
	folded, quit := make(chan []searchRow, 1), make(chan struct{})
	done := make(chan struct{})
	go func() {
		b.fold(folded, quit)
		close(done)
	}()
	close(quit)
	rows := make([]ftsRow, 3*foldNotes)
	for i := range rows {
		rows[i] = ftsRow{id: int64(i + 1), body: "some text"}
	}
	go func() {
		for range 4 {
			b.rows <- rows // blocks for good unless fold drains
		}
		close(b.rows)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("fold stopped taking batches once build had stopped")
	}
}
