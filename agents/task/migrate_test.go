package task

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/internal/legacy"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault/store"
)

// A database made by the step list from before change sets had a package
// of their own keeps its change sets, proposals and decisions: component
// "changes" finds its tables there already, and the schema is the one a
// new database gets.
func TestChangeSetsSurviveTheOldStepList(t *testing.T) {
	ctx := context.Background()
	old := stateDB(t)
	if err := store.Migrate(ctx, old, "agents", legacy.AgentsSteps); err != nil {
		t.Fatal(err)
	}
	at := store.Stamp(querytest.Now)
	for _, q := range []string{
		`INSERT INTO agents (id, task, lifecycle, created_at, output_name, output_key) VALUES ('a1', 'Tasks/Ship.md', 'active', '` + at + `', 'Ship', 'ship')`,
		`INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
			VALUES ('a1', 1, 'op1', 'update_task_priority', '{"priority":"P0"}', 'Set priority to P0', 'b', '` + at + `')`,
		`INSERT INTO change_sets (id, agent_id, task, run_id, path, status, created_at, expires_at) VALUES ('s1', 'a1', 'Tasks/Ship.md', 1, 'Margin/Changes/Ship/s1.md', 'partially-resolved', '` + at + `', '` + at + `')`,
		`INSERT INTO change_items (set_id, item, seq, tool, args, summary, base, field, status) VALUES
			('s1', 'c1', 0, 'update_task_estimate', '{"estimate":"2h"}', 'Set estimate to 2h', 'b', 'update_task_estimate', 'rejected'),
			('s1', 'c2', 1, 'update_task_due_date', '{"due_date":"2026-12-01"}', 'Set due date to 2026-12-01', 'b', 'update_task_due_date', 'pending')`,
		`INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
			VALUES ('a1', 'Tasks/Ship.md', 's1', 'c1', 'update_task_estimate', 'Set estimate to 2h', 'rejected', 'mine', 'rejected', '` + at + `')`,
	} {
		if _, err := old.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	st, err := OpenStore(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := changes.OpenStore(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ch.ChangeSet(ctx, "s1")
	if err != nil || cs.Status != changes.SetPartial || len(cs.Items) != 2 || cs.Items[1].Status != changes.ItemPending {
		t.Errorf("change set after the migration = %+v, %v", cs, err)
	}
	ds, err := ch.Decisions(ctx, changes.DecisionFilter{Agent: "a1"})
	if err != nil || len(ds) != 1 || ds[0].Reason != "mine" {
		t.Errorf("decisions after the migration = %+v, %v", ds, err)
	}
	if a, err := st.Agent(ctx, "a1"); err != nil || a.PendingChanges != 1 {
		t.Errorf("agent after the migration = %+v, %v; want 1 pending change", a, err)
	}
	var proposals int
	if err := old.QueryRowContext(ctx, `SELECT COUNT(*) FROM proposals WHERE agent_id = 'a1'`).Scan(&proposals); err != nil || proposals != 1 {
		t.Errorf("proposals after the migration = %d, %v", proposals, err)
	}

	fresh := stateDB(t)
	if _, err := OpenStore(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if got, want := schemaOf(t, old), schemaOf(t, fresh); got != want {
		t.Errorf("schema migrated from the old steps:\n%s\nwant, as a new database has it:\n%s", got, want)
	}
}

// schemaOf lists a database's tables and indexes: columns with their
// types, constraints and defaults, and what each index covers.
func schemaOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	type object struct{ kind, name, table string }
	var objects []object
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.kind, &o.name, &o.table); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, o)
	}
	rows.Close()
	var b strings.Builder
	for _, o := range objects {
		b.WriteString(o.kind + " " + o.name + " on " + o.table + ":")
		q := `SELECT name, type, "notnull", COALESCE(dflt_value, ''), pk FROM pragma_table_info(?)`
		if o.kind == "index" {
			q = `SELECT COALESCE(name, ''), '', 0, '', seqno FROM pragma_index_info(?)`
		}
		cols, err := db.Query(q, o.name)
		if err != nil {
			t.Fatal(err)
		}
		for cols.Next() {
			var name, typ, dflt string
			var notNull, pk int
			if err := cols.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			b.WriteString(" " + name + " " + typ + " " + dflt)
			if notNull == 1 {
				b.WriteString(" not null")
			}
			if pk > 0 {
				b.WriteString(" key")
			}
			b.WriteString(";")
		}
		cols.Close()
		b.WriteString("\n")
	}
	return b.String()
}
