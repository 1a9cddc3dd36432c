package task

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// ErrNotFound is returned for an agent that does not exist. It matches
// vault.ErrNotFound, so callers map both the same way.
var ErrNotFound = fmt.Errorf("agent %w", vault.ErrNotFound)

// Lifecycle is where an agent stands.
type Lifecycle string

const (
	Active    Lifecycle = "active"    // wakes on changes, timers and requests
	Dormant   Lifecycle = "dormant"   // paused, its task deleted, or too many failures; wakes only on request after resume
	Destroyed Lifecycle = "destroyed" // gone for good; kept so auto_create does not bring it back
)

// Run statuses, as stored.
const (
	RunStarted    = "started"
	RunCompleted  = "completed"
	RunIncomplete = "incomplete" // turns ran out before update_report; the previous report stands
	RunFailed     = "failed"
	RunOffline    = "offline" // the model was away: the offline report was written, and the wake waits for the model
)

// Agent is one task agent as stored.
type Agent struct {
	ID             string    `json:"id"`
	Task           string    `json:"task"`
	OutputName     string    `json:"outputName"` // names its report, journal and change sets; see newOutputName
	Lifecycle      Lifecycle `json:"lifecycle"`
	DormantReason  string    `json:"dormantReason,omitempty"`
	Created        time.Time `json:"created"`
	LastWake       time.Time `json:"lastWake"`
	NextWake       time.Time `json:"nextWake"`
	Failures       int       `json:"failures"`
	Wakes          int       `json:"wakes"`
	Template       string    `json:"template"`
	PendingChanges int       `json:"pendingChanges"`
	// Language is the language of the task's notes as the agent found it
	// (set_task_language), "" when it has not; the task note is not
	// changed for it.
	Language string `json:"language,omitempty"`

	taskFingerprint   string
	reportFingerprint string
	reportGenerator   string
}

// Store reads and writes the agents' tables. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	changes *changes.Store // counts an agent's open change items
	// reportTask, when set, reads the task an existing report file says it
	// is about ("" when there is none). A state database rebuilt from
	// scratch hands names out again, and a new agent must not take over,
	// and overwrite, the outputs an earlier agent wrote for another task.
	reportTask func(outputName string) string
}

// OpenStore migrates the agents' tables in db, the vault's state
// database, and the change sets' (an agent's record counts its open
// change items).
func OpenStore(ctx context.Context, db *sql.DB) (*Store, error) {
	ch, err := changes.OpenStore(ctx, db)
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, db, "agents", schema); err != nil {
		return nil, fmt.Errorf("opening the agents' store: %w", err)
	}
	if err := fillOutputKeys(ctx, db); err != nil {
		return nil, fmt.Errorf("opening the agents' store: %w", err)
	}
	return &Store{db: db, changes: ch}, nil
}

