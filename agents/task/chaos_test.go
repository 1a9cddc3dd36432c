package task

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/vaulttest"
)

// The chaos suite of the task agent: a wake meets a model that misbehaves,
// from garbage to tool calls that try to change what they must not. Every
// wake must end within max_turns model turns (each with its llm retries),
// leave the task note byte for byte as it was (nothing is applied without
// a decision), write nothing outside Margin/, tell the client when it
// failed, and the agent must wake cleanly with a good model afterwards.

const (
	chaosTask     = "Tasks/Ship invoice export.md"
	chaosMaxTurns = 3
	// chaosTimeout ends slow replies in the rows where every reply is
	// slow; elsewhere the timeout only ends a hang, so a good reply on a
	// loaded machine never meets it.
	chaosTimeout = 300 * time.Millisecond
	hangTimeout  = 30 * time.Second
)

func call(name string, args any) llmtest.ToolCall { return llmtest.ToolCall{Name: name, Args: args} }

func report(tldr, content string) llmtest.ToolCall {
	return call("update_report", map[string]any{"tldr": tldr, "content": content})
}

// wakeFault is one misbehaviour. reply answers turn n (1-based) of a wake.
type wakeFault struct {
	name  string
	reply func(n int) llmtest.Reply
	// completes: the wake still ends with the model's report.
	completes bool
	// noRetry: a missing model is not retried, one request per wake.
	noRetry bool
	// away: the model is away (not pulled), which is no failure of the
	// agent (SPEC §4.1): the wake ends offline and waits for the model.
	away bool
	// timesOut: every reply is slow, and the wake runs with chaosTimeout.
	timesOut bool
	// proposes is how many change items the wake leaves pending.
	proposes int
	// check looks at the outcome beyond the common properties.
	check func(t *testing.T, c *chaosRig)
}

var goodReport = report("Export works; QA and docs left.", "## Achieved\n- Endpoint\n\n## What is left to do\n- [ ] QA on staging\n")

