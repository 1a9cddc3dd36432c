package agents

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/internal/kit"
	"github.com/margin-md/margin/agents/internal/legacy"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// The output name a new agent gets, given the agents before it.
func TestNewOutputName(t *testing.T) {
	for _, c := range []struct {
		name   string
		before []string
		task   string
		want   string
	}{
		{"a first task keeps its stem", nil, "Tasks/Work/Plan.md", "Plan"},
		{"a second one takes its folder", []string{"Tasks/Work/Plan.md"}, "Tasks/Home/Plan.md", "Plan (Home)"},
		{"names compare without case", []string{"Tasks/Work/plan.md"}, "Tasks/Home/Plan.md", "Plan (Home)"},
		{"in any language", []string{"Tasks/Work/Übersicht.md"}, "Tasks/Home/übersicht.md", "übersicht (Home)"},
		{"and whatever the encoding of an accent", []string{"Tasks/Work/\u00dcbersicht.md"}, "Tasks/Home/U\u0308bersicht.md", "U\u0308bersicht (Home)"},
		{"a taken folder name falls back to a number", []string{"Tasks/Work/Plan.md", "Tasks/Home/Plan.md"}, "Archive/Home/Plan.md", "Plan (2)"},
		{"a task at the root has no folder to take", []string{"Tasks/Plan.md"}, "Plan.md", "Plan (2)"},
		{"numbers skip taken names", []string{"Tasks/Plan.md", "Notes/Plan (2).md"}, "Plan.md", "Plan (3)"},
		{"a renamed task keeps its name", []string{"Tasks/Home/Plan.md>Tasks/Home/Garden.md"}, "Tasks/Work/Plan.md", "Plan (Work)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := stateDB(t)
			ctx := context.Background()
			st, err := OpenStore(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range c.before {
				from, to, renamed := strings.Cut(b, ">")
				a, err := st.createAgent(ctx, from, "", querytest.Now)
				if err != nil {
					t.Fatal(err)
				}
				if renamed {
					if err := st.moveTask(ctx, a.ID, to, ""); err != nil {
						t.Fatal(err)
					}
				}
			}
			a, err := st.createAgent(ctx, c.task, "", querytest.Now)
			if err != nil {
				t.Fatal(err)
			}
			if a.OutputName != c.want {
				t.Errorf("output name %q, want %q", a.OutputName, c.want)
			}
		})
	}
}

// Agents created before output names existed get them when the database
// is migrated: their stem, the oldest of a name keeping it, and the rest
// the name a new agent would get.
func TestMigrationBackfillsOutputNames(t *testing.T) {
	ctx := context.Background()
	db := stateDB(t)
	const beforeOutputNames = 2 // the agents' schema steps released without output_name
	if err := store.Migrate(ctx, db, "agents", legacy.AgentsSteps[:beforeOutputNames]); err != nil {
		t.Fatal(err)
	}
	day := func(n int) string { return kit.Stamp(time.Date(2026, 11, n, 9, 0, 0, 0, time.UTC)) }
	// Inserted out of age order: the oldest keeps the stem, whatever the
	// order of the rows.
	existing := []struct{ id, task, created, want string }{
		{"a2", "Tasks/Home/Plan.md", day(2), "Plan (Home)"},
		{"a1", "Tasks/Work/Plan.md", day(1), "Plan"},
		{"a0", "Notes/Plan (2).md", day(3), "Plan (2)"},
		{"a3", "Archive/Home/Plan.md", day(4), "Plan (3)"},
		{"a4", "Plan.md", day(5), "Plan (4)"},
		{"a5", "Tasks/Ship.md", day(1), "Ship"},
		{"a6", "Tasks/Home/ship.md", day(2), "ship (Home)"},
		{"a7", "Tasks/Renew passport.md", day(1), "Renew passport"},
		{"a8", "Tasks/Übersicht.md", day(1), "Übersicht"},
	}
	for _, a := range existing {
		if _, err := db.ExecContext(ctx, `INSERT INTO agents (id, task, lifecycle, created_at) VALUES (?, ?, 'active', ?)`,
			a.id, a.task, a.created); err != nil {
			t.Fatal(err)
		}
	}

	st, err := OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range existing {
		got, err := st.Agent(ctx, a.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.OutputName != a.want {
			t.Errorf("%s: output name %q, want %q", a.task, got.OutputName, a.want)
		}
	}
	later, err := st.createAgent(ctx, "Later/Home/Plan.md", "", querytest.Now)
	if err != nil {
		t.Fatal(err)
	}
	if later.OutputName != "Plan (5)" {
		t.Errorf("an agent created after the migration: output name %q, want \"Plan (5)\"", later.OutputName)
	}
	// Names from before output_key compare by it too.
	if a, err := st.createAgent(ctx, "Tasks/Home/übersicht.md", "", querytest.Now); err != nil || a.OutputName != "übersicht (Home)" {
		t.Errorf("a case variant of a migrated name: output name %q (%v), want \"übersicht (Home)\"", a.OutputName, err)
	}
}

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
	at := kit.Stamp(querytest.Now)
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
	lib := templates.New(v, opts.TemplatesOptions())
	evo, err := NewEvolution(ctx, v, lib, nil, opts) // migrates the agents' tables
	if err != nil {
		t.Fatal(err)
	}
	st, err := OpenStore(ctx, v.DB())
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.startRun(ctx, "a1", "k3", "new", "task-agent@1", false, querytest.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.finishRun(ctx, "a1", run, runEnd{status: RunCompleted}, nil, "task-agent@1", querytest.Now); err != nil {
		t.Fatal(err)
	}
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
	m, err := evo.metrics(ctx, active)
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

// vault/status counts agents on every call: the count must come from an
// index, not from every agent's row.
func TestLifecycleCountsReadAnIndex(t *testing.T) {
	ctx := context.Background()
	db := stateDB(t)
	st, err := OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range []string{"Tasks/A.md", "Tasks/B.md", "Tasks/C.md"} {
		if _, err := st.createAgent(ctx, task, "", querytest.Now); err != nil {
			t.Fatal(err)
		}
	}
	var id, parent, notUsed int
	var plan string
	if err := db.QueryRowContext(ctx, `EXPLAIN QUERY PLAN `+lifecycleCountsSQL).Scan(&id, &parent, &notUsed, &plan); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "COVERING INDEX") {
		t.Errorf("counting agents by lifecycle: %q, want a covering index", plan)
	}
	counts, err := st.lifecycleCounts(ctx)
	if err != nil || counts[Active] != 3 {
		t.Errorf("lifecycleCounts = %v, %v; want 3 active", counts, err)
	}
}

// stateDB opens a fresh state database, closed when the test ends.
func stateDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
