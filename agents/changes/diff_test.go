package changes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// oneAgent is a vault with one task agent, on the client rig's passport task.
type oneAgent struct{ noAgents }

func (oneAgent) Owner(context.Context, string) (Owner, error) {
	return Owner{Task: "Tasks/Renew passport.md", OutputName: "Renew passport"}, nil
}
func (oneAgent) RunCause(context.Context, int64) (string, string, error) { return "", "", nil }

// An agent's change set file shows under its lines what each item would
// change in the task, as a client's does; ticking a line with the diffs
// there still applies that item, and only it.
func TestAgentSetShowsEachItemsDiff(t *testing.T) {
	c, dir, _ := clientRig(t)
	c.agents = oneAgent{noAgents{&[]string{}}}
	ctx := t.Context()
	const task = "Tasks/Renew passport.md"
	n := note.Parse(task, []byte(clientTask), note.Options{TaskFolders: c.v.Rules.TaskFolders})
	tx, err := c.store.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ tool, args, summary string }{
		{"update_task_priority", `{"priority":"P1"}`, "Raise the priority to P1"},
		{"add_multiple_checklist_items", `{"title":"Book the appointment"}`, `Add checklist item "Book the appointment"`},
	} {
		tool := ExplodedTool(p.tool)
		if err := AddProposals(ctx, tx, "a1", 1, "op-"+tool, p.tool, time.Now(),
			[]Proposal{{Args: json.RawMessage(p.args), Summary: p.summary, Base: ItemBase(n, tool, json.RawMessage(p.args))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.Route(ctx, "a1", Owner{Task: task, OutputName: "Renew passport"}, 1, n); err != nil {
		t.Fatal(err)
	}
	sets, err := c.ChangeSets(ctx, ChangeSetFilter{Agent: "a1"})
	if err != nil || len(sets) != 1 {
		t.Fatalf("sets = %+v, %v", sets, err)
	}
	cs := sets[0]
	file := readFile(t, dir, cs.Path)
	for _, want := range []string{
		"## What c1 changes\n\n```diff\n--- a/" + task + "\n+++ b/" + task + "\n@@ -1,6 +1,6 @@\n ---\n status: open\n-priority: P2\n+priority: P1\n ---\n # Renew passport\n \n```\n",
		"## What c2 changes\n\n```diff\n",
		"\n ## Checklist\n - [ ] Photos\n+- [ ] Book the appointment\n```\n",
	} {
		if !strings.Contains(file, want) {
			t.Errorf("the agent's set file lacks %q:\n%s", want, file)
		}
	}

	writeFile(t, dir, cs.Path, strings.Replace(file, "- [ ] Raise the priority to P1 ^c1", "- [x] Raise the priority to P1 ^c1", 1))
	if err := c.DecideFile(ctx, cs.Path); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, task); got != strings.Replace(clientTask, "priority: P2", "priority: P1", 1) {
		t.Errorf("the task after ticking c1:\n%s", got)
	}
	got, err := c.store.ChangeSet(ctx, cs.ID)
	if err != nil || got.Items[0].Status != ItemConfirmed || got.Items[1].Status != ItemPending {
		t.Errorf("items after ticking c1: %+v, %v", got.Items, err)
	}
}

// A renamed task's change sets follow it: the agent's, and a client's
// change of a task field, in the database, the ledger and the files; a
// client's edit of the note's text stays on the path it was proposed on.
func TestFollowTaskMovesTheTasksSets(t *testing.T) {
	c, dir, _ := clientRig(t)
	c.agents = oneAgent{noAgents{&[]string{}}}
	ctx := t.Context()
	const task, renamed = "Tasks/Renew passport.md", "Tasks/Passport.md"
	field, err := c.ProposeTaskChange(ctx, "Cursor", task, "priority", "P1", "it is due")
	if err != nil {
		t.Fatal(err)
	}
	text, err := c.ProposeEdit(ctx, "Cursor", EditArgs{Path: task, Kind: EditAppend, Text: "- [ ] Sign", Reason: "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, field.ID, []ItemDecision{{Item: "c1", Verdict: Deferred}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(ctx, text.ID, []ItemDecision{{Item: "c1", Verdict: Rejected}}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, renamed, clientTask)
	if err := os.Remove(filepath.Join(dir, task)); err != nil {
		t.Fatal(err)
	}
	if err := c.FollowTask(ctx, "a1", task, renamed); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{field.ID: renamed, text.ID: task} {
		cs, err := c.store.ChangeSet(ctx, id)
		if err != nil || cs.Task != want {
			t.Errorf("set %s on %q (%v), want %s", id, cs.Task, err, want)
		}
		if f := readFile(t, dir, cs.Path); !strings.Contains(f, "task: \"[["+strings.TrimSuffix(want, ".md")+"]]\"\n") {
			t.Errorf("the file of set %s:\n%s", id, f)
		}
	}
	ds, err := c.store.Decisions(ctx, DecisionFilter{Task: renamed})
	if err != nil || len(ds) != 1 || ds[0].ChangeSet != field.ID {
		t.Errorf("decisions on %s: %+v, %v; want the one on the field change", renamed, ds, err)
	}
	if _, err := c.Decide(ctx, field.ID, []ItemDecision{{Item: "c1", Verdict: Confirmed}}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, renamed); got != strings.Replace(clientTask, "priority: P2", "priority: P1", 1) {
		t.Errorf("the renamed task after confirming the client's change:\n%s", got)
	}
}
