package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// waitUntil polls cond until it holds; the deadline only ends a hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// countedProbes counts the probes that ask the model server whether it
// is back.
type countedProbes struct {
	*llm.Client
	n atomic.Int32
}

func (c *countedProbes) Ready(ctx context.Context, req llm.Request) error {
	c.n.Add(1)
	return c.Client.Ready(ctx, req)
}

// With the model server stopped, an agent never fails for it: over many
// backoff periods it stays active with no failure counted, its offline
// report follows the task, and its wakes wait. When the server comes
// back, the probe finds it and the waiting wake runs with the model.
func TestModelAwayIsNotAFailure(t *testing.T) {
	v := querytest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	cfg := fake.Config()
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &countedProbes{Client: c}
	fake.Stop()

	ctx, cancel := context.WithCancel(context.Background())
	const backoff = 20 * time.Millisecond
	rt, err := newRuntime(ctx, v, client, Options{QuietPeriod: 30 * time.Millisecond, MaxWait: 200 * time.Millisecond,
		BackoffInitial: backoff, BackoffMax: 2 * backoff, DormantAfter: 2, ProbeInitial: 10 * time.Millisecond, ProbeMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)
	a, err := rt.Create(ctx, chaosTask)
	if err != nil {
		t.Fatal(err)
	}
	report := func() Report {
		got, err := rt.store.Agent(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := ReadReport(v.Root(), v.Options().OutputFolder, got)
		return r
	}
	waitUntil(t, "the offline report", func() bool { return strings.Contains(report().TLDR, "4 of 8 checklist items done") })
	if r := report(); r.GeneratedBy != generatedOffline {
		t.Fatalf("report by %q, want the offline report", r.GeneratedBy)
	}

	// The task changes while the model is away: the offline report follows.
	p := filepath.Join(v.Dir(), chaosTask)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "- [ ] Support docs", "- [x] Support docs", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the offline report after the edit", func() bool { return strings.Contains(report().TLDR, "5 of 8 checklist items done") })

	// The probe asks again and again, each time after the longest backoff
	// or longer: by the last of these, a retry on a timer and the
	// dormancy after 2 failures would have come.
	const probes = 8
	since := client.n.Load()
	waitUntil(t, "the probe to ask 8 more times", func() bool { return client.n.Load() >= since+probes })
	got, err := rt.store.Agent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lifecycle != Active || got.Failures != 0 {
		t.Fatalf("after %d probes with the model away: %s with %d failures (%s), want active without a failure", probes, got.Lifecycle, got.Failures, got.DormantReason)
	}
	act, err := rt.store.Activity(ctx, a.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range act.Runs {
		if run.Status != RunOffline {
			t.Errorf("run %d %s (%s), want offline", run.ID, run.Status, run.Detail)
		}
	}
	if n := len(act.Runs); n != 2 {
		t.Errorf("%d runs with the model away, want 2 (the first wake, the edit): a wait is not retried on a timer", n)
	}

	fake.Start()
	waitUntil(t, "the model's report", func() bool { return report().GeneratedBy == "qwen2.5:7b" })
	if r := report(); r.TLDR != "Export works; QA and docs left." {
		t.Errorf("report after the model came back: %+v", r)
	}
	waitUntil(t, "the wake to finish", func() bool {
		act, err = rt.store.Activity(ctx, a.ID, 1)
		return err == nil && act.Runs[0].Status != RunStarted
	})
	if run := act.Runs[0]; run.Status != RunCompleted || !strings.Contains(run.Reason, "the model is back") {
		t.Errorf("last run %s for %q, want completed because the model is back", run.Status, run.Reason)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d chat requests reached the server, want the one wake after it came back", n)
	}
}

// Without any model configured, a wake writes the offline report and
// ends offline: no failure, no retry, no dormancy, and a save that
// changes nothing writes nothing.
func TestNoModelIsNotAFailure(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := newRuntime(ctx, v, nil, Options{QuietPeriod: 30 * time.Millisecond, MaxWait: 200 * time.Millisecond,
		BackoffInitial: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond, DormantAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)
	a, err := rt.Create(ctx, chaosTask)
	if err != nil {
		t.Fatal(err)
	}
	var act Activity
	waitUntil(t, "the offline wake", func() bool {
		act, err = rt.store.Activity(ctx, a.ID, 10)
		return err == nil && len(act.Runs) == 1 && act.Runs[0].Status != RunStarted
	})
	if act.Runs[0].Status != RunOffline {
		t.Fatalf("run %s (%s), want offline", act.Runs[0].Status, act.Runs[0].Detail)
	}
	// A save that changes nothing, then time for retries, were there any.
	p := filepath.Join(v.Dir(), chaosTask)
	now := time.Now()
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	rt.Wake(ctx, a.ID, "a decision")
	waitUntil(t, "the repeated wake to be skipped", func() bool {
		ws := rt.WakeState(a.ID)
		return ws.Skipped > 0 && !ws.Queued && !ws.Running
	})
	got, err := rt.store.Agent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Lifecycle != Active || got.Failures != 0 {
		t.Errorf("without a model: %s with %d failures (%s), want active without a failure", got.Lifecycle, got.Failures, got.DormantReason)
	}
	if act, err = rt.store.Activity(ctx, a.ID, 10); err != nil || len(act.Runs) != 1 {
		t.Errorf("%d runs, want the one: the same state is not written offline again (%v)", len(act.Runs), err)
	}
}
