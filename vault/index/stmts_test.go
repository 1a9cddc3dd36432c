package index

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestSearchStatementsCached: searches whose SQL differs (here by limit)
// from more goroutines than the cache holds statements still answer
// right, through a cache that starts over when full and never grows past
// its bound, and an index with statements cached closes cleanly.
func TestSearchStatementsCached(t *testing.T) {
	ix, _ := openIndex(t)
	const notes = 30
	var us []Update
	for i := range notes {
		us = append(us, fixture{path: fmt.Sprintf("Notes/n%02d.md", i), kind: note.KindNote,
			content: fmt.Sprintf("# Log %d\n\nbench press %d\n", i, i)}.update())
	}
	apply(t, ix, us...)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for limit := 1; limit <= maxCachedStmts+10; limit++ {
				r, err := ix.Find(ctx, Query{Text: "bench", Limit: limit + g})
				if err != nil {
					t.Error(err)
					return
				}
				if want := min(notes, limit+g); r.Total != notes || len(r.Hits) != want || r.Truncated != (want < notes) {
					t.Errorf("limit %d: %d hits of %d, truncated %v; want %d of %d", limit+g, len(r.Hits), r.Total, r.Truncated, want, notes)
					return
				}
			}
		})
	}
	wg.Wait()
	ix.stmts.mu.Lock()
	n := len(ix.stmts.m)
	ix.stmts.mu.Unlock()
	if n == 0 || n > maxCachedStmts {
		t.Errorf("%d statements cached, want 1 to %d", n, maxCachedStmts)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}
