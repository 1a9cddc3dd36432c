package task_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// TestEvolutionMetricsByVersion is evolution's, here because it needs
// real wakes (the chaos rig, through export_test.go).
// The metrics set the active version against the one before it: each
// wake counts for the version it ran, each decision for the version of
// the wake that proposed the item, and the model calls for their wake's.
func TestEvolutionMetricsByVersion(t *testing.T) {
	ctx := context.Background()
	c := task.NewRig(t)
	led, err := ledger.Open(ctx, c.Vault().DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := llm.New(c.Config(), llm.WithRecorder(led))
	if err != nil {
		t.Fatal(err)
	}
	c.SetModel(client)
	sessions, err := evolution.OpenStore(ctx, c.Vault().DB())
	if err != nil {
		t.Fatal(err)
	}
	rt := c.Runtime()
	evo := evolution.New(evolution.Vault{Files: c.Vault().Root(), OutputFolder: c.Vault().Options().OutputFolder}, rt.Templates(),
		evolution.Stores{Sessions: sessions, Agents: rt.Store(), Changes: rt.Changes().Store(), Ledger: led}, client, evolution.Options{})
	var mu sync.Mutex
	var replies []llmtest.Reply // what the model says next, in order
	script := func(rs ...llmtest.Reply) { mu.Lock(); replies = rs; mu.Unlock() }
	c.Fake().Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		r := replies[0]
		replies = replies[1:]
		return r
	})
	propose := func(tool, key, value string) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: tool, Args: map[string]any{key: value}}, task.GoodReport}}
	}
	decide := func(verdict, reason string) {
		t.Helper()
		sets, err := c.Runtime().Changes().Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: task.ChaosTask, Status: changes.SetPending})
		if err != nil || len(sets) != 1 {
			t.Fatalf("pending change sets %+v, %v", sets, err)
		}
		if _, err := c.Runtime().Changes().Decide(ctx, sets[0].ID, []changes.ItemDecision{{Item: "c1", Verdict: verdict, Reason: reason}}); err != nil {
			t.Fatal(err)
		}
	}
	wake := func(status string) {
		t.Helper()
		if run := c.Wake(t); run.Status != status {
			t.Fatalf("wake %s (%s), want %s", run.Status, run.Detail, status)
		}
	}

	// v1: an estimate proposal, rejected; then a plain report.
	script(propose("update_task_estimate", "estimate", "2h"))
	wake(task.RunCompleted)
	decide(changes.Rejected, "estimates are mine")
	script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{task.GoodReport}})
	wake(task.RunCompleted)
	v1Calls := len(c.Fake().Requests())

	// A hand edit of the directives makes v2: a priority proposal,
	// confirmed; then a wake that never reports.
	if _, err := c.Runtime().Templates().Save(ctx, templates.TaskAgent, "Be brief.", "Report in two lines."); err != nil {
		t.Fatal(err)
	}
	script(propose("update_task_priority", "priority", "P0"))
	wake(task.RunCompleted)
	decide(changes.Confirmed, "")
	script(llmtest.Reply{Content: "Nothing to say."})
	wake(task.RunIncomplete)
	v2Calls := len(c.Fake().Requests()) - v1Calls

	active, err := c.Runtime().Templates().Active(ctx, templates.TaskAgent)
	if err != nil || active.Version != 2 {
		t.Fatalf("active %+v, %v", active, err)
	}
	m, err := evo.Metrics(ctx, active)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Versions) != 2 {
		t.Fatalf("versions = %+v, want v2 and v1", m.Versions)
	}
	v2, v1 := m.Versions[0], m.Versions[1]
	for _, tc := range []struct {
		name    string
		got     evolution.VersionMetrics
		version int
		active  bool
		wakes   [4]int // wakes, completed, incomplete, failed
		calls   int
		tools   []evolution.ToolRate
	}{
		{"v2", v2, 2, true, [4]int{2, 1, 1, 0}, v2Calls, []evolution.ToolRate{{Tool: "update_task_priority", Confirmed: 1, Rejected: 0, Deferred: 0}}},
		{"v1", v1, 1, false, [4]int{2, 2, 0, 0}, v1Calls, []evolution.ToolRate{{Tool: "update_task_estimate", Confirmed: 0, Rejected: 1, Deferred: 0}}},
	} {
		g := tc.got
		if g.Version != tc.version || g.Active != tc.active || [4]int{g.Wakes, g.Completed, g.Incomplete, g.Failed} != tc.wakes {
			t.Errorf("%s: %+v, want version %d active %v, wakes %v", tc.name, g, tc.version, tc.active, tc.wakes)
		}
		if g.ModelCalls != tc.calls || g.FailedCalls != 0 || g.PromptTokens == 0 {
			t.Errorf("%s: %d model calls (%d failed, %d prompt tokens), want %d", tc.name, g.ModelCalls, g.FailedCalls, g.PromptTokens, tc.calls)
		}
		if !slices.Equal(g.Tools, tc.tools) {
			t.Errorf("%s: tools %+v, want %+v", tc.name, g.Tools, tc.tools)
		}
	}
	if m.Wakes != 4 || m.ModelCalls != v1Calls+v2Calls || m.PromptTokens != v1.PromptTokens+v2.PromptTokens ||
		!slices.Equal(m.Tools, []evolution.ToolRate{{Tool: "update_task_estimate", Confirmed: 0, Rejected: 1, Deferred: 0}, {Tool: "update_task_priority", Confirmed: 1, Rejected: 0, Deferred: 0}}) {
		t.Errorf("all versions: %+v", m.Tally)
	}
	if len(m.Rejections) != 1 || m.Rejections[0].Version != 1 || m.Rejections[0].Reason != "estimates are mine" {
		t.Errorf("rejections = %+v, want the estimate's, from v1", m.Rejections)
	}

	text, err := evo.Context(ctx, active, m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| | v2 (active) | v1 | all versions |\n",
		"| Wakes: completed / incomplete / failed | 2: 1 / 1 / 0 | 2: 2 / 0 / 0 | 4: 3 / 1 / 0 |\n",
		fmt.Sprintf("| Model calls (failed) | %d (0) | %d (0) | %d (0) |\n", v2Calls, v1Calls, v1Calls+v2Calls),
		"| update_task_estimate: confirmed / rejected / deferred | – | 0 / 1 / 0 (0%) | 0 / 1 / 0 (0%) |\n",
		"| update_task_priority: confirmed / rejected / deferred | 1 / 0 / 0 (100%) | – | 1 / 0 / 0 (100%) |\n",
		"v1 update_task_estimate \"Set estimate to 2h\": estimates are mine\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("evolution context lacks %q:\n%s", want, text)
		}
	}
}
