package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

// mcpRoundTrip times search_notes over stdio against `margin mcp`, called
// by the official Go SDK's client as an AI application calls it: the
// request written, the tool run, its result with structured content
// decoded and checked against the tool's output schema.
func (b *bench) mcpRoundTrip(dir string, label func(string) string) error {
	ctx := context.Background()
	cmd := exec.Command(b.bin, "mcp", "--vault", dir)
	cmd.Env = append(cmd.Environ(), "MARGIN_LOG_LEVEL=warn")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "marginbench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	call := func(q string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_notes", Arguments: map[string]any{"query": q, "limit": 20}})
		if err == nil && res.IsError {
			err = fmt.Errorf("search_notes %q: %v", q, res.Content)
		}
		return err
	}
	for _, q := range queries { // warm up: the SQLite pages and the schemas
		if err := call(q); err != nil {
			return err
		}
	}
	// The same searches in-process, interleaved with the calls, say what
	// the protocol adds to the search itself on this machine at this load.
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		return err
	}
	defer v.Close()
	var lat, direct []time.Duration
	for i := range 500 {
		q := queries[i%len(queries)]
		start := time.Now()
		if err := call(q); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
		start = time.Now()
		if _, err := v.Index().Find(ctx, index.Query{Text: q, Limit: 20}); err != nil {
			return err
		}
		direct = append(direct, time.Since(start))
	}
	p50, p99, d50 := percentile(lat, 50), percentile(lat, 99), percentile(direct, 50)
	b.add(row{figure: label("MCP search_notes round trip over stdio p50 / p99 / max"), target: "p50 ≤ 3 ms",
		measured: fmt.Sprintf("%s / %s / %s", round(p50), round(p99), round(slices.Max(lat))),
		baseline: "in-process search p50 " + round(d50).String(), ratio: "+" + round(p50-d50).String(),
		pass: check(p50 <= 3*time.Millisecond)})
	return nil
}
