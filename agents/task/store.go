package task

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/internal/kit"
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
)

// schema holds the agents' migration steps. Append, never edit: steps 1
// and 2 lost the change sets' tables to the changes package (which
// creates them only where they are missing), so every database, old or
// new, has the same schema.
var schema = []string{`
CREATE TABLE agents (
	id                 TEXT    PRIMARY KEY,
	task               TEXT    NOT NULL UNIQUE, -- vault path of the task note; follows renames
	task_fingerprint   TEXT    NOT NULL DEFAULT '', -- last content seen, to recognise a rename
	lifecycle          TEXT    NOT NULL CHECK (lifecycle IN ('active', 'dormant', 'destroyed')),
	dormant_reason     TEXT    NOT NULL DEFAULT '',
	created_at         TEXT    NOT NULL,
	last_wake          TEXT    NOT NULL DEFAULT '',
	next_wake          TEXT    NOT NULL DEFAULT '',
	failures           INTEGER NOT NULL DEFAULT 0,
	wakes              INTEGER NOT NULL DEFAULT 0,
	template           TEXT    NOT NULL DEFAULT '', -- name@version of the last wake
	report_fingerprint TEXT    NOT NULL DEFAULT '', -- the report as margin last wrote it
	report_generator   TEXT    NOT NULL DEFAULT ''  -- model id, "offline" or "margin"
);

-- The content of each source (the task note, each linked entry) as the
-- agent last saw it in a completed wake: the base of the next wake's diffs.
CREATE TABLE agent_sources (
	agent_id    TEXT NOT NULL,
	source      TEXT NOT NULL, -- a path, or path#heading for an entry
	fingerprint TEXT NOT NULL,
	content     TEXT NOT NULL,
	PRIMARY KEY (agent_id, source)
) WITHOUT ROWID;

CREATE TABLE wake_runs (
	id                INTEGER PRIMARY KEY,
	agent_id          TEXT    NOT NULL,
	run_key           TEXT    NOT NULL,
	-- settled_key is the run key of the state after the wake's own writes
	-- (set_task_language), which is just as processed as run_key.
	settled_key       TEXT    NOT NULL DEFAULT '',
	reason            TEXT    NOT NULL,
	status            TEXT    NOT NULL CHECK (status IN ('started', 'completed', 'incomplete', 'failed')),
	detail            TEXT    NOT NULL DEFAULT '',
	full_context      INTEGER NOT NULL DEFAULT 0,
	attempts          INTEGER NOT NULL DEFAULT 1,
	turns             INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	started_at        TEXT    NOT NULL,
	finished_at       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX wake_runs_agent ON wake_runs(agent_id, id);
CREATE INDEX wake_runs_key ON wake_runs(run_key);
CREATE INDEX wake_runs_settled ON wake_runs(settled_key) WHERE settled_key <> '';

-- Every model turn, tool call and tool result, written as it happens.
CREATE TABLE messages (
	id           INTEGER PRIMARY KEY,
	run_id       INTEGER NOT NULL,
	agent_id     TEXT    NOT NULL,
	role         TEXT    NOT NULL,
	content      TEXT    NOT NULL,
	tool_calls   TEXT    NOT NULL DEFAULT '', -- JSON, assistant turns
	tool_call_id TEXT    NOT NULL DEFAULT '',
	tool_name    TEXT    NOT NULL DEFAULT '',
	created_at   TEXT    NOT NULL
);
CREATE INDEX messages_agent ON messages(agent_id, id);

-- Tool calls that ran, by operation id (hash of run key, tool and canonical
-- arguments): a call already here is not applied again.
CREATE TABLE tool_calls (
	operation_id TEXT    PRIMARY KEY,
	run_id       INTEGER NOT NULL,
	agent_id     TEXT    NOT NULL,
	tool         TEXT    NOT NULL,
	args         TEXT    NOT NULL,
	deferred     INTEGER NOT NULL,
	status       TEXT    NOT NULL, -- applied | proposed | unchanged | failed | started
	result       TEXT    NOT NULL,
	created_at   TEXT    NOT NULL
);
CREATE INDEX tool_calls_agent ON tool_calls(agent_id, created_at);

-- proposals was created here until change sets got their own package:
-- see the changes package's schema (component "changes").
`, `
-- change_sets, change_items and decisions were created here until change
-- sets got their own package: see the changes package's schema (component
-- "changes"), whose first step creates them where they are missing.
SELECT 1;
`, `
-- The name of the agent's report, journal and change-set folder under the
-- output folder. It was the task's stem, so two tasks of one name in
-- different folders shared (and overwrote) each other's outputs. Existing
-- agents keep their stem; of agents sharing one the oldest keeps it, the
-- others get the name newOutputName would give them: "<stem> (<folder>)",
-- else "<stem> (<n>)" with the lowest free n from 2. Names are unique
-- without regard to case, as file names are on macOS and Windows.
ALTER TABLE agents ADD COLUMN output_name TEXT NOT NULL DEFAULT '';

CREATE TEMP TABLE named_agents AS
WITH parts AS (
	SELECT id, created_at, rowid AS seq,
		substr(task, length(rtrim(task, replace(task, '/', ''))) + 1) AS base,
		rtrim(rtrim(task, replace(task, '/', '')), '/') AS dir
	FROM agents
), stems AS (
	SELECT id, created_at, seq,
		CASE WHEN instr(base, '.') > 0 THEN substr(base, 1, length(rtrim(base, replace(base, '.', ''))) - 1) ELSE base END AS stem,
		substr(dir, length(rtrim(dir, replace(dir, '/', ''))) + 1) AS folder
	FROM parts
)
SELECT id, created_at, seq, stem, lower(stem) AS stem_key,
	ROW_NUMBER() OVER (PARTITION BY lower(stem) ORDER BY created_at, seq) AS place,
	CASE WHEN folder <> '' THEN stem || ' (' || folder || ')' ELSE '' END AS with_folder,
	'' AS output_name
FROM stems;
CREATE UNIQUE INDEX named_agents_id ON named_agents(id);
CREATE INDEX named_agents_stem ON named_agents(stem_key, place);

UPDATE named_agents SET output_name = stem WHERE place = 1;

UPDATE named_agents SET output_name = with_folder
WHERE place > 1 AND with_folder <> ''
	AND NOT EXISTS (SELECT 1 FROM named_agents o WHERE o.place = 1 AND o.stem_key = lower(named_agents.with_folder))
	AND NOT EXISTS (SELECT 1 FROM named_agents o WHERE o.place > 1 AND lower(o.with_folder) = lower(named_agents.with_folder)
		AND (o.created_at, o.seq) < (named_agents.created_at, named_agents.seq));

CREATE TEMP TABLE taken_names (name_key TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO taken_names SELECT lower(output_name) FROM named_agents WHERE output_name <> '';

CREATE TEMP TABLE unnamed_agents AS
	SELECT id, stem, stem_key, ROW_NUMBER() OVER (PARTITION BY stem_key ORDER BY created_at, seq) AS k
	FROM named_agents WHERE output_name = '';
CREATE UNIQUE INDEX unnamed_agents_id ON unnamed_agents(id);

CREATE TEMP TABLE free_numbers AS
WITH RECURSIVE numbers(n) AS (
	SELECT 2 UNION ALL SELECT n + 1 FROM numbers WHERE n <= (SELECT COUNT(*) FROM named_agents)
)
SELECT g.stem_key, n, ROW_NUMBER() OVER (PARTITION BY g.stem_key ORDER BY n) AS k
FROM (SELECT DISTINCT stem_key FROM unnamed_agents) g, numbers
WHERE NOT EXISTS (SELECT 1 FROM taken_names t WHERE t.name_key = g.stem_key || ' (' || n || ')');

UPDATE named_agents SET output_name = (
	SELECT u.stem || ' (' || f.n || ')' FROM unnamed_agents u JOIN free_numbers f ON f.stem_key = u.stem_key AND f.k = u.k
	WHERE u.id = named_agents.id)
WHERE output_name = '';

UPDATE agents SET output_name = (SELECT output_name FROM named_agents WHERE named_agents.id = agents.id);
DROP TABLE named_agents;
DROP TABLE taken_names;
DROP TABLE unnamed_agents;
DROP TABLE free_numbers;
CREATE UNIQUE INDEX agents_output_name ON agents(output_name COLLATE NOCASE);
`, `
-- The template name@version each run ran, so the evolution metrics can
-- set a version against the one before it. Runs from before this step
-- stay '': their version is not known, and guessing would skew the
-- comparison.
ALTER TABLE wake_runs ADD COLUMN template TEXT NOT NULL DEFAULT '';
CREATE INDEX wake_runs_template ON wake_runs(template);
`, `
-- vault/status counts agents by lifecycle on every call; without this
-- index that reads every agent's row (a third of a millisecond for 1,000
-- agents, most of the call).
CREATE INDEX agents_lifecycle ON agents(lifecycle);
`, `
-- output_name's key (nameKey): names compare as file names do on macOS and
-- Windows, which SQLite's NOCASE (ASCII only) cannot tell. OpenStore fills
-- it for the agents this step finds.
ALTER TABLE agents ADD COLUMN output_key TEXT NOT NULL DEFAULT '';
CREATE INDEX agents_output_key ON agents(output_key);
`}

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

	taskFingerprint   string
	reportFingerprint string
	reportGenerator   string
}

