package task

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
	"github.com/margin-md/margin/vault/note"
)

// A renamed task takes every output with it: the report, the journal and
// the change sets name its new path, in their files and in the database;
// the decisions made before the rename are listed under the new path, and
// a pending item approved after it edits the renamed note.
func TestRenamedTaskTakesEveryOutputAlong(t *testing.T) {
	var h *history.History
	c := newChaosRig(t, hangTimeout, func(o *Options) { o.History = &lateHistory{&h} })
	ctx := t.Context()
	h = historytest.Record(t, c.v.DB(), c.v.Root(), history.Options{})
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
	// The report is the next wake's to relink and move (a wake running
	// now must not find it changed under it).
	for _, p := range []string{JournalPath("Margin", a.OutputName), cs.Path} {
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
	sets, err = c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: renamed})
	if err != nil || len(sets) != 1 || sets[0].Task != renamed {
		t.Errorf("change sets of %s: %+v, %v; want the pending one, on the new path", renamed, sets, err)
	}
	if ws, err := h.List(ctx, history.Filter{Task: renamed}); err != nil || len(ws) < 4 {
		// The report, the journal, the set file and its update, written
		// before the rename.
		t.Errorf("margin's history of %s: %+v, %v; want the writes made before the rename", renamed, ws, err)
	}
	ds, err := c.rt.changes.Store().Decisions(ctx, changes.DecisionFilter{Task: renamed})
	if err != nil || len(ds) != 1 || ds[0].Item != "c2" {
		t.Errorf("decisions on %s: %+v, %v; want the rejection made before the rename", renamed, ds, err)
	}

	// The next wake gives the outputs the task's new name, even one that
	// writes no report: the previous report stands, under the new name.
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: "Nothing to add."} })
	if run := c.wake(t); run.Status == RunCompleted {
		t.Fatalf("wake after the rename %s, want one that writes no report", run.Status)
	}
	if rep, err := c.report(t); err != nil || rep.Path != "Margin/Reports/Invoice CSV export.md" || rep.Task != "Tasks/Billing/Invoice CSV export" ||
		rep.TLDR != "Export works; QA and docs left." || rep.Wake != 1 {
		t.Errorf("report after the wake: %+v, %v; want the first wake's, under the new name, on the new path", rep, err)
	}
	if a, err = c.rt.store.Agent(ctx, c.id); err != nil || a.OutputName != "Invoice CSV export" {
		t.Fatalf("agent after the wake: %+v, %v; want the output name Invoice CSV export", a, err)
	}
	setPath := "Margin/Changes/Invoice CSV export/" + path.Base(cs.Path)
	for old, moved := range map[string]string{
		"Margin/Reports/Ship invoice export.md": "Margin/Reports/Invoice CSV export.md",
		"Margin/Journal/Ship invoice export.md": "Margin/Journal/Invoice CSV export.md",
		cs.Path:                                 setPath,
	} {
		if _, err := os.Stat(filepath.Join(dir, old)); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the wake: %v", old, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, moved)); err != nil || !strings.Contains(string(got), link+"\n") {
			t.Errorf("%s after the wake (%v):\n%s", moved, err, got)
		}
	}
	if j, _ := os.ReadFile(filepath.Join(dir, "Margin/Journal/Invoice CSV export.md")); !strings.Contains(string(j), "— QA waits for the Acme sample\n") {
		t.Errorf("the moved journal lost its entries:\n%s", j)
	}
	if _, err := os.Stat(filepath.Join(dir, path.Dir(cs.Path))); !os.IsNotExist(err) {
		t.Errorf("the emptied folder %s is still there: %v", path.Dir(cs.Path), err)
	}
	sets, err = c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: renamed})
	if err != nil || len(sets) != 1 || sets[0].Path != setPath {
		t.Fatalf("change sets of %s: %+v, %v; want the one at %s", renamed, sets, err, setPath)
	}

	// Ticking c1 in the moved file applies it to the renamed note.
	file, err := os.ReadFile(filepath.Join(dir, setPath))
	if err != nil {
		t.Fatal(err)
	}
	line := sets[0].Items[0].Summary + " ^c1"
	if !strings.Contains(string(file), "- [ ] "+line) {
		t.Fatalf("the moved set file has no open line %q:\n%s", line, file)
	}
	ticked := strings.Replace(string(file), "- [ ] "+line, "- [x] "+line, 1)
	if err := os.WriteFile(filepath.Join(dir, setPath), []byte(ticked), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.changes.DecideFile(ctx, setPath); err != nil {
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

// A renamed task's outputs never take a name a file has already: the
// person's note at the new stem's report path stays as it is, and the
// outputs take the stem and the task's folder.
func TestRenamedTasksOutputsPassOverAFileOfThatName(t *testing.T) {
	v := twoPlansVault(t)
	rig := newPlanRig(t, v)
	a := rig.create("Tasks/Home/Plan.md")
	rig.wake(a)
	dir := v.Dir()
	mine := "# Garden\n\nMy own notes on the garden.\n"
	if err := os.WriteFile(filepath.Join(dir, "Margin/Reports/Garden.md"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "Tasks/Home/Plan.md"), filepath.Join(dir, "Tasks/Home/Garden.md")); err != nil {
		t.Fatal(err)
	}
	if err := rig.rt.store.moveTask(t.Context(), a.ID, "Tasks/Home/Garden.md", ""); err != nil {
		t.Fatal(err)
	}
	rig.wake(a)
	moved, err := rig.rt.store.Agent(t.Context(), a.ID)
	if err != nil || moved.OutputName != "Garden (Home)" {
		t.Fatalf("agent after the rename: %+v, %v; want the output name Garden (Home)", moved, err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "Margin/Reports/Garden.md")); err != nil || string(got) != mine {
		t.Errorf("the person's note at the new stem (%v):\n%s", err, got)
	}
	if rep, err := ReadReport(v.Root(), v.Options().OutputFolder, moved); err != nil || rep.Path != "Margin/Reports/Garden (Home).md" || rep.Wake != 2 {
		t.Errorf("report after the rename: %+v, %v", rep, err)
	}
}

// lateHistory is the history the rig's runtime is given before the test
// opens it on the rig's vault.
type lateHistory struct{ h **history.History }

func (l *lateHistory) MoveTask(ctx context.Context, from, to string) error {
	return (*l.h).MoveTask(ctx, from, to)
}

// A paused agent has no wake coming to relink its report: the rename
// does, and the report stays where it is until the agent wakes again.
func TestPausedAgentsReportFollowsTheRename(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	ctx := t.Context()
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	if run := c.wake(t); run.Status != RunCompleted {
		t.Fatalf("wake %s (%s)", run.Status, run.Detail)
	}
	if err := c.rt.store.setLifecycle(ctx, c.id, Dormant, reasonPaused); err != nil {
		t.Fatal(err)
	}
	const renamed = "Tasks/Invoice CSV export.md"
	dir := c.v.Dir()
	src, err := os.ReadFile(filepath.Join(dir, chaosTask))
	if err != nil {
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
	if rep, err := c.report(t); err != nil || rep.Path != "Margin/Reports/Ship invoice export.md" || rep.Task != "Tasks/Invoice CSV export" {
		t.Errorf("the paused agent's report after the rename: %+v, %v; want it in place, on the new path", rep, err)
	}
}

// Files open in the editor stay where they are: moved from under it, they
// would come back at the old name with the person's next save. The
// outputs take the new name at a wake after the report is closed; a
// change set open then stays in its folder and is decided there.
func TestRenamedTasksOpenOutputsStayUntilClosed(t *testing.T) {
	ed := &bufferEditor{buffers: map[string]string{}, version: map[string]int{}}
	c := newChaosRig(t, hangTimeout, func(o *Options) { o.Editor = ed })
	ctx := t.Context()
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			call("update_task_priority", map[string]any{"priority": "P0"}),
			goodReport,
		}}
	})
	if run := c.wake(t); run.Status != RunCompleted {
		t.Fatalf("wake %s (%s)", run.Status, run.Detail)
	}
	sets, err := c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 {
		t.Fatalf("sets %+v, %v", sets, err)
	}
	dir := c.v.Dir()
	open := func(p string) {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		ed.mu.Lock()
		ed.buffers[p], ed.version[p] = string(b), 1
		ed.mu.Unlock()
	}
	const report = "Margin/Reports/Ship invoice export.md"
	open(report)
	open(sets[0].Path)

	const renamed = "Tasks/Invoice CSV export.md"
	src, err := os.ReadFile(filepath.Join(dir, chaosTask))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, chaosTask), filepath.Join(dir, renamed)); err != nil {
		t.Fatal(err)
	}
	fp := edit.FingerprintOf(src)
	if err := c.rt.onChanges(ctx, []vault.Change{{Path: chaosTask, Kind: note.KindTask, Old: fp}, {Path: renamed, Kind: note.KindTask, New: fp}}); err != nil {
		t.Fatal(err)
	}
	c.wake(t)
	if a, err := c.rt.store.Agent(ctx, c.id); err != nil || a.OutputName != "Ship invoice export" {
		t.Errorf("agent with its report open: %+v, %v; want the old output name", a, err)
	}
	if _, err := os.Stat(filepath.Join(dir, report)); err != nil {
		t.Errorf("the open report moved: %v", err)
	}

	ed.mu.Lock()
	delete(ed.buffers, report)
	ed.mu.Unlock()
	c.wake(t)
	if a, err := c.rt.store.Agent(ctx, c.id); err != nil || a.OutputName != "Invoice CSV export" {
		t.Errorf("agent with its report closed: %+v, %v; want the new output name", a, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Margin/Reports/Invoice CSV export.md")); err != nil {
		t.Errorf("the closed report did not move: %v", err)
	}
	cs, err := c.rt.changes.Store().ChangeSet(ctx, sets[0].ID)
	if err != nil || cs.Path != sets[0].Path {
		t.Errorf("the open set: %+v, %v; want it at %s still", cs, err, sets[0].Path)
	}
	if _, err := os.Stat(filepath.Join(dir, sets[0].Path)); err != nil {
		t.Errorf("the open set's file: %v", err)
	}
}
