package wire_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

// BenchmarkSearchResult weighs the conversion every vault/search and
// search_notes now makes against the encoding that follows it, in the
// same run: 20 hits, search_notes' default.
func BenchmarkSearchResult(b *testing.B) {
	r := retrieve.Result{Result: index.Result{Total: 120, Truncated: true}, Mode: retrieve.ModeHybrid}
	for i := range 20 {
		r.Hits = append(r.Hits, index.Hit{Path: fmt.Sprintf("Daily/2026-11-%02d.md", i+1), Heading: "18:00", Line: 12, SectionLine: 10,
			Snippet: "went for a **run** along the river, 5 km in 28 minutes", Date: fmt.Sprintf("2026-11-%02d", i+1), Rank: 3.5})
	}
	b.Run("convert", func(b *testing.B) {
		for b.Loop() {
			_ = wire.SearchResult(r)
		}
	})
	b.Run("encode", func(b *testing.B) {
		w := wire.SearchResult(r)
		for b.Loop() {
			if _, err := json.Marshal(w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
