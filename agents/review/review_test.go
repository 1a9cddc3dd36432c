package review

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
)

// fakeClock is the scheduler's clock: tests set the time, and count the
// waits to know the scheduler has done all it had to and is waiting.
type fakeClock struct {
	mu      sync.Mutex // guards the fields below
	now     time.Time
	waiters []waiter
	waits   int
}

type waiter struct {
	at time.Time
	c  chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	c.waits++
	return ch
}

// set moves the clock to t and wakes the waits it passed.
func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.c <- t
	}
	c.waiters = kept
}

func (c *fakeClock) waitCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// waitUntil polls cond; the deadline only ends a hang.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// rig is a vault copied from testdata/vault, indexed, with reviews on it.
type rig struct {
	t     *testing.T
	v     *vault.Vault
	clock *fakeClock
	opts  Options
	rv    *Reviews
}

func at(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, time.UTC)
	if err != nil {
		panic(err)
	}
	return t
}

func newRig(t *testing.T, model llm.Model) *rig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dir, os.DirFS("testdata/vault")); err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(context.Background(), vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	r := &rig{t: t, v: v, clock: &fakeClock{now: at("2026-11-28 07:00")}}
	r.scan()
	lib := templates.New(templates.Vault{Files: v.Root(), Events: v, OutputFolder: v.Options().OutputFolder}, templates.Options{Now: r.clock.Now})
	r.opts = Options{Index: v.Index(), Files: v.Root(), Directives: lib, Model: model, Clock: r.clock, OutputFolder: v.Options().OutputFolder}
	r.reopen()
	return r
}

// reopen opens the reviews again on the same state database, as a restart does.
func (r *rig) reopen() {
	st, err := OpenStore(context.Background(), r.v.DB())
	if err != nil {
		r.t.Fatal(err)
	}
	r.rv = New(st, r.opts)
}

func (r *rig) scan() {
	r.t.Helper()
	if _, err := r.v.Scan(context.Background(), nil); err != nil {
		r.t.Fatal(err)
	}
}

