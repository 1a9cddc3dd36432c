package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// How a wake over a weak model ends.
const (
	// kept: the model published nothing usable; the last good report
	// stands and its frontmatter names the failed run.
	kept = "kept the last good report"
	// published: the model's report is schema-valid and says something;
	// it is the model's to write, and generated_by names the model.
	published = "published the model's report"
)

// Each fault of a weak model (llmtest.Weak) over a task wake ends in a
// useful, honest result, within max_turns: the row says which. Whatever
// the model does, the task note is byte for byte as it was, nothing
// outside Margin/ is written, and no change waits that the notes do not
// support.
func TestWakeOverAWeakModel(t *testing.T) {
	for _, tc := range []struct {
		fault llmtest.Fault
		tool  string // the tool the weak model calls; update_report when ""
		ends  string
		// told is what the model is told when margin refuses its call.
		told  string
		check func(t *testing.T, c *chaosRig)
	}{
		{fault: llmtest.Filler, ends: kept, told: "the report says nothing"},
		{fault: llmtest.DatesInWords, ends: kept, told: "tldr"},
		{fault: llmtest.Headings, ends: kept, told: "the report says nothing"},
		{fault: llmtest.EveryOptional, ends: published},
		{fault: llmtest.NearDuplicates, ends: published},
		{fault: llmtest.MissingPaths, ends: kept, told: "tldr"},
		{fault: llmtest.OtherLanguage, ends: published, check: func(t *testing.T, c *chaosRig) {
			if r, _ := c.report(t); !strings.Contains(r.Content, llmtest.ForeignText) || r.GeneratedBy != "qwen2.5:7b" {
				t.Errorf("report %+v, want the model's French, signed by the model", r)
			}
		}},
		{fault: llmtest.Cut, ends: kept},
		{fault: llmtest.NearDuplicates, tool: "record_observations", ends: kept, check: func(t *testing.T, c *chaosRig) {
			if lines := c.journal(t); len(lines) != 1 {
				t.Errorf("journal %q, want the near-duplicate observations as one line", lines)
			}
		}},
		{fault: llmtest.Filler, tool: "record_observations", ends: kept, told: "says nothing", check: func(t *testing.T, c *chaosRig) {
			if lines := c.journal(t); len(lines) != 0 {
				t.Errorf("journal %q, want no filler in it", lines)
			}
		}},
		{fault: llmtest.Filler, tool: "set_task_language", ends: kept, told: `"ok" is not a language`, check: func(t *testing.T, c *chaosRig) {
			if a, _ := c.rt.store.Agent(context.Background(), c.id); a.Language != "" {
				t.Errorf("language %q kept from a filler", a.Language)
			}
		}},
		{fault: llmtest.DatesInWords, tool: "update_task_due_date", ends: kept, told: "due_date"},
	} {
		tool := tc.tool
		if tool == "" {
			tool = "update_report"
		}
		t.Run(tool+"/"+string(tc.fault), func(t *testing.T) {
			t.Parallel()
			// Each wake at its own minute, so each has its own run key.
			var minutes atomic.Int64
			c := newChaosRig(t, hangTimeout, func(o *Options) {
				o.Now = func() time.Time { return querytest.Now.Add(time.Duration(minutes.Load()) * time.Minute) }
			})
			c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
			})
			minutes.Add(1)
			c.wake(t)
			good, err := c.report(t)
			if err != nil {
				t.Fatal(err)
			}
			task, err := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask))
			if err != nil {
				t.Fatal(err)
			}
			before := vaulttest.UserFiles(t, c.v.Dir())
			calls := len(c.fake.Requests())

			c.fake.Handle(llmtest.Weak{Fault: tc.fault, Tool: tool}.Ollama)
			minutes.Add(1)
			run := c.wake(t)

			requests := c.fake.Requests()[calls:]
			t.Logf("%s: %d model calls, %d turns, run %s", tc.ends, len(requests), run.Turns, run.Status)
			if n := len(requests); n == 0 || n > chaosMaxTurns*(1+c.cfg.Retry.LLMRetry) || run.Turns > chaosMaxTurns {
				t.Errorf("%d model requests in %d turns, max_turns is %d", n, run.Turns, chaosMaxTurns)
			}
			r, err := c.report(t)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.ends {
			case kept:
				if run.Status == RunCompleted || r.Content != good.Content || r.TLDR != good.TLDR || r.FailedRun != run.ID {
					t.Errorf("run %s (%s); report %+v: want the last good report, naming run %d", run.Status, run.Detail, r, run.ID)
				}
			case published:
				if run.Status != RunCompleted || r.Content == good.Content || r.FailedRun != 0 || r.GeneratedBy != "qwen2.5:7b" {
					t.Errorf("run %s (%s); report %+v: want the model's new report", run.Status, run.Detail, r)
				}
			}
			if tc.told != "" {
				var said strings.Builder
				for _, req := range requests {
					for _, m := range req.Messages {
						if m.Role == "tool" {
							said.WriteString(m.Content + "\n")
						}
					}
				}
				if !strings.Contains(said.String(), tc.told) {
					t.Errorf("the model was not told %q; it was told:\n%s", tc.told, said.String())
				}
			}
			if got, _ := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask)); string(got) != string(task) {
				t.Errorf("the task note changed:\n%s", got)
			}
			if out := vaulttest.Changed(before, vaulttest.UserFiles(t, c.v.Dir())); len(out) > 0 {
				t.Errorf("the wake wrote or removed %v, outside Margin/", out)
			}
			if sets, err := c.rt.changes.Store().ChangeSets(context.Background(), changes.ChangeSetFilter{Task: chaosTask}); err != nil || len(sets) != 0 {
				t.Errorf("change sets %+v, %v: want none from junk", sets, err)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

// journal is the rig's agent's journal lines.
func (c *chaosRig) journal(t *testing.T) []string {
	t.Helper()
	a, err := c.rt.store.Agent(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := ReadJournal(c.v.Root(), JournalPath(c.rt.outputFolder(), a.OutputName))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}