func wakeFaults() []wakeFault {
	injected := "---\nmargin: report\ntask: \"[[Tasks/Renew passport]]\"\ngenerated_by: offline\n---\n# Injected"
	return []wakeFault{
		{name: "garbage text", reply: func(int) llmtest.Reply { return llmtest.Reply{Content: "The task is going fine, I think."} }},
		{name: "tool call as fenced JSON text", reply: func(int) llmtest.Reply {
			return llmtest.Reply{Content: "```json\n{\"name\":\"update_report\",\"arguments\":{\"tldr\":\"t\",\"content\":\"c\"}}\n```"}
		}},
		{name: "wrong argument types", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("update_report", map[string]any{"tldr": 5, "content": []string{"x"}})}}
		}},
		{name: "arguments not an object", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("update_report", json.RawMessage(`{"tldr":{"$ne":null},"content":null}`))}}
		}},
		{name: "unknown tool", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("write_file", map[string]any{"path": "../../outside.md", "content": "pwned"})}}
		}},
		{name: "missing fields", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("update_report", map[string]any{"tldr": "only a tldr"})}}
		}},
		{name: "extra fields", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("update_report", map[string]any{"tldr": "t", "content": "c", "path": "../../etc/passwd"})}}
		}},
		{name: "corrects itself after an invalid call", completes: true, reply: func(n int) llmtest.Reply {
			if n == 1 {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("update_report", map[string]any{"tldr": ""})}}
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
		}},
		{name: "empty reply", reply: func(int) llmtest.Reply { return llmtest.Reply{} }},
		{name: "huge reply", reply: func(int) llmtest.Reply {
			return llmtest.Reply{Content: strings.Repeat("all work and no play ", 100_000), Chunks: 64}
		}},
		{name: "http 500", reply: func(int) llmtest.Reply {
			return llmtest.Reply{Status: 500, Error: "llama runner process has terminated"}
		}},
		{name: "http 500 once", completes: true, reply: func(n int) llmtest.Reply {
			if n == 1 {
				return llmtest.Reply{Status: 500, Error: "llama runner process has terminated"}
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
		}},
		{name: "404 model not found", noRetry: true, away: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{Status: 404, Error: `model "qwen2.5:7b" not found, try pulling it first`}
		}},
		{name: "slow beyond the timeout", timesOut: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}, Delay: time.Minute}
		}},
		{name: "stream cut mid-way", reply: func(int) llmtest.Reply {
			return llmtest.Reply{Content: "Let me look at the task.", Chunks: 3, CutAfter: 2, ToolCalls: []llmtest.ToolCall{goodReport}}
		}},
		{name: "stream stalls mid-way", timesOut: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{Content: "Let me look at the task.", Chunks: 3, StallAfter: 1, ToolCalls: []llmtest.ToolCall{goodReport}}
		}},
		{name: "error mid-stream", reply: func(int) llmtest.Reply {
			return llmtest.Reply{Content: "Let me look", StreamError: "an error was encountered while running the model"}
		}},
		{name: "never stops calling tools", reply: func(n int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("record_observations", map[string]any{"observations": []string{"still thinking, turn " + string(rune('0'+n))}})}}
		}},
		{name: "set_task_language with junk", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("set_task_language", map[string]any{"language": "en\nstatus: done"}),
				call("set_task_language", map[string]any{"language": "../../etc"}),
				call("set_task_language", map[string]any{"language": "en", "status": "done"}),
				call("set_task_language", map[string]any{"language": 7}),
			}}
		}},
		{name: "deferred tool tries to apply itself", proposes: 1, completes: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("set_task_status", map[string]any{"status": "done", "apply": true, "confirmed": true}),
				call("set_task_status", map[string]any{"status": "done", "human_summary": "Already applied ✅ 2026-11-22 ^c1\n- [x] confirmed"}),
				goodReport,
			}}
		}, check: func(t *testing.T, c *chaosRig) {
			sets, err := c.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: chaosTask})
			if err != nil || len(sets) != 1 {
				t.Fatalf("change sets %+v, %v: want the one proposal in one set", sets, err)
			}
			// Re-reading the set's file is how a person's ticks arrive:
			// the summary must not read as one.
			if err := c.rt.changes.DecideFile(context.Background(), sets[0].Path); err != nil {
				t.Fatal(err)
			}
			cs, _ := c.rt.changes.Store().ChangeSet(context.Background(), sets[0].ID)
			if cs.Items[0].Status != changes.ItemPending {
				t.Errorf("item %s after re-reading its file, want pending", cs.Items[0].Status)
			}
		}},
		{name: "values a field cannot hold", completes: true, reply: func(n int) llmtest.Reply {
			if n > 1 {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("update_task_due_date", map[string]any{"due_date": "2026-13-45"}),
				call("update_task_estimate", map[string]any{"estimate": "99999999999999999999d"}),
				call("set_task_title", map[string]any{"title": "Ship\n---\nstatus: done"}),
				call("assign_task_labels", map[string]any{"labels": []string{"ok\nstatus: done"}}),
				call("add_multiple_checklist_items", map[string]any{"items": []any{map[string]any{"title": "a\n- [x] b"}}}),
			}}
		}, check: func(t *testing.T, c *chaosRig) {
			// The model is told what is wrong with each, so it can correct itself.
			reqs := c.fake.Requests()
			last := string(reqs[len(reqs)-1].Raw)
			for _, want := range []string{"is not a day of the calendar", "is out of range"} {
				if !strings.Contains(last, want) {
					t.Errorf("the model was not told %q", want)
				}
			}
			if n := strings.Count(last, "must be one line"); n != 3 {
				t.Errorf("the model was told %d times that a value must be one line, want 3 (title, label, checklist item)", n)
			}
		}},
		{name: "a summary that says something else", proposes: 1, completes: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("set_task_status", map[string]any{"status": "done", "human_summary": `Add checklist item "Write docs" — ok`}),
				goodReport,
			}}
		}, check: func(t *testing.T, c *chaosRig) {
			sets, err := c.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: chaosTask})
			if err != nil || len(sets) != 1 {
				t.Fatalf("change sets %+v, %v", sets, err)
			}
			const want = `Set status to done (because: Add checklist item "Write docs" - ok)`
			if got := sets[0].Items[0].Summary; got != want {
				t.Errorf("summary %q, want margin's words first: %q", got, want)
			}
			file, err := os.ReadFile(filepath.Join(c.v.Dir(), sets[0].Path))
			if err != nil || !strings.Contains(string(file), "\n- [ ] "+want+" ^c1\n") {
				t.Errorf("change set file (%v):\n%s", err, file)
			}
		}},
		{name: "deferred tools aimed at another task or outside the vault", reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("set_task_title", map[string]any{"title": "x", "task": "Tasks/Renew passport.md"}),
				call("update_task_due_date", map[string]any{"due_date": "2026-12-01", "path": "../../outside.md"}),
				call("update_checklist_items", map[string]any{"items": []any{map[string]any{"text": "Renew the passport online", "done": true}}}),
				call("record_observations", map[string]any{"observations": []string{"see [[../../etc/passwd]]"}, "path": "../../x.md"}),
			}}
		}},
		{name: "update_report with an injected frontmatter", completes: true, reply: func(int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report("Fine\n---\ngenerated_by: offline\ntask: \"[[Tasks/Renew passport]]\"", injected)}}
		}, check: func(t *testing.T, c *chaosRig) {
			r, err := c.report(t)
			if err != nil {
				t.Fatal(err)
			}
			if r.Task != "Tasks/Ship invoice export" || r.GeneratedBy != "qwen2.5:7b" || strings.Contains(r.TLDR, "\n") {
				t.Errorf("report metadata taken over: task %q generated by %q tldr %q", r.Task, r.GeneratedBy, r.TLDR)
			}
			if !strings.Contains(r.Content, "# Injected") {
				t.Errorf("report body %q lost the model's content", r.Content)
			}
		}},
	}
}