// Run is one wake run as stored.
type Run struct {
	ID               int64     `json:"id"`
	Agent            string    `json:"agent"`
	RunKey           string    `json:"runKey"`
	Reason           string    `json:"reason"`
	Template         string    `json:"template"` // name@version; "" for runs from before margin recorded it
	Status           string    `json:"status"`
	Detail           string    `json:"detail,omitempty"`
	FullContext      bool      `json:"fullContext"`
	Attempts         int       `json:"attempts"`
	Turns            int       `json:"turns"`
	PromptTokens     int       `json:"promptTokens"`
	CompletionTokens int       `json:"completionTokens"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished"`
}

// Message is one persisted turn of a wake's conversation.
type Message struct {
	ID         int64           `json:"id"`
	Run        int64           `json:"run"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolCalls  json.RawMessage `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Created    time.Time       `json:"created"`
}

// ToolCall is one persisted tool call with its effect.
type ToolCall struct {
	OperationID string          `json:"operationId"`
	Run         int64           `json:"run"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Deferred    bool            `json:"deferred"`
	Status      string          `json:"status"`
	Result      string          `json:"result"`
	Created     time.Time       `json:"created"`
}

// Store reads and writes the agents' tables. It is safe for concurrent use.
type Store struct {
	db *sql.DB
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
	if _, err := changes.OpenStore(ctx, db); err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx, db, "agents", schema); err != nil {
		return nil, fmt.Errorf("opening the agents' store: %w", err)
	}
	if err := fillOutputKeys(ctx, db); err != nil {
		return nil, fmt.Errorf("opening the agents' store: %w", err)
	}
	return &Store{db: db}, nil
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
	a.failures, a.wakes, a.template, a.report_fingerprint, a.report_generator,
	(SELECT COUNT(*) FROM change_items i JOIN change_sets s ON s.id = i.set_id
		WHERE s.agent_id = a.id AND s.status IN ('pending', 'partially-resolved') AND i.status IN ('pending', 'deferred'))`

func scanAgent(row interface{ Scan(...any) error }) (Agent, error) {
	var a Agent
	var created, last, next string
	err := row.Scan(&a.ID, &a.Task, &a.OutputName, &a.taskFingerprint, &a.Lifecycle, &a.DormantReason, &created, &last, &next,
		&a.Failures, &a.Wakes, &a.Template, &a.reportFingerprint, &a.reportGenerator, &a.PendingChanges)
	a.Created, a.LastWake, a.NextWake = kit.Unstamp(created), kit.Unstamp(last), kit.Unstamp(next)
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
	return out, nil
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
	return a, nil
}

// Owner implements changes.Agents' Owner: the agent's task and output name.
func (s *Store) Owner(ctx context.Context, id string) (changes.Owner, error) {
	a, err := s.Agent(ctx, id)
	return changes.Owner{Task: a.Task, OutputName: a.OutputName}, err
}

// Offline is what change sets need of the agents when no runtime runs
// (the command line): the agents' records, and no wakes. A decision is in
// the agent's next run key, so the next start's wake sees it.
type Offline struct{ *Store }

// Wake does nothing: see Offline.
func (Offline) Wake(string, string) {}

// AgentForTask returns the agent of the task note at path.
func (s *Store) AgentForTask(ctx context.Context, path string) (Agent, error) {
	a, err := scanAgent(s.db.QueryRowContext(ctx, `SELECT `+agentColumns+` FROM agents a WHERE a.task = ?`, path))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("%w for task %s", ErrNotFound, path)
	}
	if err != nil {
		return a, fmt.Errorf("reading the agent of %s: %w", path, err)
	}
	return a, nil
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
		VALUES (?, ?, ?, ?, ?, 'active', ?)`, id, task, output, nameKey(output), fingerprint, kit.Stamp(now)); err != nil {
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
// accented letter is encoded (see nameKey). A name is given once: a
// renamed task keeps it (see moveTask). A name whose report reportTask
// (when set) says is another task's is taken too.
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

// resume makes an agent active with a clean failure count.
func (s *Store) resume(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET lifecycle = 'active', dormant_reason = '', failures = 0, next_wake = '' WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("resuming agent %s: %w", id, err)
	}
	return nil
}

// moveTask follows a rename of the agent's task. The output name stays, so
// the report, journal and change sets stay where the person finds them.
func (s *Store) moveTask(ctx context.Context, id, task, fingerprint string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET task = ?, task_fingerprint = ? WHERE id = ?`, task, fingerprint, id)
	if err != nil {
		return fmt.Errorf("moving agent %s to %s: %w", id, task, err)
	}
	return nil
}

