package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestRankTiers: a note that holds the query in a heading ranks above
// every note that holds it only in its text, even one bm25 alone scores
// higher; within a tier, bm25 orders; every match is counted whatever the
// page, with or without a glob checked in Go, and with a long note in the
// index (several search rows per note).
func TestRankTiers(t *testing.T) {
	filler := strings.Repeat("a long paragraph about cameras lenses and light ", 60)
	fixtures := []fixture{
		{path: "Notes/Gear.md", kind: note.KindNote, content: "# Gear\n\n" + filler + "\n\n## Tripod\n\n" + filler + " and a tripod.\n"},
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
			} {
				r, err := ix.Find(ctx, c.q)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range r.Hits {
					got = append(got, h.Path)
				}
				if !slices.Equal(got, c.want) || r.Total != len(all) || r.Truncated != (len(c.want) < len(all)) {
					t.Errorf("%+v: %v, total %d, truncated %v; want %v, total %d", c.q, got, r.Total, r.Truncated, c.want, len(all))
				}
			}
		})
	}
}
