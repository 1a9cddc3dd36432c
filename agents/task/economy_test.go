package task

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/vaulttest"
)

// scriptedModel reports at once on every wake and records, in order, the
// task each call was about (found by the task note's path in the prompt).
type scriptedModel struct {
	tasks []string // the vault's task paths
	delay time.Duration

	mu       sync.Mutex
	calls    []string
	requests []llm.Request
}

func (m *scriptedModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	time.Sleep(m.delay)
	task := "?"
	for _, msg := range req.Messages {
		for _, p := range m.tasks {
			if strings.Contains(msg.Content, "the task note "+p) {
				task = p
			}
		}
	}
	m.mu.Lock()
	m.calls = append(m.calls, task)
	m.requests = append(m.requests, req)
	m.mu.Unlock()
	return llm.Response{Model: "scripted", Usage: llm.Usage{PromptTokens: llm.EstimateTokens(req), CompletionTokens: 20},
		Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{
			ID: "1", Name: "update_report", Args: []byte(`{"tldr":"Scripted report.","content":"## Status\n- going well\n"}`),
		}}}}, nil
}

func (m *scriptedModel) called() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

func (m *scriptedModel) lastRequest() llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

// economyTask is a task note of the economy tests' vault.
type economyTask struct {
	path, status, due string
	edited            time.Duration // how long ago the note was saved
}

func (e economyTask) content() string {
	var b strings.Builder
	b.WriteString("---\ntype: task\nstatus: " + e.status + "\n")
	if e.due != "" {
		b.WriteString("due: " + e.due + "\n")
	}
	b.WriteString("---\n# " + strings.TrimSuffix(filepath.Base(e.path), ".md") + "\n\n- [ ] the first step\n- [x] a step done\n")
	return b.String()
}

// economyRig runs the task agents with a scripted model on a vault of the
// given tasks, each saved its edited time ago.
type economyRig struct {
	dir   string
	rt    *Runtime
	model *scriptedModel
}

func newEconomyRig(t *testing.T, tasks []economyTask, opts Options) *economyRig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	now := time.Now()
	var paths []string
	for _, task := range tasks {
		vaulttest.Write(t, dir, task.path, task.content())
		if err := os.Chtimes(filepath.Join(dir, task.path), now.Add(-task.edited), now.Add(-task.edited)); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, task.path)
	}
	v := querytest.IndexedVault(t, dir)
	model := &scriptedModel{tasks: paths, delay: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	opts.AutoCreate = true
	if opts.QuietPeriod == 0 {
		opts.QuietPeriod, opts.MaxWait = 50*time.Millisecond, time.Second
	}
	rt, err := newRuntime(ctx, v, model, opts)
	if err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)
	return &economyRig{dir: dir, rt: rt, model: model}
}

// settle waits until every agent has woken at least wakes times in all and
// nothing is queued or running.
func (e *economyRig) settle(t *testing.T, wakes int) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // the deadline only ends a hang
		agents, err := e.rt.store.Agents(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, a := range agents {
			total += a.Wakes
		}
		c, err := e.rt.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if total >= wakes && c.Queued == 0 && c.Running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents did not settle at %d wakes: %d wakes, %+v", wakes, total, c)
		}
	}
}