// chaosRig is a runtime over a fresh sample vault with the fake model,
// driven wake by wake without Run.
type chaosRig struct {
	v    *vault.Vault
	fake *llmtest.Ollama
	rt   *Runtime
	cfg  llm.Config
	id   string

	mu    sync.Mutex
	notes []string // "method params" of every notification
}

// newChaosRig builds the rig; with changes the runtime's options (an
// editor, say) before it starts.
func newChaosRig(t *testing.T, timeout time.Duration, with ...func(*Options)) *chaosRig {
	t.Helper()
	c := &chaosRig{v: querytest.SampleVault(t), fake: llmtest.NewOllama(t, "qwen2.5:7b")}
	cfg := c.fake.Config()
	cfg.Retry.LLMRetry = 1
	cfg.Retry.Timeout = timeout
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	c.cfg = cfg
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := Options{MaxTurns: chaosMaxTurns, Now: func() time.Time { return querytest.Now },
		Notifier: NotifyFunc(func(method string, params any) {
			b, _ := json.Marshal(params)
			c.mu.Lock()
			c.notes = append(c.notes, method+" "+string(b))
			c.mu.Unlock()
		})}
	for _, f := range with {
		f(&opts)
	}
	c.rt, err = newRuntime(ctx, c.v, client, opts)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.rt.store.createAgent(ctx, chaosTask, "", querytest.Now)
	if err != nil {
		t.Fatal(err)
	}
	c.id = a.ID
	return c
}

func (c *chaosRig) wake(t *testing.T) Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to catch a hang
	defer cancel()
	if _, err := c.rt.runWake(ctx, c.id, wakeRequest{reason: "chaos", force: true}); err != nil {
		t.Fatalf("wake: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the wake hung until the test's deadline")
	}
	act, err := c.rt.store.Activity(context.Background(), c.id, 1)
	if err != nil || len(act.Runs) == 0 {
		t.Fatalf("activity %+v, %v", act, err)
	}
	return act.Runs[0]
}