// edit replaces old with new in the vault's file rel and indexes it.
func (r *rig) edit(rel, old, new string) {
	r.t.Helper()
	p := filepath.Join(r.v.Dir(), filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		r.t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		r.t.Fatalf("%s does not hold %q", rel, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.scan()
}

func (r *rig) read(rel string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.v.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(b)
}

func (r *rig) runNow(name string) Run {
	r.t.Helper()
	run, err := r.rv.RunNow(context.Background(), name)
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

func (r *rig) runs() []Run {
	r.t.Helper()
	rs, err := r.rv.Store().Runs(context.Background(), "daily")
	if err != nil {
		r.t.Fatal(err)
	}
	return rs
}

// fakeModel is a fake Ollama server with a client on it; every chat
// gets reply.
func fakeModel(t *testing.T, reply func(llmtest.OllamaRequest) llmtest.Reply) (*llmtest.Ollama, *llm.Client) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(reply)
	cfg := fake.Config()
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fake, c
}

// citing is a model's review: one claim on the kiln task's plan, which the
// run read, and one on a note that does not exist.
func citing(llmtest.OllamaRequest) llmtest.Reply {
	return llmtest.Reply{JSON: modelReply{
		TLDR: "The kiln element is the one thing due.",
		Sections: []replySection{{Heading: "Studio", Claims: []replyClaim{
			{Text: "The kiln element still needs ordering.", Cites: []string{"[[Projects/Kiln repair#Plan]]"}},
			{Text: "The glaze order arrived [[Notes/invented#Delivery]].", Cites: []string{"Notes/invented#Delivery"}},
		}}},
	}}
}

func promptChars(r llmtest.OllamaRequest) int {
	n := 0
	for _, m := range r.Messages {
		n += len(m.Content)
	}
	return n
}

// A run by hand writes one note with the review's frontmatter, a TLDR and
// the model's claims that cite what the run read; a claim whose citation
// does not resolve is dropped, and the note says so.
func TestRunWritesCitedNote(t *testing.T) {
	fake, model := fakeModel(t, citing)
	r := newRig(t, model)
	run := r.runNow("daily")
	if run.Note != "Margin/Reviews/daily/2026-11-28.md" || run.Status != StatusDone {
		t.Fatalf("run %+v, want done into Margin/Reviews/daily/2026-11-28.md", run)
	}
	got := r.read(run.Note)
	for _, want := range []string{"margin: review\n", `name: "daily"`, `template: "review-daily@1"`, `generated_by: "qwen2.5:7b"`,
		"run: 1\n", `period_from: "the start (first run)"`, "period_to: 2026-11-28T07:00:00Z",
		"**TLDR:** The kiln element is the one thing due.",
		"- The kiln element still needs ordering. [[Projects/Kiln repair#Plan]]",
		"[[Projects/Kiln repair]] — Kiln repair, due 2026-11-27 (overdue)",
		"1 claim left out: no citation resolved"} {
		if !strings.Contains(got, want) {
			t.Errorf("the note lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "invented") || strings.Contains(got, "glaze order") {
		t.Errorf("the note keeps a claim whose citation does not resolve:\n%s", got)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	// The directive is versioned in the template library like a task agent's.
	tmpl := r.read("Margin/Templates/review-daily/v1.md")
	if !strings.Contains(tmpl, "kind: review") || !strings.Contains(tmpl, "what the logs say about sleep") {
		t.Errorf("the directive's first version:\n%s", tmpl)
	}
	r.edit("Margin/Reviews/daily.md", "sleep and spending", "sleep, spending and firing")
	r.clock.set(at("2026-11-29 07:00"))
	if run := r.runNow("daily"); run.Template != "review-daily@2" {
		t.Errorf("after an edit of the definition the run used %s, want review-daily@2", run.Template)
	}
}

// A run sees only what changed since the last one: after one changed
// note its prompt is a fraction of the first run's, and a run with
// nothing new calls no model and says so.
func TestIncrementalRuns(t *testing.T) {
	fake, model := fakeModel(t, citing)
	r := newRig(t, model)
	r.runNow("daily")
	r.clock.set(at("2026-11-29 07:00"))
	r.edit("Notes/handles.md", "point 1:", "point 1 (pulled thicker today):")
	second := r.runNow("daily")
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	full, incremental := promptChars(reqs[0]), promptChars(reqs[1])
	t.Logf("prompt characters: full %d, after one changed note %d (%.0f%%); prompt tokens %d", full, incremental, 100*float64(incremental)/float64(full), second.PromptTokens)
	if incremental*10 > full*3 {
		t.Errorf("the prompt after one changed note is %d characters, more than 30%% of the full run's %d", incremental, full)
	}
	if !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "[[Notes/handles]]") {
		t.Errorf("the incremental prompt lacks the changed note")
	}
	if strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "[[Notes/slips]]") {
		t.Errorf("the incremental prompt holds a note that did not change")
	}

	r.clock.set(at("2026-11-30 07:00"))
	quiet := r.runNow("daily")
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("a run with nothing new made a model call (%d calls)", n)
	}
	got := r.read(quiet.Note)
	if !strings.Contains(got, "Nothing new in scope since the last review: no model call.") || !strings.Contains(got, `generated_by: "offline"`) {
		t.Errorf("the quiet run's note:\n%s", got)
	}
}

// With no model reachable a review is built from the vault's structure:
// due tasks, moved dates, checklist progress and new log entries, each
// cited, marked generated_by: offline.
func TestOfflineReview(t *testing.T) {
	fake, model := fakeModel(t, citing)
	fake.Stop()
	r := newRig(t, model)
	first := r.runNow("daily")
	if first.GeneratedBy != GeneratedOffline {
		t.Fatalf("generated by %q, want offline", first.GeneratedBy)
	}
	r.clock.set(at("2026-11-29 07:00"))
	r.edit("Projects/Kiln repair.md", "due: 2026-11-27", "due: 2026-11-29")
	r.edit("Projects/Kiln repair.md", "- [ ] Order the element", "- [x] Order the element")
	r.edit("Daily/2026-11-27.md", "Spent 42 on brushes.", "Spent 42 on brushes.\n\n## 22:10\n\nBisque load packed.")
	second := r.runNow("daily")
	got := r.read(second.Note)
	for _, want := range []string{`generated_by: "offline"`, "Built offline from the vault's structure",
		"## Moved dates\n\n- [[Projects/Kiln repair]] — Kiln repair, due 2026-11-29 (was 2026-11-27)",
		"## Checklist progress\n\n- [[Projects/Kiln repair]] — 3 of 4 checklist items done (was 2 of 4)",
		"## New log entries\n\n- [[Daily/2026-11-27#22:10]] Bisque load packed.",
		"## Due\n\n- [[Projects/Kiln repair]] — Kiln repair, due 2026-11-29\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the offline note lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "#08:15]]") {
		t.Errorf("an entry the last run saw is listed as new:\n%s", got)
	}
}

// spentBudget is a daily budget already spent.
type spentBudget struct{ spent int }

func (*spentBudget) BudgetSpent(time.Time) bool       { return true }
func (b *spentBudget) SpendTokens(_ time.Time, n int) { b.spent += n }

// Under a spent daily token budget a review makes no model call: it is
// built offline and says why.
func TestBudgetSpentReviewIsOffline(t *testing.T) {
	fake, model := fakeModel(t, citing)
	r := newRig(t, model)
	r.opts.Budget = &spentBudget{}
	r.reopen()
	run := r.runNow("daily")
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d model calls under a spent budget, want 0", n)
	}
	got := r.read(run.Note)
	if !strings.Contains(got, "the daily token budget (agents.daily_token_budget) is spent") || run.GeneratedBy != GeneratedOffline {
		t.Errorf("generated by %s; note:\n%s", run.GeneratedBy, got)
	}
}

// A review's tokens count against the agents' budget.
type countingBudget struct {
	mu    sync.Mutex
	spent int
}

func (b *countingBudget) BudgetSpent(time.Time) bool { return false }
func (b *countingBudget) SpendTokens(_ time.Time, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spent += n
}

func TestReviewSpendsTheBudget(t *testing.T) {
	_, model := fakeModel(t, citing)
	r := newRig(t, model)
	b := &countingBudget{}
	r.opts.Budget = b
	r.reopen()
	run := r.runNow("daily")
	if b.spent == 0 || b.spent != run.PromptTokens+run.CompletionTokens {
		t.Errorf("the budget counted %d tokens, the run %d+%d", b.spent, run.PromptTokens, run.CompletionTokens)
	}
	today, err := r.rv.Store().TokensToday(context.Background(), r.clock.Now())
	if err != nil || today != b.spent {
		t.Errorf("TokensToday = %d, %v; want %d", today, err, b.spent)
	}
}

// A proposal goes to a change set through Proposer; the review never
// writes the task note.
type proposals struct{ got []string }

func (p *proposals) ProposeTaskChange(_ context.Context, client, task, field, value, reason string) (changes.ChangeSet, error) {
	p.got = append(p.got, client+"|"+task+"|"+field+"|"+value)
	return changes.ChangeSet{Path: "Margin/Changes/kiln/2026-11-28-0700-abc.md"}, nil
}

func TestProposalGoesToChangeSet(t *testing.T) {
	_, model := fakeModel(t, func(llmtest.OllamaRequest) llmtest.Reply {
		rep := citing(llmtest.OllamaRequest{}).JSON.(modelReply)
		rep.Proposals = []replyProposal{{Task: "[[Projects/Kiln repair]]", Field: "due", Value: "2026-12-02", Reason: "the part ships Monday"},
			{Task: "[[Notes/invented]]", Field: "due", Value: "2026-12-02", Reason: "no such task"}}
		return llmtest.Reply{JSON: rep}
	})
	r := newRig(t, model)
	p := &proposals{}
	r.opts.Proposer = p
	r.reopen()
	before := r.read("Projects/Kiln repair.md")
	run := r.runNow("daily")
	if len(p.got) != 1 || p.got[0] != "review daily|Projects/Kiln repair.md|due|2026-12-02" {
		t.Errorf("proposals %q, want one for the kiln task", p.got)
	}
	if r.read("Projects/Kiln repair.md") != before {
		t.Error("the review wrote the task note")
	}
	if got := r.read(run.Note); !strings.Contains(got, "## Proposed changes\n\n- [[Projects/Kiln repair]] — set due to 2026-12-02: the part ships Monday ([[Margin/Changes/kiln/2026-11-28-0700-abc]])") {
		t.Errorf("the note:\n%s", got)
	}
}

// A model that answers in prose instead of the review asked for leaves the
// review to the vault's structure; it says why, and costs what it cost.
func TestUnusableReplyFallsBackToStructure(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"prose", "The studio week went fine, the kiln is probably repaired."},
		{"wrong shape", `{"summary": "fine"}`},
		{"only invented citations", `{"tldr": "All done [[Notes/invented]].", "sections": [{"heading": "Made up", "claims": [{"text": "The kiln was fixed.", "cites": ["Projects/Kiln repair#Delivery"]}]}], "proposals": []}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, model := fakeModel(t, func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: tc.reply} })
			r := newRig(t, model)
			run := r.runNow("daily")
			got := r.read(run.Note)
			if strings.Contains(got, "kiln is probably") || strings.Contains(got, "was fixed") || strings.Contains(got, "All done") {
				t.Errorf("the note keeps an uncited claim:\n%s", got)
			}
			if !strings.Contains(got, "**TLDR:** 2 tasks due (1 overdue)") && !strings.Contains(got, "**TLDR:** 1 task due (1 overdue)") {
				t.Errorf("the TLDR is not the structure's:\n%s", got)
			}
			if !strings.Contains(got, "## Due\n\n- [[Projects/Kiln repair]]") {
				t.Errorf("the structural sections are missing:\n%s", got)
			}
			if run.PromptTokens == 0 {
				t.Error("the call's tokens were not counted")
			}
			if run.GeneratedBy != GeneratedOffline {
				t.Errorf("the note is signed %q; nothing of the model's is in it", run.GeneratedBy)
			}
		})
	}
}

// A definition that does not parse, or whose directive the template
// library refuses, fails with a clear error and records no run.
func TestBadDefinitions(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"no schedule", "---\nscope:\n  folders: [Notes]\n---\nLook.\n", "no schedule"},
		{"bad schedule", "---\nschedule: hourly\n---\nLook.\n", `schedule "hourly": unknown form`},
		{"empty body", "---\nschedule: daily 07:00\n---\n# Daily\n", "the body is empty"},
		{"heading in the directive", "---\nschedule: daily 07:00\n---\nLook.\n\n## Focus\n\nSleep.\n", "use ### or deeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			if err := os.WriteFile(filepath.Join(r.v.Dir(), "Margin", "Reviews", "daily.md"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := r.rv.RunNow(context.Background(), "daily")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunNow: %v, want an error saying %q", err, tc.want)
			}
			if runs := r.runs(); len(runs) != 0 {
				t.Errorf("runs recorded: %+v", runs)
			}
		})
	}
}

// A note the scope left out is read when the scope grows to take it in,
// though the note itself did not change.
func TestScopeGrows(t *testing.T) {
	r := newRig(t, nil)
	r.edit("Margin/Reviews/daily.md", "folders: [Projects, Notes, Daily]", "folders: [Projects]")
	r.runNow("daily")
	r.clock.set(at("2026-11-29 07:00"))
	r.edit("Margin/Reviews/daily.md", "folders: [Projects]", "folders: [Projects, Daily]")
	got := r.read(r.runNow("daily").Note)
	if !strings.Contains(got, "**TLDR:** 1 task due (1 overdue), 1 note changed.") {
		t.Errorf("the daily note the scope now takes in is not read:\n%s", got)
	}
	if strings.Contains(got, "#08:15]]") {
		t.Errorf("an entry dated before the period is listed as new:\n%s", got)
	}
	if strings.Contains(got, "Nothing new") {
		t.Errorf("the run says nothing is new:\n%s", got)
	}
}
