package changes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// ErrChangeSetNotFound is returned for a change set (or an item of one)
// that does not exist; it matches vault.ErrNotFound.
var ErrChangeSetNotFound = fmt.Errorf("change set %w", vault.ErrNotFound)

// schema holds the change sets' migration steps. Append, never edit.
//
// Step 1 creates the tables only where they are missing: they were the
// task agents' (component "agents", steps 1 and 2) until change sets got
// a package of their own, so databases from before then have them, and
// new ones get them here.
var schema = []string{`
-- Deferred tool calls, one row per change item (checklist tools are
-- exploded), waiting for the change-set flow to route them to a person.
CREATE TABLE IF NOT EXISTS proposals (
	id           INTEGER PRIMARY KEY,
	agent_id     TEXT    NOT NULL,
	run_id       INTEGER NOT NULL,
	operation_id TEXT    NOT NULL,
	tool         TEXT    NOT NULL,
	args         TEXT    NOT NULL,
	summary      TEXT    NOT NULL,
	base         TEXT    NOT NULL, -- fingerprint of the task note the item was proposed against
	status       TEXT    NOT NULL DEFAULT 'pending',
	created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS proposals_agent ON proposals(agent_id, status);

-- Change sets: a wake's proposals routed to a person (proposals.status
-- becomes 'routed'). The file under Margin/Changes shows them; these rows
-- are the truth the file is checked against.
CREATE TABLE IF NOT EXISTS change_sets (
	id          TEXT    PRIMARY KEY,
	agent_id    TEXT    NOT NULL,
	task        TEXT    NOT NULL, -- the task path when proposed; applying uses the agent's current one
	run_id      INTEGER NOT NULL,
	path        TEXT    NOT NULL UNIQUE,
	status      TEXT    NOT NULL,
	created_at  TEXT    NOT NULL,
	expires_at  TEXT    NOT NULL,
	fingerprint TEXT    NOT NULL DEFAULT '' -- the file as margin last wrote it
);
CREATE INDEX IF NOT EXISTS change_sets_agent ON change_sets(agent_id, status);

CREATE TABLE IF NOT EXISTS change_items (
	set_id     TEXT    NOT NULL,
	item       TEXT    NOT NULL, -- block id: c1, c2, ...
	seq        INTEGER NOT NULL,
	tool       TEXT    NOT NULL,
	args       TEXT    NOT NULL,
	summary    TEXT    NOT NULL,
	base       TEXT    NOT NULL,
	field      TEXT    NOT NULL, -- what it targets: a newer proposal for it supersedes this one
	status     TEXT    NOT NULL,
	reason     TEXT    NOT NULL DEFAULT '',
	detail     TEXT    NOT NULL DEFAULT '',
	decided_at TEXT    NOT NULL DEFAULT '',
	PRIMARY KEY (set_id, item)
) WITHOUT ROWID;

-- The decisions ledger: every verdict a person gave, fed back to the agent.
CREATE TABLE IF NOT EXISTS decisions (
	id         INTEGER PRIMARY KEY,
	agent_id   TEXT    NOT NULL,
	task       TEXT    NOT NULL,
	set_id     TEXT    NOT NULL,
	item       TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	summary    TEXT    NOT NULL,
	verdict    TEXT    NOT NULL,
	reason     TEXT    NOT NULL DEFAULT '',
	outcome    TEXT    NOT NULL,
	created_at TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_agent ON decisions(agent_id, id);
CREATE INDEX IF NOT EXISTS decisions_task ON decisions(task, id);
`}

// Store reads and writes the change sets' tables. It is safe for concurrent use.
type Store struct {
	db *sql.DB
}

// OpenStore migrates the change sets' tables in db, the vault's state database.
func OpenStore(ctx context.Context, db *sql.DB) (*Store, error) {
	if err := store.Migrate(ctx, db, "changes", schema); err != nil {
		return nil, fmt.Errorf("opening the change sets: %w", err)
	}
	return &Store{db: db}, nil
}

// AddProposals records the change items of one deferred tool call as
// proposals waiting for a change set, in tx: the task agents' store
// records the call and its proposals in one transaction.
func AddProposals(ctx context.Context, tx *sql.Tx, agent string, run int64, op, tool string, created time.Time, ps []Proposal) error {
	for _, p := range ps {
		if _, err := tx.ExecContext(ctx, `INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, agent, run, op, tool, string(p.Args), p.Summary, p.Base, store.Stamp(created)); err != nil {
			return fmt.Errorf("recording a proposal of %s: %w", tool, err)
		}
	}
	return nil
}

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
				RETURNING set_id`, store.Stamp(now), it.field, cs.Agent)
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
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, cs.ID, cs.Agent, cs.Task, cs.Run, cs.Path, cs.Status, store.Stamp(cs.Created), store.Stamp(cs.Expires)); err != nil {
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
		it.Args, it.Decided = json.RawMessage(args), store.Unstamp(decided)
		items = append(items, it)
	}
	return items, rows.Err()
}

