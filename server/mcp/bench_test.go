package mcp_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/agents/ledger"
	mcpserver "github.com/margin-md/margin/server/mcp"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault/index"
)

// BenchmarkSearchNotes compares search_notes over the SDK's in-memory
// transport with the index's Find on the vault in MARGIN_BENCH_VAULT (a
// generated one: go run ./cmd/vaultgen); it changes no note, and keeps its
// index in the vault's state dir as margin does.
func BenchmarkSearchNotes(b *testing.B) {
	dir := os.Getenv("MARGIN_BENCH_VAULT")
	if dir == "" {
		b.Skip("MARGIN_BENCH_VAULT is not set")
	}
	ctx := context.Background()
	o := workspace.Options{Parts: workspace.Changes | workspace.Query | workspace.Reviews, Scan: true, Ledger: &ledger.Slot{}}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	s, err := mcpserver.New(ctx, ws, mcpserver.Options{Refresh: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	go s.Run(ctx, st)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	queries := []string{"bench", "sleep", "deadlift", "invoice", "meeting notes", "tired", "protein", "release", "physio", "chezmoi"}
	b.Run("find", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := ws.Vault.Index().Find(ctx, index.Query{Text: queries[i%len(queries)]}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("search_notes", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": queries[i%len(queries)]}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	// The two interleaved, as make bench does over stdio: the medians'
	// difference is what the protocol adds to the search, with the
	// machine's load the same for both.
	b.Run("overhead", func(b *testing.B) {
		var find, call []time.Duration
		for i := 0; b.Loop(); i++ {
			q := queries[i%len(queries)]
			start := time.Now()
			if _, err := ws.Vault.Index().Find(ctx, index.Query{Text: q, Limit: 20}); err != nil {
				b.Fatal(err)
			}
			find = append(find, time.Since(start))
			start = time.Now()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": q, "limit": 20}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			call = append(call, time.Since(start))
		}
		b.ReportMetric(float64(median(call)-median(find)), "overhead-ns")
		b.ReportMetric(float64(median(find)), "find-p50-ns")
	})
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
