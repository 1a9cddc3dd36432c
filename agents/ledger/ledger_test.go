package ledger

import (
	"context"
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
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := Open(ctx, db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}

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
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
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
