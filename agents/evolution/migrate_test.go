package evolution

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/internal/legacy"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// Runs from before margin recorded their template version keep an
// unknown (empty) version when the database is migrated: the evolution
// metrics count them, and the decisions on what they proposed, in the
// all-versions totals only, never as a version's.
func TestMigrationLeavesTheVersionOfOldRunsUnknown(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, filepath.Join(dir, ".margin", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	const beforeRunVersions = 3 // the agents' schema steps released without wake_runs.template
	if err := store.Migrate(ctx, db, "agents", legacy.AgentsSteps[:beforeRunVersions]); err != nil {
		t.Fatal(err)
	}
	at := store.Stamp(querytest.Now)
	for _, q := range []string{
		`INSERT INTO agents (id, task, lifecycle, created_at, template, output_name) VALUES ('a1', 'Tasks/Ship.md', 'active', '` + at + `', 'task-agent@1', 'Ship')`,
		`INSERT INTO wake_runs (id, agent_id, run_key, reason, status, started_at) VALUES (1, 'a1', 'k1', 'old', 'completed', '` + at + `')`,
		`INSERT INTO wake_runs (id, agent_id, run_key, reason, status, started_at) VALUES (2, 'a1', 'k2', 'old', 'failed', '` + at + `')`,
		`INSERT INTO change_sets (id, agent_id, task, run_id, path, status, created_at, expires_at) VALUES ('s1', 'a1', 'Tasks/Ship.md', 1, 'Margin/Changes/s1.md', 'resolved', '` + at + `', '` + at + `')`,
		`INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
			VALUES ('a1', 'Tasks/Ship.md', 's1', 'c1', 'update_task_estimate', 'Set estimate to 2h', 'rejected', 'estimates are mine', 'rejected', '` + at + `')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	opts := Options{Now: func() time.Time { return querytest.Now }}
	lib := templates.New(libraryVault(v), templates.Options{Now: opts.Now})
	evo, err := newEvolution(ctx, v, lib, nil, opts) // opening its stores migrates the agents' tables
	if err != nil {
		t.Fatal(err)
	}
	st, err := task.OpenStore(ctx, v.DB())
	if err != nil {
		t.Fatal(err)
	}
	run := startRun(t, v.DB(), "a1", "k3", "task-agent@1", querytest.Now)
	finishRun(t, v.DB(), "a1", run, task.RunCompleted, querytest.Now)
	act, err := st.Activity(ctx, "a1", 10)
	if err != nil {
		t.Fatal(err)
	}
	var versions []string
	for _, r := range act.Runs {
		versions = append(versions, r.Template)
	}
	if want := []string{"task-agent@1", "", ""}; !slices.Equal(versions, want) {
		t.Errorf("run versions, newest first = %q, want %q", versions, want)
	}

	active, err := lib.Active(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	m, err := evo.Metrics(ctx, active)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Versions) != 1 || m.Versions[0].Version != 1 || m.Versions[0].Wakes != 1 || m.Versions[0].Failed != 0 || len(m.Versions[0].Tools) != 0 {
		t.Errorf("v1 = %+v, want only the run after the migration", m.Versions)
	}
	if m.Wakes != 3 || m.Failed != 1 || len(m.Tools) != 1 || m.Tools[0].Rejected != 1 {
		t.Errorf("all versions = %+v, want the old runs and their decision too", m.Tally)
	}
	if len(m.Rejections) != 1 || m.Rejections[0].Version != 0 {
		t.Errorf("rejections = %+v, want one of unknown version", m.Rejections)
	}
}
