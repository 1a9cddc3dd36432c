package agents

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrChangeSetNotFound is returned for a change set (or an item of one)
// that does not exist; it matches ErrNotFound and vault.ErrNotFound.
var ErrChangeSetNotFound = fmt.Errorf("change set: %w", ErrNotFound)

// routedProposal is a proposal waiting to go into a change set.
type routedProposal struct {
	id      int64
	run     int64
	tool    string
	args    json.RawMessage
	summary string
	base    string
}

// pendingProposals returns the agent's proposals not yet in a change set,
// oldest first: this run's, and any an interrupted run left behind.
func (s *Store) pendingProposals(ctx context.Context, agent string) ([]routedProposal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, run_id, tool, args, summary, base FROM proposals
		WHERE agent_id = ? AND status = 'pending' ORDER BY id`, agent)
	if err != nil {
		return nil, fmt.Errorf("reading the proposals of agent %s: %w", agent, err)
	}
	defer rows.Close()
	var out []routedProposal
	for rows.Next() {
		var p routedProposal
		var args string
		if err := rows.Scan(&p.id, &p.run, &p.tool, &args, &p.summary, &p.base); err != nil {
			return nil, fmt.Errorf("reading the proposals of agent %s: %w", agent, err)
		}
		p.args = json.RawMessage(args)
		out = append(out, p)
	}
	return out, rows.Err()
}

// addChangeSets stores new change sets, marks the proposals they came from
// routed and the older open items they supersede superseded, in one
// transaction. It returns the ids of the older sets that lost items.
func (s *Store) addChangeSets(ctx context.Context, sets []ChangeSet, proposals []int64, now time.Time) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("storing change sets: %w", err)
	}
	defer tx.Rollback()
	touched := map[string]bool{}
	var older []string
	for _, cs := range sets {
		for _, it := range cs.Items {
			rows, err := tx.QueryContext(ctx, `UPDATE change_items SET status = 'superseded', decided_at = ?
				WHERE field = ? AND status IN ('pending', 'deferred') AND set_id IN
					(SELECT id FROM change_sets WHERE agent_id = ? AND status IN ('pending', 'partially-resolved'))
				RETURNING set_id`, stamp(now), it.field, cs.Agent)
			if err != nil {
				return nil, fmt.Errorf("superseding older items: %w", err)
			}
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return nil, fmt.Errorf("superseding older items: %w", err)
				}
				if !touched[id] {
					touched[id] = true
					older = append(older, id)
				}
			}
			rows.Close()
		}
	}
	for _, cs := range sets {
		if _, err := tx.ExecContext(ctx, `INSERT INTO change_sets (id, agent_id, task, run_id, path, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cs.ID, cs.Agent, cs.Task, cs.Run, cs.Path, cs.Status, stamp(cs.Created), stamp(cs.Expires)); err != nil {
			return nil, fmt.Errorf("storing change set %s: %w", cs.ID, err)
		}
		for i, it := range cs.Items {
			if _, err := tx.ExecContext(ctx, `INSERT INTO change_items (set_id, item, seq, tool, args, summary, base, field, status)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, cs.ID, it.ID, i, it.Tool, string(it.Args), it.Summary, it.Base, it.field, it.Status); err != nil {
				return nil, fmt.Errorf("storing change set %s: %w", cs.ID, err)
			}
		}
	}
	for _, id := range proposals {
		if _, err := tx.ExecContext(ctx, `UPDATE proposals SET status = 'routed' WHERE id = ?`, id); err != nil {
			return nil, fmt.Errorf("routing proposal %d: %w", id, err)
		}
	}
	for _, id := range older {
		if err := refreshSetStatus(ctx, tx, id); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("storing change sets: %w", err)
	}
	return older, nil
}

type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// refreshSetStatus recomputes a set's status from its items.
func refreshSetStatus(ctx context.Context, q execQuerier, id string) error {
	items, err := scanItems(ctx, q, id)
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE change_sets SET status = ? WHERE id = ? AND status <> 'expired'`, setStatus(items), id); err != nil {
		return fmt.Errorf("updating change set %s: %w", id, err)
	}
	return nil
}

func scanItems(ctx context.Context, q execQuerier, id string) ([]ChangeItem, error) {
	rows, err := q.QueryContext(ctx, `SELECT item, tool, args, summary, base, field, status, reason, detail, decided_at
		FROM change_items WHERE set_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("reading change set %s: %w", id, err)
	}
	defer rows.Close()
	items := []ChangeItem{}
	for rows.Next() {
		var it ChangeItem
		var args, decided string
		if err := rows.Scan(&it.ID, &it.Tool, &args, &it.Summary, &it.Base, &it.field, &it.Status, &it.Reason, &it.Detail, &decided); err != nil {
			return nil, fmt.Errorf("reading change set %s: %w", id, err)
		}
		it.Args, it.Decided = json.RawMessage(args), unstamp(decided)
		items = append(items, it)
	}
	return items, rows.Err()
}

// openItems returns the agent's items still waiting for a decision.
func (s *Store) openItems(ctx context.Context, agent string) ([]ChangeItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT i.field, i.args FROM change_items i JOIN change_sets s ON s.id = i.set_id
		WHERE s.agent_id = ? AND s.status IN ('pending', 'partially-resolved') AND i.status IN ('pending', 'deferred')`, agent)
	if err != nil {
		return nil, fmt.Errorf("reading the open items of agent %s: %w", agent, err)
	}
	defer rows.Close()
	var out []ChangeItem
	for rows.Next() {
		var it ChangeItem
		var args string
		if err := rows.Scan(&it.field, &args); err != nil {
			return nil, fmt.Errorf("reading the open items of agent %s: %w", agent, err)
		}
		it.Args = json.RawMessage(args)
		out = append(out, it)
	}
	return out, rows.Err()
}

const setColumns = `id, agent_id, task, run_id, path, status, created_at, expires_at, fingerprint`

func scanSet(row interface{ Scan(...any) error }) (ChangeSet, error) {
	var cs ChangeSet
	var created, expires string
	err := row.Scan(&cs.ID, &cs.Agent, &cs.Task, &cs.Run, &cs.Path, &cs.Status, &created, &expires, &cs.fingerprint)
	cs.Created, cs.Expires = unstamp(created), unstamp(expires)
	return cs, err
}

// ChangeSet returns the change set with id, items included.
func (s *Store) ChangeSet(ctx context.Context, id string) (ChangeSet, error) {
	cs, err := scanSet(s.db.QueryRowContext(ctx, `SELECT `+setColumns+` FROM change_sets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return cs, fmt.Errorf("%w: %s", ErrChangeSetNotFound, id)
	}
	if err != nil {
		return cs, fmt.Errorf("reading change set %s: %w", id, err)
	}
	cs.Items, err = scanItems(ctx, s.db, id)
	return cs, err
}

// ChangeSetAt returns the change set whose file is at path; ok is false for none.
func (s *Store) ChangeSetAt(ctx context.Context, path string) (ChangeSet, bool, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM change_sets WHERE path = ?`, path).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return ChangeSet{}, false, nil
	}
	if err != nil {
		return ChangeSet{}, false, fmt.Errorf("looking up the change set at %s: %w", path, err)
	}
	cs, err := s.ChangeSet(ctx, id)
	return cs, err == nil, err
}

// ChangeSetFilter selects change sets. An empty Status lists the open ones
// (pending and partially resolved); "all" lists every one.
type ChangeSetFilter struct {
	Task   string
	Status string
}

// ChangeSets lists change sets, newest first.
func (s *Store) ChangeSets(ctx context.Context, f ChangeSetFilter) ([]ChangeSet, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+setColumns+` FROM change_sets
		WHERE (? = '' OR task = ? OR agent_id IN (SELECT id FROM agents WHERE task = ?))
		  AND (? = 'all' OR (? = '' AND status IN ('pending', 'partially-resolved')) OR status = ?)
		ORDER BY created_at DESC, id`, f.Task, f.Task, f.Task, f.Status, f.Status, f.Status)
	if err != nil {
		return nil, fmt.Errorf("listing change sets: %w", err)
	}
	out := []ChangeSet{}
	for rows.Next() {
		cs, err := scanSet(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing change sets: %w", err)
		}
		out = append(out, cs)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing change sets: %w", err)
	}
	for i := range out {
		if out[i].Items, err = scanItems(ctx, s.db, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expiring returns the open sets whose expiry has passed.
func (s *Store) expiring(ctx context.Context, now time.Time) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM change_sets
		WHERE status IN ('pending', 'partially-resolved') AND expires_at <= ?`, stamp(now))
	if err != nil {
		return nil, fmt.Errorf("looking for expired change sets: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("looking for expired change sets: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (s *Store) expire(ctx context.Context, id string, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("expiring change set %s: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE change_items SET status = 'expired', decided_at = ?
		WHERE set_id = ? AND status IN ('pending', 'deferred')`, stamp(now), id); err != nil {
		return fmt.Errorf("expiring change set %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE change_sets SET status = 'expired' WHERE id = ?`, id); err != nil {
		return fmt.Errorf("expiring change set %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("expiring change set %s: %w", id, err)
	}
	return nil
}

// unwrittenSets lists the change sets whose file margin has not recorded
// writing (see restoreSetFiles).
func (s *Store) unwrittenSets(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM change_sets WHERE fingerprint = '' ORDER BY created_at`)
	if err != nil {
		return nil, fmt.Errorf("listing change sets without a file: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("listing change sets without a file: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (s *Store) setFileFingerprint(ctx context.Context, id, fp string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE change_sets SET fingerprint = ? WHERE id = ?`, fp, id); err != nil {
		return fmt.Errorf("recording the file of change set %s: %w", id, err)
	}
	return nil
}

// recordDecisions stores decided items and their ledger rows, and the
// set's new status, in one transaction.
func (s *Store) recordDecisions(ctx context.Context, cs ChangeSet, decided []ChangeItem, ledger []Decision) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording decisions on %s: %w", cs.ID, err)
	}
	defer tx.Rollback()
	for _, it := range decided {
		if _, err := tx.ExecContext(ctx, `UPDATE change_items SET status = ?, reason = ?, detail = ?, decided_at = ?
			WHERE set_id = ? AND item = ?`, it.Status, it.Reason, it.Detail, stamp(it.Decided), cs.ID, it.ID); err != nil {
			return fmt.Errorf("recording decisions on %s: %w", cs.ID, err)
		}
	}
	for _, d := range ledger {
		if _, err := tx.ExecContext(ctx, `INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.Agent, d.Task, d.ChangeSet, d.Item, d.Tool, d.Summary, d.Verdict, d.Reason, d.Outcome, stamp(d.Created)); err != nil {
			return fmt.Errorf("recording decisions on %s: %w", cs.ID, err)
		}
	}
	if err := refreshSetStatus(ctx, tx, cs.ID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording decisions on %s: %w", cs.ID, err)
	}
	return nil
}

// DecisionFilter selects decisions: by agent, or by task path.
type DecisionFilter struct {
	Agent string
	Task  string
	Limit int
}

// Decisions returns decisions, newest first.
func (s *Store) Decisions(ctx context.Context, f DecisionFilter) ([]Decision, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at
		FROM decisions WHERE (? = '' OR agent_id = ?) AND (? = '' OR task = ?) ORDER BY id DESC LIMIT ?`,
		f.Agent, f.Agent, f.Task, f.Task, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("listing decisions: %w", err)
	}
	defer rows.Close()
	out := []Decision{}
	for rows.Next() {
		var d Decision
		var created string
		if err := rows.Scan(&d.ID, &d.Agent, &d.Task, &d.ChangeSet, &d.Item, &d.Tool, &d.Summary, &d.Verdict, &d.Reason, &d.Outcome, &created); err != nil {
			return nil, fmt.Errorf("listing decisions: %w", err)
		}
		d.Created = unstamp(created)
		out = append(out, d)
	}
	return out, rows.Err()
}