func (e *economyRig) report(t *testing.T, task string) Report {
	t.Helper()
	a, err := e.rt.store.AgentForTask(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok, err := readReport(e.rt.v.Files, ReportPath(e.rt.outputFolder(), a.OutputName))
	if err != nil || !ok {
		t.Fatalf("no report on %s: %v", task, err)
	}
	return rep
}

// Done and cancelled tasks cost no model call: their wake writes the
// structural report, refreshes it when the task changes, and keeps a
// report a model wrote. Reopening the task wakes its agent with the model,
// which is shown the whole task: it never saw it.
func TestDoneTasksCostNoModelCall(t *testing.T) {
	const open, done, cancelled = "Tasks/Open.md", "Tasks/Shipped.md", "Tasks/Dropped.md"
	e := newEconomyRig(t, []economyTask{{path: open, status: "open"}, {path: done, status: "done"}, {path: cancelled, status: "canceled"}}, Options{})
	e.settle(t, 3)
	if got := e.model.called(); !slices.Equal(got, []string{open}) {
		t.Fatalf("first start called the model for %q, want only the open task", got)
	}
	for _, task := range []string{done, cancelled} {
		rep := e.report(t, task)
		if rep.GeneratedBy != generatedOffline || !strings.HasPrefix(rep.TLDR, "Task ") || !strings.Contains(rep.Content, "1 of 2 items done") {
			t.Errorf("report on %s: by %q, tldr %q\n%s", task, rep.GeneratedBy, rep.TLDR, rep.Content)
		}
	}

	// A change to the done task refreshes its structural report, still
	// without the model.
	doneTask := economyTask{path: done, status: "done"}
	vaulttest.Write(t, e.dir, done, doneTask.content()+"- [ ] one more thing\n")
	e.settle(t, 4)
	if rep := e.report(t, done); !strings.Contains(rep.Content, "1 of 3 items done") || !strings.Contains(rep.Content, "one more thing") {
		t.Errorf("the done task's report did not follow its change:\n%s", rep.Content)
	}
	if got := e.model.called(); len(got) != 1 {
		t.Fatalf("a change to a done task called the model: %q", got)
	}

	// Reopened, it wakes with the model, shown the whole task.
	vaulttest.Write(t, e.dir, done, strings.Replace(doneTask.content(), "status: done", "status: in-progress", 1)+"- [ ] one more thing\n")
	e.settle(t, 5)
	if got := e.model.called(); !slices.Equal(got, []string{open, done}) {
		t.Fatalf("reopening the task called the model for %q, want %q", got, []string{open, done})
	}
	if msg := e.model.lastRequest().Messages[0].Content; !strings.Contains(msg, "data: the task note "+done) {
		t.Errorf("the reopened task's wake did not show the whole task:\n%s", msg)
	}
	if rep := e.report(t, done); rep.GeneratedBy != "scripted" {
		t.Fatalf("the reopened task's report is by %q, want the model's", rep.GeneratedBy)
	}

	// Done again: the model's report stands, and no call.
	vaulttest.Write(t, e.dir, done, doneTask.content()+"- [x] one more thing\n")
	e.settle(t, 6)
	if rep := e.report(t, done); rep.GeneratedBy != "scripted" || rep.TLDR != "Scripted report." {
		t.Errorf("the model's report was replaced: by %q, tldr %q", rep.GeneratedBy, rep.TLDR)
	}
	if got := e.model.called(); len(got) != 2 {
		t.Fatalf("a task done again called the model: %q", got)
	}
}

// The first start wakes the agents in priority order: by nearest due
// date, in-progress before open, recently edited first; the tasks without
// a due date last, and no call for done ones. Two wakes run at once (the
// wake slots), and the model answers one call at a time, so each wake
// reaches the model at most one place from its rank.
func TestFirstStartWakesInPriorityOrder(t *testing.T) {
	tasks := []economyTask{
		{path: "Tasks/No due.md", status: "open", edited: time.Minute},
		{path: "Tasks/Later.md", status: "in-progress", due: "2026-12-15", edited: time.Minute},
		{path: "Tasks/Soon open old.md", status: "open", due: "2026-11-26", edited: 48 * time.Hour},
		{path: "Tasks/Shipped.md", status: "done", due: "2026-11-01"},
		{path: "Tasks/Soon open recent.md", status: "open", due: "2026-11-26", edited: time.Hour},
		{path: "Tasks/Overdue.md", status: "open", due: "2026-11-20", edited: 72 * time.Hour},
		{path: "Tasks/Soon in progress.md", status: "in-progress", due: "2026-11-26", edited: 96 * time.Hour},
	}
	want := []string{"Tasks/Overdue.md", "Tasks/Soon in progress.md", "Tasks/Soon open recent.md", "Tasks/Soon open old.md", "Tasks/Later.md", "Tasks/No due.md"}
	e := newEconomyRig(t, tasks, Options{Concurrency: 1})
	e.settle(t, len(tasks))
	got := e.model.called()
	if len(got) != len(want) {
		t.Fatalf("the model was called for %q, want once for each of %q", got, want)
	}
	for i, task := range got {
		rank := slices.Index(want, task)
		if rank < i-1 || rank > i+1 {
			t.Fatalf("the wakes reached the model in the order\n\t%q\nwant\n\t%q", got, want)
		}
	}
}

// agents.daily_token_budget: once the wakes of the day have spent it, the
// others wait, and vault/status's counts say so; the done task's wake
// still runs. A restart knows what the day spent.
func TestDailyTokenBudgetHoldsWakes(t *testing.T) {
	tasks := []economyTask{
		{path: "Tasks/First.md", status: "open", due: "2026-11-20"},
		{path: "Tasks/Second.md", status: "open", due: "2026-11-21"},
		{path: "Tasks/Third.md", status: "open", due: "2026-11-22"},
		{path: "Tasks/Shipped.md", status: "done"},
	}
	e := newEconomyRig(t, tasks, Options{Concurrency: 1, DailyTokenBudget: 1})
	ctx := context.Background()
	var c Counts
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // the deadline only ends a hang
		var err error
		if c, err = e.rt.Counts(ctx); err != nil {
			t.Fatal(err)
		}
		if c.Running == 0 && c.BudgetSpent && c.Queued+len(e.model.called()) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the budget never held the wakes: %+v, calls %q", c, e.model.called())
		}
	}
	// The two slots may both have started before the first call spent
	// the budget; the third wake waits.
	if calls := e.model.called(); len(calls) > 2 || c.Queued < 1 {
		t.Errorf("with a budget of 1 token the model was called for %q and %d wakes wait, want at most 2 calls and the rest waiting", calls, c.Queued)
	}
	if c.DailyTokenBudget != 1 || c.TokensToday < 1 {
		t.Errorf("counts %+v: want the budget of 1 and today's tokens", c)
	}
	if rep := e.report(t, "Tasks/Shipped.md"); rep.GeneratedBy != generatedOffline {
		t.Errorf("the done task's wake did not run under the spent budget: report by %q", rep.GeneratedBy)
	}
	spent, err := e.rt.store.TokensToday(ctx, time.Now())
	if err != nil || spent != c.TokensToday {
		t.Errorf("the runs of today hold %d tokens (%v), the runtime counted %d", spent, err, c.TokensToday)
	}
}