func (s *Store) setNextWake(ctx context.Context, id string, next time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE agents SET next_wake = ? WHERE id = ?`, kit.Stamp(next), id)
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

// sources returns what the agent saw of each source in its last completed wake.
func (s *Store) sources(ctx context.Context, id string) (map[string]Source, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT source, fingerprint, content FROM agent_sources WHERE agent_id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("reading the sources of agent %s: %w", id, err)
	}
	defer rows.Close()
	out := map[string]Source{}
	for rows.Next() {
		var src Source
		if err := rows.Scan(&src.ID, &src.Fingerprint, &src.Content); err != nil {
			return nil, fmt.Errorf("reading the sources of agent %s: %w", id, err)
		}
		out[src.ID] = src
	}
	return out, rows.Err()
}

// readersOf returns the agents that read an entry of the note at path at
// their last wake (their sources include one of its entries).
func (s *Store) readersOf(ctx context.Context, path string) (map[string]bool, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT agent_id FROM agent_sources
		WHERE substr(source, 1, length(?) + 1) = ? || '#'`, path, path)
	if err != nil {
		return nil, fmt.Errorf("finding the agents that read %s: %w", path, err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("finding the agents that read %s: %w", path, err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

// completedKey reports whether a run of the agent with this key completed.
func (s *Store) completedKey(ctx context.Context, agent, key string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM wake_runs WHERE agent_id = ? AND status = 'completed'
		AND (run_key = ? OR settled_key = ?)`, agent, key, key).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("looking up run key %s: %w", key, err)
	}
	return n > 0, nil
}

// interrupted returns the agent's run that started and never finished: a
// crash (or kill) stopped it.
func (s *Store) interrupted(ctx context.Context, agent string) (Run, bool, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM wake_runs
		WHERE agent_id = ? AND status = 'started' ORDER BY id DESC LIMIT 1`, agent))
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("looking for an interrupted run of agent %s: %w", agent, err)
	}
	return r, true, nil
}

