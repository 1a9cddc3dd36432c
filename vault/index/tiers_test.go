package index

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// TestRankTiers: a note that holds the query in a heading ranks above
// every note that holds it only in its text, even one bm25 alone scores
// higher; within a tier, bm25 orders; every match is counted whatever the
// page, with or without a glob checked in Go, and with a long note in the
// index (several search rows per note).
func TestRankTiers(t *testing.T) {
	filler := strings.Repeat("a long paragraph about cameras lenses and light ", 60)
	fixtures := []fixture{
		{path: "Notes/Gear.md", kind: note.KindNote, content: "# Gear\n\n" + filler + "\n\n## Tripod\n\n" + filler + " and a tripod.\n", tags: []string{"photo"}},
		{path: "Notes/trip.md", kind: note.KindNote, content: "# Trip\n\ntripod tripod tripod tripod tripod\n"},
	}
	for i := range 4 {
		fixtures = append(fixtures, fixture{path: fmt.Sprintf("Notes/b%d.md", i), kind: note.KindNote,
			content: fmt.Sprintf("# B%d\n\n%s tripod\n", i, strings.Repeat("words ", 10*(i+1)))})
	}
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			ix, _ := openIndex(t)
			var us []Update
			for _, f := range fixtures {
				us = append(us, f.update())
			}
			if long {
				us = append(us, longNote("Notes/Long.md", 2*ftsChunk, "").update())
			}
			apply(t, ix, us...)
			ctx := context.Background()

			// bm25 alone puts the short note that repeats the word first:
			// the tier is what puts Gear first.
			var best string
			if err := ix.db.QueryRowContext(ctx, `SELECT f.path FROM notes_fts t JOIN files f ON f.id = t.rowid & `+chunkMaskSQL+`
				WHERE notes_fts MATCH 'tripod' ORDER BY bm25(notes_fts, `+rankWeights+`) LIMIT 1`).Scan(&best); err != nil {
				t.Fatal(err)
			}
			if best != "Notes/trip.md" {
				t.Fatalf("bm25's best is %s, want Notes/trip.md for this test to mean something", best)
			}

			all := []string{"Notes/Gear.md", "Notes/trip.md", "Notes/b0.md", "Notes/b1.md", "Notes/b2.md", "Notes/b3.md"}
			for _, c := range []struct {
				q    Query
				want []string
			}{
				{Query{Text: "tripod", Limit: 10}, all},
				{Query{Text: "tripod", Limit: 1}, all[:1]},
				{Query{Text: "tripod", Limit: 2}, all[:2]},
				{Query{Text: "tripod", Limit: 3}, all[:3]},
				{Query{Text: "tripod", Limit: 10, Glob: "Notes/*.md"}, all},
				{Query{Text: "tripod", Limit: 2, Glob: "Notes/*.md"}, all[:2]},
				{Query{Text: "TRIPOD lenses", Mode: ModeAny, Limit: 10}, all}, // "lenses" only in Gear's text
				// A filter with the words: the first tier and the count
				// keep only the tagged note.
				{Query{Text: "tripod", Tags: []string{"photo"}, Limit: 10}, all[:1]},
			} {
				r, err := ix.Find(ctx, c.q)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range r.Hits {
					got = append(got, h.Path)
				}
				total := len(all)
				if len(c.q.Tags) > 0 {
					total = len(c.want)
				}
				if !slices.Equal(got, c.want) || r.Total != total || r.Truncated != (len(c.want) < total) {
					t.Errorf("%+v: %v, total %d, truncated %v; want %v, total %d", c.q, got, r.Total, r.Truncated, c.want, total)
				}
			}
		})
	}
}