// fillOutputKeys gives the agents created before output_key theirs.
func fillOutputKeys(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT id, output_name FROM agents WHERE output_key = ''`)
	if err != nil {
		return err
	}
	keys := map[string]string{}
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return err
		}
		keys[id] = nameKey(name)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(keys) == 0 {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for id, key := range keys {
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET output_key = ? WHERE id = ? AND output_key = ''`, key, id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func newAgentID() string {
	var b [6]byte
	rand.Read(b[:])
	return "a" + hex.EncodeToString(b[:])
}

const agentColumns = `a.id, a.task, a.output_name, a.task_fingerprint, a.lifecycle, a.dormant_reason, a.created_at, a.last_wake, a.next_wake,
	a.failures, a.wakes, a.template, a.report_fingerprint, a.report_generator, a.language`

func scanAgent(row interface{ Scan(...any) error }) (Agent, error) {
	var a Agent
	var created, last, next string
	err := row.Scan(&a.ID, &a.Task, &a.OutputName, &a.taskFingerprint, &a.Lifecycle, &a.DormantReason, &created, &last, &next,
		&a.Failures, &a.Wakes, &a.Template, &a.reportFingerprint, &a.reportGenerator, &a.Language)
	a.Created, a.LastWake, a.NextWake = store.Unstamp(created), store.Unstamp(last), store.Unstamp(next)
	return a, err
}

// Agents lists the agents, all of them when lifecycle is empty.
func (s *Store) Agents(ctx context.Context, lifecycle Lifecycle) ([]Agent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+agentColumns+` FROM agents a
		WHERE ? = '' OR a.lifecycle = ? ORDER BY a.task`, lifecycle, lifecycle)
	if err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	defer rows.Close()
	out := []Agent{}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("listing agents: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	return out, s.countPending(ctx, "", out)
}

// countPending fills in the agents' PendingChanges: those of agent, or of
// every agent when agent is "".
func (s *Store) countPending(ctx context.Context, agent string, agents []Agent) error {
	n, err := s.changes.OpenItemCounts(ctx, agent)
	if err != nil {
		return err
	}
	for i := range agents {
		agents[i].PendingChanges = n[agents[i].ID]
	}
	return nil
}

// Agent returns the agent with id.
func (s *Store) Agent(ctx context.Context, id string) (Agent, error) {
	a, err := scanAgent(s.db.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents a WHERE a.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return a, fmt.Errorf("reading agent %s: %w", id, err)
	}
	return s.withPending(ctx, a)
}

// Owner implements changes.Agents' Owner: the agent's task and output name.
func (s *Store) Owner(ctx context.Context, id string) (changes.Owner, error) {
	a, err := s.Agent(ctx, id)
	return changes.Owner{Task: a.Task, OutputName: a.OutputName}, err
}

// AgentOf implements changes.Agents' AgentOf: the id of the agent of the
// task note at taskPath, "" when it has none.
func (s *Store) AgentOf(ctx context.Context, taskPath string) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT id FROM agents WHERE task = ?`, taskPath).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the agent of %s: %w", taskPath, err)
	}
	return id, nil
}

// Offline is what change sets need of the agents when no runtime runs
// (the command line): the agents' records, and no wakes. A decision is in
// the agent's next run key, so the next start's wake sees it.
type Offline struct{ *Store }

// Wake does nothing: see Offline.
func (Offline) Wake(context.Context, string, string) {}

// AgentForTask returns the agent of the task note at path.
func (s *Store) AgentForTask(ctx context.Context, path string) (Agent, error) {
	a, err := scanAgent(s.db.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents a WHERE a.task = ?`, path))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w for task %s", ErrNotFound, path)
	}
	if err != nil {
		return a, fmt.Errorf("reading the agent of %s: %w", path, err)
	}
	return s.withPending(ctx, a)
}

// withPending is a with its PendingChanges counted.
func (s *Store) withPending(ctx context.Context, a Agent) (Agent, error) {
	one := []Agent{a}
	err := s.countPending(ctx, a.ID, one)
	return one[0], err
}

func (s *Store) createAgent(ctx context.Context, task, fingerprint string, now time.Time) (Agent, error) {
	id := newAgentID()
	// One transaction, so that two agents created at once cannot both
	// find the same name free.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Agent{}, fmt.Errorf("creating the agent of %s: %w", task, err)
	}
	defer tx.Rollback()
	output, err := newOutputName(ctx, tx, task, s.reportTask)
	if err != nil {
		return Agent{}, fmt.Errorf("creating the agent of %s: %w", task, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO agents (id, task, output_name, output_key, task_fingerprint, lifecycle, created_at)
		VALUES (?, ?, ?, ?, ?, 'active', ?)`, id, task, output, nameKey(output), fingerprint, store.Stamp(now)); err != nil {
		return Agent{}, fmt.Errorf("creating the agent of %s: %w", task, err)
	}
	if err := tx.Commit(); err != nil {
		return Agent{}, fmt.Errorf("creating the agent of %s: %w", task, err)
	}
	return s.Agent(ctx, id)
}

// newOutputName is the output name of a new agent of the task at task:
// the task's stem, so SPEC §3.3's paths hold in the common case; when
// another agent (of any lifecycle: a destroyed one can come back) has it,
// the stem and the task's folder, "Plan (Home)"; then the stem and the
// lowest free number from 2, "Plan (2)". The migration that added output
// names backfills by the same rule. Names compare as file names do on macOS
// and Windows: without regard to case, in any language, or to how an
// accented letter is encoded (see nameKey). A renamed task's agent gets a
// new name by the same rule at its next wake (renameOutputs). A name whose
// report reportTask (when set) says is another task's is taken too.
func newOutputName(ctx context.Context, tx *sql.Tx, task string, reportTask func(string) string) (string, error) {
	s := stem(task)
	link := strings.TrimSuffix(task, path.Ext(task))
	free := func(name string) (bool, error) {
		var taken bool
		err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM agents WHERE output_key = ?)`, nameKey(name)).Scan(&taken)
		if err != nil {
			return false, fmt.Errorf("finding a free output name: %w", err)
		}
		if !taken && reportTask != nil {
			owner := reportTask(name)
			taken = owner != "" && !strings.EqualFold(owner, link)
		}
		return !taken, nil
	}
	names := []string{s}
	if folder := path.Base(path.Dir(task)); folder != "." && folder != "/" {
		names = append(names, s+" ("+folder+")")
	}
	for n := 2; ; n++ {
		for _, name := range names {
			if ok, err := free(name); ok || err != nil {
				return name, err
			}
		}
		names = []string{fmt.Sprintf("%s (%d)", s, n)}
	}
}

