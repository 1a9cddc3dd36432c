package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/review"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// The reviews spend the task agents' daily token budget: once a review
// has spent it, the next review is built offline and says why — and a
// restart still knows what the reviews spent today.
func TestReviewsSpendTheAgentsBudget(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{JSON: map[string]any{"tldr": "", "sections": []any{}, "proposals": []any{}}}
	})
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	dir := noteVault(t)
	if err := os.MkdirAll(filepath.Join(dir, "Margin", "Reviews"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nschedule: daily 07:00\n---\n# Daily\n\nWhat moved.\n"
	if err := os.WriteFile(filepath.Join(dir, "Margin", "Reviews", "daily.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *Workspace {
		o := Options{Parts: Agents | Reviews, Scan: true, LLM: client, Agents: task.Options{DailyTokenBudget: 10}}
		o.Vault.Dir = dir
		ws, err := Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	ws := open()
	first, err := ws.Reviews.RunNow(context.Background(), "daily")
	if err != nil {
		t.Fatal(err)
	}
	// The model's empty reply makes the note the structure's; its call
	// is what spends the budget.
	if first.PromptTokens <= 10 || strings.Contains(first.Detail, "budget") {
		t.Fatalf("the first review: %+v, want one that called the model, spending more than the budget", first)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, "Plan.md"), []byte("# Plan\n\nShip the export on Friday.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws = open() // a restart: the budget spent today is read back
	defer ws.Close()
	second, err := ws.Reviews.RunNow(context.Background(), "daily")
	if err != nil {
		t.Fatal(err)
	}
	n, err := ws.Reviews.Latest(context.Background(), "daily", "")
	if err != nil {
		t.Fatal(err)
	}
	if second.GeneratedBy != review.GeneratedOffline || !strings.Contains(n.Content, "the daily token budget (agents.daily_token_budget) is spent") {
		t.Errorf("the second review: %+v\n%s", second, n.Content)
	}
	if got := len(fake.Requests()); got != 1 {
		t.Errorf("%d model calls, want 1", got)
	}
}
