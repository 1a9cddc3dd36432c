package ledger

import (
	"context"
	"database/sql"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/store"
)

func TestTotalsSumTheCallsOfOneScope(t *testing.T) {
	ctx := context.Background()
	l, _ := openLedger(t)

	// Records reach the ledger through a Slot, as they do in margin serve;
	// before Attach they are dropped, not held.
	var slot Slot
	call := func(scope, outcome string, prompt, completion int) {
		slot.Record(WithScope(ctx, scope), llm.Record{Time: time.Now(), Role: "task", Provider: "ollama",
			Model: "qwen2.5:7b", PromptTokens: prompt, CompletionTokens: completion, Outcome: outcome})
	}
	call("run:1", "ok", 999, 999)
	slot.Attach(l)
	call("run:1", "ok", 1200, 80)
	call("run:1", string(llm.ErrTimeout), 0, 0)
	call("run:1", "ok", 300, 40)
	call("run:2", "ok", 50, 5)
	call("evolution:ab12", "ok", 700, 70)
	call("", "ok", 1, 1)

	for _, tc := range []struct {
		scope string
		want  Totals
	}{
		{"run:1", Totals{Calls: 3, Failed: 1, PromptTokens: 1500, CompletionTokens: 120}},
		{"run:2", Totals{Calls: 1, PromptTokens: 50, CompletionTokens: 5}},
		{"run:3", Totals{}},
	} {
		got, err := l.Totals(ctx, tc.scope)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("Totals(%s) = %+v, want %+v", tc.scope, got, tc.want)
		}
	}
	for _, tc := range []struct {
		prefix string
		want   Totals
	}{
		{"run:", Totals{Calls: 4, Failed: 1, PromptTokens: 1550, CompletionTokens: 125}},
		{"evolution:", Totals{Calls: 1, PromptTokens: 700, CompletionTokens: 70}},
		{"query:", Totals{}},
	} {
		got, err := l.TotalsWithPrefix(ctx, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("TotalsWithPrefix(%s) = %+v, want %+v", tc.prefix, got, tc.want)
		}
	}
	byScope, err := l.TotalsByScope(ctx, "run:")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]Totals{"run:1": {Calls: 3, Failed: 1, PromptTokens: 1500, CompletionTokens: 120}, "run:2": {Calls: 1, PromptTokens: 50, CompletionTokens: 5}}; !maps.Equal(byScope, want) {
		t.Errorf("TotalsByScope(run:) = %+v, want %+v", byScope, want)
	}
}

// An MCP client's tool calls are kept with its name, newest first, their
// arguments cut to a bound.
func TestToolCallsKeepTheClientsName(t *testing.T) {
	ctx := context.Background()
	l, _ := openLedger(t)
	at := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	big := `{"text":"` + strings.Repeat("é", 3000) + `"}`
	if err := l.RecordToolCalls(ctx, []ToolCall{
		{Time: at, Client: "Claude Code", Tool: "search_notes", Args: `{"query":"x"}`, Latency: 1500 * time.Microsecond},
		{Time: at, Client: "Cursor", Tool: "propose_edit", Args: big, Err: "old_text occurs twice"},
	}); err != nil {
		t.Fatal(err)
	}
	calls, err := l.ToolCalls(ctx, 10)
	if err != nil || len(calls) != 2 {
		t.Fatalf("calls = %+v, %v", calls, err)
	}
	if c := calls[0]; c.Client != "Cursor" || c.Err != "old_text occurs twice" || len(c.Args) > maxToolArgs+len("…") || !utf8.ValidString(c.Args) {
		t.Errorf("newest = %+v", c)
	}
	if c := calls[1]; c.Client != "Claude Code" || c.Tool != "search_notes" || c.Args != `{"query":"x"}` || c.Latency != 1500*time.Microsecond || !c.Time.Equal(at) {
		t.Errorf("oldest = %+v", c)
	}
}

// Prune forgets the model calls and tool calls older than its time, all
// of them (more than one delete's worth), and keeps every newer one, even
// a model call written after a newer one had been.
func TestPruneForgetsOldCalls(t *testing.T) {
	ctx := context.Background()
	l, db := openLedger(t)
	cutoff := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	old, recent := cutoff.Add(-time.Hour), cutoff.Add(time.Hour)
	calls := make([]ToolCall, 2*pruneChunk+10)
	for i := range calls {
		calls[i] = ToolCall{Time: old.Add(time.Duration(i) * time.Millisecond), Client: "Claude Code", Tool: "search_notes", Args: "{}"}
	}
	calls = append(calls, ToolCall{Time: recent, Client: "Cursor", Tool: "read_note", Args: "{}"})
	if err := l.RecordToolCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	l.Record(ctx, llm.Record{Time: old, Role: "task", Outcome: "ok"})
	l.Record(ctx, llm.Record{Time: recent, Role: "query", Outcome: "ok"})
	l.Record(ctx, llm.Record{Time: old.Add(time.Minute), Role: "late", Outcome: "ok"}) // a long call, written last
	n, err := l.Prune(ctx, cutoff)
	if want := int64(len(calls) - 1 + 1); err != nil || n != want { // the old tool calls and the first model call
		t.Fatalf("pruned %d, %v; want %d", n, err, want)
	}
	left, err := l.ToolCalls(ctx, 10)
	if err != nil || len(left) != 1 || left[0].Client != "Cursor" {
		t.Errorf("tool calls left: %+v, %v", left, err)
	}
	var roles []string
	rows, err := db.QueryContext(ctx, `SELECT role FROM model_calls ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r string
		rows.Scan(&r)
		roles = append(roles, r)
	}
	rows.Close()
	// The late old call stays until a later prune: it was written after
	// a call newer than the cutoff.
	if strings.Join(roles, ",") != "query,late" {
		t.Errorf("model calls left: %v", roles)
	}
	if n, err := l.Prune(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("second prune: %d, %v", n, err)
	}
	if n, err := l.Prune(ctx, recent.Add(time.Hour)); err != nil || n != 3 {
		t.Errorf("prune of everything: %d, %v", n, err)
	}
}

// openLedger opens a ledger on a fresh state database, closed when t ends.
func openLedger(t *testing.T) (*Ledger, *sql.DB) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := Open(context.Background(), db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return l, db
}
