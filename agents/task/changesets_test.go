package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault/note"
)

// A task's change sets are listed under the path it has now: a set
// proposed before the task was renamed names the old path, and is found
// through the task's agent.
func TestRenamedTasksChangeSetsAreListedUnderItsNewPath(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	ctx := t.Context()
	a, err := c.rt.store.Agent(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask))
	if err != nil {
		t.Fatal(err)
	}
	n := note.Parse(chaosTask, src, note.Options{})
	args := `{"priority":"P0"}`
	if _, err := c.rt.store.db.ExecContext(ctx, `INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
		VALUES (?, 1, 'op', 'update_task_priority', ?, 'Set priority to P0', ?, '2026-11-22T09:00:00Z')`,
		a.ID, args, changes.ItemBase(n, "update_task_priority", json.RawMessage(args))); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.changes.Route(ctx, a.ID, changes.Owner{Task: a.Task, OutputName: a.OutputName}, 1, n); err != nil {
		t.Fatal(err)
	}
	const renamed = "Tasks/Ship the invoice export.md"
	if err := c.rt.store.moveTask(ctx, a.ID, renamed, ""); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{renamed, chaosTask} {
		sets, err := c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: p})
		if err != nil || len(sets) != 1 || sets[0].Task != chaosTask {
			t.Errorf("change sets of %s: %+v, %v; want the one proposed on %s", p, sets, err, chaosTask)
		}
	}
	if sets, err := c.rt.changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: "Tasks/Renew passport.md"}); err != nil || len(sets) != 0 {
		t.Errorf("change sets of another task: %+v, %v", sets, err)
	}
}