const runColumns = `id, agent_id, run_key, reason, template, status, detail, full_context, attempts, turns, prompt_tokens, completion_tokens, started_at, finished_at`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var started, finished string
	err := row.Scan(&r.ID, &r.Agent, &r.RunKey, &r.Reason, &r.Template, &r.Status, &r.Detail, &r.FullContext, &r.Attempts, &r.Turns,
		&r.PromptTokens, &r.CompletionTokens, &started, &finished)
	r.Started, r.Finished = kit.Unstamp(started), kit.Unstamp(finished)
	return r, err
}

// startRun records a run of the agent under template (name@version).
func (s *Store) startRun(ctx context.Context, agent, key, reason, template string, full bool, now time.Time) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO wake_runs (agent_id, run_key, reason, template, status, full_context, started_at)
		VALUES (?, ?, ?, ?, 'started', ?, ?) RETURNING id`, agent, key, reason, template, full, kit.Stamp(now)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("starting a run of agent %s: %w", agent, err)
	}
	return id, nil
}

// restartRun counts another attempt at an interrupted run. The attempt
// runs the template active now, which a new version may have replaced
// since the crash.
func (s *Store) restartRun(ctx context.Context, id int64, template string, full bool) error {
	_, err := s.db.ExecContext(ctx, `UPDATE wake_runs SET attempts = attempts + 1, template = ?, full_context = ? WHERE id = ?`, template, full, id)
	if err != nil {
		return fmt.Errorf("restarting run %d: %w", id, err)
	}
	return nil
}

// runEnd is how a run ended.
type runEnd struct {
	status, detail, settledKey       string
	turns, promptTokens, completions int
}

// finishRun records how a run ended. A completed run also stores the
// sources the agent saw, counts the wake and clears the failure count, in
// one transaction: a completed run key always comes with its sources.
func (s *Store) finishRun(ctx context.Context, agent string, run int64, end runEnd, sources []Source, template string, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE wake_runs SET status = ?, detail = ?, settled_key = ?, turns = ?,
		prompt_tokens = ?, completion_tokens = ?, finished_at = ? WHERE id = ?`,
		end.status, end.detail, end.settledKey, end.turns, end.promptTokens, end.completions, kit.Stamp(now), run); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	if end.status == RunCompleted {
		if _, err := tx.ExecContext(ctx, `DELETE FROM agent_sources WHERE agent_id = ?`, agent); err != nil {
			return fmt.Errorf("finishing run %d: %w", run, err)
		}
		for _, src := range sources {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_sources (agent_id, source, fingerprint, content) VALUES (?, ?, ?, ?)`,
				agent, src.ID, src.Fingerprint, src.Content); err != nil {
				return fmt.Errorf("finishing run %d: storing sources: %w", run, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET wakes = wakes + 1, failures = 0, next_wake = '', last_wake = ?, template = ?
			WHERE id = ?`, kit.Stamp(now), template, agent); err != nil {
			return fmt.Errorf("finishing run %d: %w", run, err)
		}
	} else if _, err := tx.ExecContext(ctx, `UPDATE agents SET last_wake = ? WHERE id = ?`, kit.Stamp(now), agent); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	return nil
}

