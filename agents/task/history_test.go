package task_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
)

// Every write of a wake, and the write of an item a person applies after
// it, names the template version and the model of that wake in margin's
// history and in the trailers of its commit on refs/margin/history
// (SPEC §11).
func TestHistoryNamesTheTemplateAndModelOfTheWake(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	c := task.NewRig(t)
	dir := c.Vault().Dir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	h := historytest.Record(t, c.Vault().DB(), c.Vault().Root(), history.Options{})

	c.Fake().Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{Name: "update_task_priority", Args: map[string]any{"priority": "P0"}},
		{Name: "record_observations", Args: map[string]any{"observations": []string{"The export endpoint is done."}}},
		task.GoodReport,
	}})
	run := c.Wake(t)
	if run.Status != task.RunCompleted || run.Model != "qwen2.5:7b" {
		t.Fatalf("run %+v, want completed by qwen2.5:7b, its model recorded", run)
	}
	tpl, err := c.Runtime().Templates().Active(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := c.Runtime().Changes().Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: task.ChaosTask})
	if err != nil || len(sets) != 1 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	// A set file a crash left unwritten is written at the next start, as the wake's.
	if err := os.Remove(filepath.Join(dir, sets[0].Path)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Vault().DB().Exec(`UPDATE change_sets SET fingerprint = ''`); err != nil {
		t.Fatal(err)
	}
	if err := c.Runtime().Changes().Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if restored, err := os.ReadFile(filepath.Join(dir, sets[0].Path)); err != nil || !strings.Contains(string(restored), "## What c1 changes") ||
		!strings.Contains(string(restored), "\n-priority: P1\n+priority: P0\n") {
		t.Errorf("the restored set file has no diff of c1 (%v):\n%s", err, restored)
	}
	if _, err := c.Runtime().Changes().Decide(ctx, sets[0].ID, []changes.ItemDecision{{Item: "c1", Verdict: changes.Confirmed}}); err != nil {
		t.Fatal(err)
	}

	es, err := h.List(ctx, history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, e := range es {
		if e.Actor != sets[0].Agent {
			continue // the templates' own files, written at the start
		}
		written[e.Path]++
		if e.Template != tpl.Label() || e.Model != "qwen2.5:7b" {
			t.Errorf("write of %s (items %v) names template %q and model %q, want %q and qwen2.5:7b", e.Path, e.Items, e.Template, e.Model, tpl.Label())
		}
		if e.Path == task.ChaosTask && (len(e.Items) != 1 || e.Items[0] != "c1" || e.ChangeSet != sets[0].ID) {
			t.Errorf("the task's write = %+v, want item c1 of %s", e, sets[0].ID)
		}
	}
	// The set's file: written by the wake, written again after the "crash", and its item's status.
	if written[task.ChaosTask] != 1 || written[sets[0].Path] != 3 {
		t.Errorf("writes of the task and of the set's file by the agent: %d and %d, want 1 and 3: %+v", written[task.ChaosTask], written[sets[0].Path], es)
	}
	if len(written) < 4 { // the task, the set's file, the report, the journal
		t.Errorf("margin's history has writes of %d files, want 4: %+v", len(written), es)
	}

	h.Close() // commits what is recorded
	log, err := exec.Command("git", "-C", dir, "log", "--format=%B%x00", history.Ref).Output()
	if err != nil {
		t.Fatal(err)
	}
	applied := ""
	for _, msg := range strings.Split(string(log), "\x00") {
		if strings.Contains(msg, "Margin-Item: c1") {
			applied = msg
		}
	}
	for _, want := range []string{"Margin-Change-Set: " + sets[0].ID, "Margin-Template: " + tpl.Label(), "Margin-Model: qwen2.5:7b"} {
		if !strings.Contains(applied, want) {
			t.Errorf("the commit of item c1 lacks %q:\n%s", want, applied)
		}
	}
}