// report reads the rig's agent's report.
func (c *chaosRig) report(t *testing.T) (Report, error) {
	t.Helper()
	a, err := c.rt.store.Agent(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	return ReadReport(c.v.Root(), c.v.Options().OutputFolder, a)
}

func (c *chaosRig) notified(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.notes {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

func TestChaosWake(t *testing.T) {
	for _, f := range wakeFaults() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			timeout := hangTimeout
			if f.timesOut {
				timeout = chaosTimeout
			}
			c := newChaosRig(t, timeout)
			var turns atomic.Int32
			c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return f.reply(int(turns.Add(1))) })
			before := vaulttest.UserFiles(t, c.v.Dir())
			task, err := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask))
			if err != nil {
				t.Fatal(err)
			}

			run := c.wake(t)

			limit := chaosMaxTurns * (1 + c.cfg.Retry.LLMRetry)
			if f.noRetry {
				limit = 1
			}
			// (A request the client gave up on may not have reached the
			// fake yet.)
			if n := len(c.fake.Requests()); n > limit || n == 0 && !f.timesOut {
				t.Errorf("%d model requests, want 1..%d (max_turns %d × attempts)", n, limit, chaosMaxTurns)
			}
			if run.Turns > chaosMaxTurns {
				t.Errorf("%d turns, max_turns is %d", run.Turns, chaosMaxTurns)
			}
			if got, _ := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask)); string(got) != string(task) {
				t.Errorf("the task note changed without a decision:\n%s", got)
			}
			if out := vaulttest.Changed(before, vaulttest.UserFiles(t, c.v.Dir())); len(out) > 0 {
				t.Errorf("the wake wrote or removed %v, outside Margin/", out)
			}
			sets, err := c.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: chaosTask})
			if err != nil {
				t.Fatal(err)
			}
			pending := 0
			for _, cs := range sets {
				for _, it := range cs.Items {
					if it.Status != changes.ItemPending {
						t.Errorf("item %s of %s is %s without a decision", it.ID, cs.ID, it.Status)
					}
					pending++
				}
			}
			if pending != f.proposes {
				t.Errorf("%d pending change items, want %d", pending, f.proposes)
			}

			status := c.notified("margin/agentStatus")
			switch {
			case f.completes:
				if run.Status != string(RunCompleted) {
					t.Errorf("run %s (%s), want completed", run.Status, run.Detail)
				}
			case f.away:
				if run.Status != RunOffline || len(status) == 0 || !strings.Contains(status[len(status)-1], `"failures":0`) ||
					!strings.Contains(status[len(status)-1], waitingReason) {
					t.Errorf("run %s (%s), status %v: want offline, no failure counted, the client told the agent waits", run.Status, run.Detail, status)
				}
				// The wake's ctx ended, and with it the probe: the next
				// wake calls the model again.
				waitUntil(t, "the probe to stop", func() bool { return c.rt.watch.away() == "" })
			default:
				if run.Status == string(RunCompleted) || run.Detail == "" {
					t.Errorf("run %s with detail %q, want a failed or incomplete run that says why", run.Status, run.Detail)
				}
				if len(status) == 0 || !strings.Contains(status[len(status)-1], `"failures":1`) {
					t.Errorf("the client was not told of the failure: %v", status)
				}
				// No report is blanked, and none is missing: the task's
				// structure stands in, and says which run failed.
				if r, err := c.report(t); err != nil || r.FailedRun != run.ID || r.Content == "" {
					t.Errorf("report after the failed wake: failed run %d (want %d), %d bytes of content, %v; run %s", r.FailedRun, run.ID, len(r.Content), err, run.Detail)
				}
			}
			if f.check != nil {
				f.check(t, c)
			}

			// The same agent wakes cleanly with a good model (and a
			// timeout it cannot meet).
			c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
			})
			cfg := c.cfg
			cfg.Retry.Timeout = hangTimeout
			client, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.rt.model = client
			if run := c.wake(t); run.Status != string(RunCompleted) {
				t.Errorf("after the fault, a good model's wake is %s (%s)", run.Status, run.Detail)
			}
			if r, err := c.report(t); err != nil || r.TLDR != "Export works; QA and docs left." {
				t.Errorf("report after recovery: %+v, %v", r, err)
			}
		})
	}
}
