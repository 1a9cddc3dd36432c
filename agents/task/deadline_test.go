package task

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// A wake whose model is slow is cut at agents.wake_deadline, counted over
// all its calls: the first turn is quick, the second would take an hour
// (under the call's own 3m timeout and retries, minutes more). The run
// ends incomplete, saying it was cut, and the agent retries later.
func TestWakeIsCutAtItsDeadline(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		if strings.Contains(querytest.User(req), "observations recorded") || len(req.Messages) > 2 {
			return llmtest.Reply{Content: "still thinking", Delay: time.Hour}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("record_observations", map[string]any{"observations": []string{"slow"}})}}
	})
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	v := twoPlansVault(t)
	rt, err := newRuntime(context.Background(), v, client, Options{Now: func() time.Time { return querytest.Now }, WakeDeadline: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := planRig{t, v, rt}
	a := r.create("Tasks/Work/Plan.md")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // only to catch a wake that ignores its deadline
	defer cancel()
	if _, err := rt.runWake(ctx, a.ID, wakeRequest{reason: "test", force: true}); err != nil {
		t.Fatal(err)
	}
	act, err := rt.store.Activity(context.Background(), a.ID, 1)
	if err != nil || len(act.Runs) != 1 {
		t.Fatalf("runs %+v, %v", act.Runs, err)
	}
	run := act.Runs[0]
	if run.Status != RunIncomplete || !strings.HasPrefix(run.Detail, "cut at the 500ms deadline (agents.wake_deadline) after 1 turn,") {
		t.Errorf("run %s: %q; want incomplete, cut at the deadline", run.Status, run.Detail)
	}
	if got, err := rt.store.Agent(context.Background(), a.ID); err != nil || got.Failures != 1 {
		t.Errorf("agent failures %d, %v: want a retry counted", got.Failures, err)
	}
}