func (s *Store) addMessage(ctx context.Context, agent string, run int64, m Message) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO messages (run_id, agent_id, role, content, tool_calls, tool_call_id, tool_name, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, run, agent, m.Role, m.Content, string(m.ToolCalls), m.ToolCallID, m.ToolName, kit.Stamp(m.Created))
	if err != nil {
		return fmt.Errorf("recording a message of run %d: %w", run, err)
	}
	return nil
}

// toolCall returns the call already recorded under an operation id.
func (s *Store) toolCall(ctx context.Context, op string) (ToolCall, bool, error) {
	var tc ToolCall
	var args, created string
	err := s.db.QueryRowContext(ctx, `SELECT operation_id, run_id, tool, args, deferred, status, result, created_at
		FROM tool_calls WHERE operation_id = ?`, op).Scan(&tc.OperationID, &tc.Run, &tc.Tool, &args, &tc.Deferred, &tc.Status, &tc.Result, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return tc, false, nil
	}
	if err != nil {
		return tc, false, fmt.Errorf("looking up operation %s: %w", op, err)
	}
	tc.Args, tc.Created = json.RawMessage(args), kit.Unstamp(created)
	return tc, true, nil
}

func (s *Store) addToolCall(ctx context.Context, agent string, tc ToolCall, proposals []changes.Proposal) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording %s: %w", tc.Tool, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO tool_calls (operation_id, run_id, agent_id, tool, args, deferred, status, result, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, tc.OperationID, tc.Run, agent, tc.Tool, string(tc.Args), tc.Deferred, tc.Status, tc.Result, kit.Stamp(tc.Created)); err != nil {
		return fmt.Errorf("recording %s: %w", tc.Tool, err)
	}
	if err := changes.AddProposals(ctx, tx, agent, tc.Run, tc.OperationID, tc.Tool, tc.Created, proposals); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording %s: %w", tc.Tool, err)
	}
	return nil
}