// nameKey is what two output names that would name the same file on a
// case-insensitive file system have in common: composed (NFC, as macOS
// normalises names), then case-folded.
func nameKey(name string) string {
	return cases.Fold().String(norm.NFC.String(name))
}

func (s *Store) setLifecycle(ctx context.Context, id string, l Lifecycle, reason string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET lifecycle = ?, dormant_reason = ? WHERE id = ?`, l, reason, id)
	if err != nil {
		return fmt.Errorf("setting agent %s %s: %w", id, l, err)
	}
	return nil
}

// failDormant makes an active agent dormant for its failures. An agent a
// person paused or destroyed while its wake was failing stays as they left
// it: the wake's end must not turn "paused" into a failure, or bring a
// destroyed agent back as dormant.
func (s *Store) failDormant(ctx context.Context, id, reason string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET lifecycle = 'dormant', dormant_reason = ? WHERE id = ? AND lifecycle = 'active'`, reason, id)
	if err != nil {
		return fmt.Errorf("setting agent %s dormant: %w", id, err)
	}
	return nil
}

// resume makes an agent active with a clean failure count.
func (s *Store) resume(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET lifecycle = 'active', dormant_reason = '', failures = 0, next_wake = '' WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("resuming agent %s: %w", id, err)
	}
	return nil
}

// moveTask follows a rename of the agent's task. The output name follows
// at the agent's next wake, when no wake writes the outputs (renameOutputs).
func (s *Store) moveTask(ctx context.Context, id, task, fingerprint string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET task = ?, task_fingerprint = ? WHERE id = ?`, task, fingerprint, id)
	if err != nil {
		return fmt.Errorf("moving agent %s to %s: %w", id, task, err)
	}
	return nil
}

func (s *Store) setNextWake(ctx context.Context, id string, next time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET next_wake = ? WHERE id = ?`, store.Stamp(next), id)
	if err != nil {
		return fmt.Errorf("scheduling the retry of agent %s: %w", id, err)
	}
	return nil
}

func (s *Store) setTaskFingerprint(ctx context.Context, id, fingerprint string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET task_fingerprint = ? WHERE id = ?`, fingerprint, id)
	if err != nil {
		return fmt.Errorf("recording the task of agent %s: %w", id, err)
	}
	return nil
}

func (s *Store) setLanguage(ctx context.Context, id, language string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET language = ? WHERE id = ?`, language, id)
	if err != nil {
		return fmt.Errorf("recording the task language of agent %s: %w", id, err)
	}
	return nil
}

func (s *Store) setReport(ctx context.Context, id, fingerprint, generator string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET report_fingerprint = ?, report_generator = ? WHERE id = ?`, fingerprint, generator, id)
	if err != nil {
		return fmt.Errorf("recording the report of agent %s: %w", id, err)
	}
	return nil
}

// recordFailure counts a failed wake; it returns the new failure count.
func (s *Store) recordFailure(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `UPDATE agents SET failures = failures + 1, next_wake = '' WHERE id = ? RETURNING failures`,
		id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("recording a failed wake of agent %s: %w", id, err)
	}
	return n, nil
}

func stem(p string) string {
	base := path.Base(p)
	return strings.TrimSuffix(base, path.Ext(base))
}
