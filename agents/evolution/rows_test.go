package evolution

import (
	"database/sql"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault/store"
)

// The evolution tests write the task agents' rows as the task runtime's
// store does (its own tests cover that); the metrics read them back only
// through that store's methods.

// addAgent records an active agent of the task at taskPath.
func addAgent(t *testing.T, db *sql.DB, id, taskPath, outputName string, at time.Time) task.Agent {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO agents (id, task, output_name, output_key, task_fingerprint, lifecycle, created_at)
		VALUES (?, ?, ?, lower(?), '', 'active', ?)`, id, taskPath, outputName, outputName, store.Stamp(at)); err != nil {
		t.Fatal(err)
	}
	return task.Agent{ID: id, Task: taskPath, OutputName: outputName}
}

// startRun records a run of agent under template (name@version).
func startRun(t *testing.T, db *sql.DB, agent, key, template string, at time.Time) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRow(`INSERT INTO wake_runs (agent_id, run_key, reason, template, status, full_context, started_at)
		VALUES (?, ?, 'test', ?, 'started', 1, ?) RETURNING id`, agent, key, template, store.Stamp(at)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// finishRun records how a run ended, and the agent's last wake.
func finishRun(t *testing.T, db *sql.DB, agent string, run int64, status string, at time.Time) {
	t.Helper()
	if _, err := db.Exec(`UPDATE wake_runs SET status = ?, finished_at = ? WHERE id = ?`, status, store.Stamp(at), run); err != nil {
		t.Fatal(err)
	}
	q := `UPDATE agents SET last_wake = ? WHERE id = ?`
	if status == task.RunCompleted {
		q = `UPDATE agents SET wakes = wakes + 1, failures = 0, next_wake = '', last_wake = ?, template = 'task-agent@1' WHERE id = ?`
	}
	if _, err := db.Exec(q, store.Stamp(at), agent); err != nil {
		t.Fatal(err)
	}
}