// OpenItems returns the agent's items still waiting for a decision.
func (s *Store) OpenItems(ctx context.Context, agent string) ([]ChangeItem, error) {
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
	cs.Created, cs.Expires = store.Unstamp(created), store.Unstamp(expires)
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
// (pending and partially resolved); "all" lists every one. Task selects
// the sets proposed on the task note at that path and Agent one agent's;
// with both, a set either selects is listed. Changes.ChangeSets fills in
// Agent for a Task, so that a renamed task's older sets are listed too.
type ChangeSetFilter struct {
	Task   string
	Agent  string
	Status string
}

// ChangeSets lists change sets, newest first.
func (s *Store) ChangeSets(ctx context.Context, f ChangeSetFilter) ([]ChangeSet, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+setColumns+` FROM change_sets
		WHERE (? = '' AND ? = '' OR task = ? OR agent_id = ?)
		  AND (? = 'all' OR (? = '' AND status IN ('pending', 'partially-resolved')) OR status = ?)
		ORDER BY created_at DESC, id`, f.Task, f.Agent, f.Task, f.Agent, f.Status, f.Status, f.Status)
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
		WHERE status IN ('pending', 'partially-resolved') AND expires_at <= ?`, store.Stamp(now))
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
		WHERE set_id = ? AND status IN ('pending', 'deferred')`, store.Stamp(now), id); err != nil {
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
// writing (see Changes.Restore).
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
			WHERE set_id = ? AND item = ?`, it.Status, it.Reason, it.Detail, store.Stamp(it.Decided), cs.ID, it.ID); err != nil {
			return fmt.Errorf("recording decisions on %s: %w", cs.ID, err)
		}
	}
	for _, d := range ledger {
		if _, err := tx.ExecContext(ctx, `INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, d.Agent, d.Task, d.ChangeSet, d.Item, d.Tool, d.Summary, d.Verdict, d.Reason, d.Outcome, store.Stamp(d.Created)); err != nil {
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
		d.Created = store.Unstamp(created)
		out = append(out, d)
	}
	return out, rows.Err()
}

// DecisionTally counts the verdicts on one tool's items proposed by one
// wake run (0 when the set is gone).
type DecisionTally struct {
	Tool                          string
	Run                           int64
	Confirmed, Rejected, Deferred int
}

// DecisionTallies counts the verdicts in the decisions ledger by tool and
// by the run that proposed the item; an MCP client's are not the agents'
// and are left out.
func (s *Store) DecisionTallies(ctx context.Context) ([]DecisionTally, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.tool, COALESCE(s.run_id, 0), COALESCE(SUM(d.verdict = 'confirmed'), 0),
		COALESCE(SUM(d.verdict = 'rejected'), 0), COALESCE(SUM(d.verdict = 'deferred'), 0)
		FROM decisions d LEFT JOIN change_sets s ON s.id = d.set_id
		WHERE d.agent_id NOT LIKE 'mcp:%'
		GROUP BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("counting decisions: %w", err)
	}
	defer rows.Close()
	var out []DecisionTally
	for rows.Next() {
		var d DecisionTally
		if err := rows.Scan(&d.Tool, &d.Run, &d.Confirmed, &d.Rejected, &d.Deferred); err != nil {
			return nil, fmt.Errorf("counting decisions: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// ReasonedRejection is a rejection a person gave a reason for, with the
// run that proposed the item (0 when the set is gone).
type ReasonedRejection struct {
	Decision
	Run int64
}

// ReasonedRejections returns the latest rejections with a reason of the
// agents' items, newest first, at most limit.
func (s *Store) ReasonedRejections(ctx context.Context, limit int) ([]ReasonedRejection, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT d.tool, d.summary, d.reason, d.created_at, COALESCE(s.run_id, 0)
		FROM decisions d LEFT JOIN change_sets s ON s.id = d.set_id
		WHERE d.verdict = 'rejected' AND d.reason <> '' AND d.agent_id NOT LIKE 'mcp:%' ORDER BY d.id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading rejections: %w", err)
	}
	defer rows.Close()
	var out []ReasonedRejection
	for rows.Next() {
		var r ReasonedRejection
		var at string
		if err := rows.Scan(&r.Tool, &r.Summary, &r.Reason, &at, &r.Run); err != nil {
			return nil, fmt.Errorf("reading rejections: %w", err)
		}
		r.Created = store.Unstamp(at)
		out = append(out, r)
	}
	return out, rows.Err()
}

// OpenItemCounts counts the items waiting for a person's decision (pending
// or deferred, in an open set) by agent: one agent's, or every agent's
// when agent is "".
func (s *Store) OpenItemCounts(ctx context.Context, agent string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.agent_id, COUNT(*) FROM change_items i JOIN change_sets s ON s.id = i.set_id
		WHERE (? = '' OR s.agent_id = ?) AND s.status IN ('pending', 'partially-resolved') AND i.status IN ('pending', 'deferred')
		GROUP BY s.agent_id`, agent, agent)
	if err != nil {
		return nil, fmt.Errorf("counting open change items: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("counting open change items: %w", err)
		}
		out[id] = n
	}
	return out, rows.Err()
}
