package task

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// A renamed task takes every output with it: the report, the journal and
// the change sets name its new path, in their files and in the database;
// the decisions made before the rename are listed under the new path, and
// a pending item approved after it edits the renamed note.
func TestRenamedTaskTakesEveryOutputAlong(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	ctx := t.Context()
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			call("record_observations", map[string]any{"observations": []string{"QA waits for the Acme sample"}}),
			call("update_task_priority", map[string]any{"priority": "P0", "human_summary": "Raise the priority to P0"}),
			call("update_task_due_date", map[string]any{"due_date": "2026-12-04", "human_summary": "Move the due date to 2026-12-04"}),
			goodReport,
		}}
	})
	if run := c.wake(t); run.Status != RunCompleted {
		t.Fatalf("wake %s (%s)", run.Status, run.Detail)
	}
	sets, err := c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 || len(sets[0].Items) != 2 {
		t.Fatalf("change sets before the rename: %+v, %v; want one of two items", sets, err)
	}
	cs := sets[0]
	if _, err := c.rt.changes.Decide(ctx, cs.ID, []changes.ItemDecision{{Item: "c2", Verdict: changes.Rejected, Reason: "the date stands"}}); err != nil {
		t.Fatal(err)
	}

	const renamed = "Tasks/Billing/Invoice CSV export.md"
	dir := c.v.Dir()
	src, err := os.ReadFile(filepath.Join(dir, chaosTask))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Tasks", "Billing"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, chaosTask), filepath.Join(dir, renamed)); err != nil {
		t.Fatal(err)
	}
	fp := edit.FingerprintOf(src)
	if err := c.rt.onChanges(ctx, []vault.Change{
		{Path: chaosTask, Kind: note.KindTask, Old: fp},
		{Path: renamed, Kind: note.KindTask, New: fp},
	}); err != nil {
		t.Fatal(err)
	}

	a, err := c.rt.store.Agent(ctx, c.id)
	if err != nil || a.Task != renamed {
		t.Fatalf("agent after the rename: %+v, %v", a, err)
	}
	link := `task: "[[Tasks/Billing/Invoice CSV export]]"`
	for _, p := range []string{ReportPath("Margin", a.OutputName), JournalPath("Margin", a.OutputName), cs.Path} {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), link+"\n") || strings.Contains(string(got), "[[Tasks/Ship invoice export]]") {
			t.Errorf("%s after the rename does not name the task by its new path:\n%s", p, got)
		}
	}
	if j, _ := os.ReadFile(filepath.Join(dir, JournalPath("Margin", a.OutputName))); !strings.Contains(string(j), "\n# Journal: Invoice CSV export\n") ||
		!strings.Contains(string(j), "— QA waits for the Acme sample\n") {
		t.Errorf("the journal after the rename:\n%s", j)
	}
	if rep, err := c.report(t); err != nil || rep.Task != "Tasks/Billing/Invoice CSV export" || rep.TLDR != "Export works; QA and docs left." {
		t.Errorf("report after the rename: %+v, %v", rep, err)
	}
	sets, err = c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: renamed})
	if err != nil || len(sets) != 1 || sets[0].Task != renamed {
		t.Errorf("change sets of %s: %+v, %v; want the pending one, on the new path", renamed, sets, err)
	}
	ds, err := c.rt.changes.Store().Decisions(ctx, changes.DecisionFilter{Task: renamed})
	if err != nil || len(ds) != 1 || ds[0].Item != "c2" {
		t.Errorf("decisions on %s: %+v, %v; want the rejection made before the rename", renamed, ds, err)
	}

	if _, err := c.rt.changes.Decide(ctx, cs.ID, []changes.ItemDecision{{Item: "c1", Verdict: changes.Confirmed}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, renamed))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(string(src), "priority: P1\n", "priority: P0\n", 1); string(got) != want {
		t.Errorf("the renamed note after approving c1:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, chaosTask)); !os.IsNotExist(err) {
		t.Errorf("approving c1 brought the old path back: %v", err)
	}
	ds, err = c.rt.changes.Store().Decisions(ctx, changes.DecisionFilter{Task: renamed})
	if err != nil || len(ds) != 2 {
		t.Errorf("decisions on %s after approving: %+v, %v; want both", renamed, ds, err)
	}
}