// TestSecondTierRanksEveryMatch: a word that a few notes hold in a heading
// and 1,300 in their text fills the rest of the page with the best of
// those 1,300 by bm25, as one query over all of them orders them, and
// counts them all.
func TestSecondTierRanksEveryMatch(t *testing.T) {
	ix, _ := openIndex(t)
	var us []Update
	const notes = 1300
	for i := range notes {
		// The word's count and the note's length vary, so that bm25
		// orders them in no relation to their ids.
		body := strings.Repeat("tired ", 1+i*7%5) + strings.Repeat("filler words here ", i*13%17)
		us = append(us, fixture{path: fmt.Sprintf("Notes/n%04d.md", i), kind: note.KindNote, content: "# N\n\n" + body + "\n"}.update())
	}
	for i := range 4 {
		us = append(us, fixture{path: fmt.Sprintf("Notes/h%d.md", i), kind: note.KindNote, content: "# N\n\n## Tired\n\nslept badly\n"}.update())
	}
	apply(t, ix, us...)
	ctx := context.Background()
	// The second tier as one query: every body-only match by bm25, then id.
	var want []string
	err := collect(ctx, ix.db, `SELECT f.path FROM notes_fts t JOIN files f ON f.id = t.rowid
		WHERE notes_fts MATCH 'tired' AND t.rowid NOT IN (SELECT rowid FROM notes_fts WHERE notes_fts MATCH '{title path headings props} : tired')
		ORDER BY bm25(notes_fts, `+rankWeights+`), t.rowid`, nil, func(r *sql.Rows) error {
		var p string
		err := r.Scan(&p)
		want = append(want, p)
		return err
	})
	if err != nil || len(want) != notes {
		t.Fatalf("reference ranking: %d notes, %v", len(want), err)
	}
	check := func(t *testing.T) {
		for _, limit := range []int{5, 20, 200} {
			r, err := ix.Find(ctx, Query{Text: "tired", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range r.Hits[4:] {
				got = append(got, h.Path)
			}
			if r.Total != notes+4 || !r.Truncated || !slices.Equal(got, want[:limit-4]) {
				t.Errorf("limit %d: total %d, second tier %v; want total %d, %v", limit, r.Total, got, notes+4, want[:limit-4])
			}
		}
	}
	// Over rankInHalves matches, ranked in two halves, one of them in a
	// transaction beside the search's: the only use of the ranker pool.
	t.Run("halves", func(t *testing.T) {
		check(t)
		if ix.ranker.Stats().OpenConnections == 0 {
			t.Error("no half was ranked beside the search")
		}
	})
	// When that transaction cannot begin, the search ranks both itself.
	t.Run("one connection", func(t *testing.T) {
		ranker := ix.ranker
		defer func() { ix.ranker = ranker }()
		var err error
		if ix.ranker, err = store.OpenReaderNoWait(filepath.Join(t.TempDir(), "missing", "index.db")); err != nil {
			t.Fatal(err)
		}
		defer ix.ranker.Close()
		check(t)
	})
}

// TestRankingBesideNeverWaits: the transaction beside a search fails at
// once, rather than wait, when a writer is waiting for the search's own
// read lock to commit: waiting, each would wait for the other until the
// busy timeout ran out.
func TestRankingBesideNeverWaits(t *testing.T) {
	ix, dbPath := openIndex(t)
	apply(t, ix, fixture{path: "Notes/a.md", kind: note.KindNote, content: "# A\n\ntired\n"}.update())
	ctx := context.Background()
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&n); err != nil { // takes the read lock
		t.Fatal(err)
	}
	written := make(chan error, 1)
	go func() {
		written <- ix.Apply(ctx, []Update{fixture{path: "Notes/b.md", kind: note.KindNote, content: "# B\n\ntired\n"}.update()})
	}()
	// Until the writer holds the pending lock, which turns new readers away.
	probe, err := store.OpenReaderNoWait(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	for deadline := time.Now().Add(5 * time.Second); probe.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&n) == nil; {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited for the reader")
		}
		time.Sleep(time.Millisecond)
	}
	rt := ix.reading(tx)
	start := time.Now()
	err = rt.beside(ctx, func(b readTx) error { return b.QueryRowContext(ctx, `SELECT count(*) FROM files`).Scan(&n) })
	if err == nil {
		t.Error("read beside a writer that holds the pending lock")
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the transaction beside waited %v for the lock", waited)
	}
	tx.Rollback()
	if err := <-written; err != nil {
		t.Fatalf("the writer failed once the reader was done: %v", err)
	}
}

// TestFirstTierFollowsTheNote: the fields a search's first tier looks in
// (fields_fts) are written, replaced and removed with the note, and Check
// finds a note without them.
func TestFirstTierFollowsTheNote(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := context.Background()
	paths := func(q string) []string {
		t.Helper()
		r, err := ix.Find(ctx, Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range r.Hits {
			got = append(got, h.Path)
		}
		if err := ix.Check(ctx); err != nil {
			t.Fatalf("after searching %q: %v", q, err)
		}
		return got
	}
	// Other is longer and says "heron" three times: bm25 alone ranks it
	// first, only the title puts Birds there.
	other := fixture{path: "Notes/Other.md", kind: note.KindNote, content: "# Other\n\nheron heron heron and egret\n"}
	apply(t, ix, fixture{path: "Notes/Birds.md", kind: note.KindNote, content: "# Heron\n\nan egret by the water\n"}.update(), other.update())
	if got := paths("heron"); !slices.Equal(got, []string{"Notes/Birds.md", "Notes/Other.md"}) {
		t.Errorf("titled Heron: %v", got)
	}
	// Retitled: the old title no longer puts it first, the new one does.
	apply(t, ix, fixture{path: "Notes/Birds.md", kind: note.KindNote, content: "# Egret\n\na heron by the water\n"}.update())
	if got := paths("heron"); !slices.Equal(got, []string{"Notes/Other.md", "Notes/Birds.md"}) {
		t.Errorf("retitled Egret, heron: %v", got)
	}
	if got := paths("egret"); !slices.Equal(got, []string{"Notes/Birds.md", "Notes/Other.md"}) {
		t.Errorf("retitled Egret, egret: %v", got)
	}
	apply(t, ix, Update{Path: "Notes/Birds.md", Remove: true})
	if got := paths("egret"); !slices.Equal(got, []string{"Notes/Other.md"}) {
		t.Errorf("removed: %v", got)
	}
	if _, err := ix.db.ExecContext(ctx, `DELETE FROM fields_fts WHERE rowid = (SELECT MIN(file_id) FROM notes)`); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx); err == nil {
		t.Error("Check missed a note without its fields row")
	}
}
