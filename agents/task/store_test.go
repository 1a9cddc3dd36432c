package task

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/internal/legacy"
	"github.com/margin-md/margin/agents/query/querytest"
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
	day := func(n int) string { return store.Stamp(time.Date(2026, 11, n, 9, 0, 0, 0, time.UTC)) }
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
	counts, err := st.LifecycleCounts(ctx)
	if err != nil || counts[Active] != 3 {
		t.Errorf("LifecycleCounts = %v, %v; want 3 active", counts, err)
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