// toolCallStarted is the status of a call whose effect is being written
// (see wakeTools.effect); a crash leaves it so until the run is re-run.
const toolCallStarted = "started"

// finishToolCall records how a started call ended.
func (s *Store) finishToolCall(ctx context.Context, op, status, result string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE tool_calls SET status = ?, result = ? WHERE operation_id = ?`, status, result, op); err != nil {
		return fmt.Errorf("recording operation %s: %w", op, err)
	}
	return nil
}

// dropToolCall forgets a started call whose effect failed, so that the
// model's retry of it runs again.
func (s *Store) dropToolCall(ctx context.Context, op string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM tool_calls WHERE operation_id = ? AND status = ?`, op, toolCallStarted); err != nil {
		return fmt.Errorf("dropping operation %s: %w", op, err)
	}
	return nil
}

// startedToolCalls are the calls of a run that a crash interrupted while
// their effect was being written.
func (s *Store) startedToolCalls(ctx context.Context, run int64) ([]ToolCall, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT operation_id, tool, args FROM tool_calls WHERE run_id = ? AND status = ?`, run, toolCallStarted)
	if err != nil {
		return nil, fmt.Errorf("reading the interrupted calls of run %d: %w", run, err)
	}
	defer rows.Close()
	var out []ToolCall
	for rows.Next() {
		var tc ToolCall
		var args string
		if err := rows.Scan(&tc.OperationID, &tc.Tool, &args); err != nil {
			return nil, fmt.Errorf("reading the interrupted calls of run %d: %w", run, err)
		}
		tc.Args = json.RawMessage(args)
		out = append(out, tc)
	}
	return out, rows.Err()
}

// Activity is an agent's recent history, newest first.
type Activity struct {
	Runs      []Run      `json:"runs"`
	Messages  []Message  `json:"messages"`
	ToolCalls []ToolCall `json:"toolCalls"`
}

// Activity returns the agent's last limit runs, messages and tool calls.
func (s *Store) Activity(ctx context.Context, agent string, limit int) (Activity, error) {
	act := Activity{Runs: []Run{}, Messages: []Message{}, ToolCalls: []ToolCall{}}
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM wake_runs WHERE agent_id = ? ORDER BY id DESC LIMIT ?`, agent, limit)
	if err != nil {
		return act, fmt.Errorf("reading runs of agent %s: %w", agent, err)
	}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return act, fmt.Errorf("reading runs of agent %s: %w", agent, err)
		}
		act.Runs = append(act.Runs, r)
	}
	rows.Close()
	rows, err = s.db.QueryContext(ctx, `SELECT id, run_id, role, content, tool_calls, tool_call_id, tool_name, created_at
		FROM messages WHERE agent_id = ? ORDER BY id DESC LIMIT ?`, agent, limit)
	if err != nil {
		return act, fmt.Errorf("reading messages of agent %s: %w", agent, err)
	}
	for rows.Next() {
		var m Message
		var calls, created string
		if err := rows.Scan(&m.ID, &m.Run, &m.Role, &m.Content, &calls, &m.ToolCallID, &m.ToolName, &created); err != nil {
			rows.Close()
			return act, fmt.Errorf("reading messages of agent %s: %w", agent, err)
		}
		if calls != "" {
			m.ToolCalls = json.RawMessage(calls)
		}
		m.Created = kit.Unstamp(created)
		act.Messages = append(act.Messages, m)
	}
	rows.Close()
	rows, err = s.db.QueryContext(ctx, `SELECT operation_id, run_id, tool, args, deferred, status, result, created_at
		FROM tool_calls WHERE agent_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`, agent, limit)
	if err != nil {
		return act, fmt.Errorf("reading tool calls of agent %s: %w", agent, err)
	}
	defer rows.Close()
	for rows.Next() {
		var tc ToolCall
		var args, created string
		if err := rows.Scan(&tc.OperationID, &tc.Run, &tc.Tool, &args, &tc.Deferred, &tc.Status, &tc.Result, &created); err != nil {
			return act, fmt.Errorf("reading tool calls of agent %s: %w", agent, err)
		}
		tc.Args, tc.Created = json.RawMessage(args), kit.Unstamp(created)
		act.ToolCalls = append(act.ToolCalls, tc)
	}
	return act, rows.Err()
}
