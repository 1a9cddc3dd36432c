package task

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault/store"
)

// Run is one wake run as stored.
type Run struct {
	ID               int64     `json:"id"`
	Agent            string    `json:"agent"`
	RunKey           string    `json:"runKey"`
	Reason           string    `json:"reason"`
	Template         string    `json:"template"`        // name@version; "" for runs from before margin recorded it
	Model            string    `json:"model,omitempty"` // as the provider named it; "" when no model answered
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

// seenRelated returns the paths of the related notes the agent saw at its
// last completed wake.
func (s *Store) seenRelated(ctx context.Context, id string) ([]string, error) {
	var related string
	if err := s.db.QueryRowContext(ctx, `SELECT related FROM agents WHERE id = ?`, id).Scan(&related); err != nil {
		return nil, fmt.Errorf("reading the related notes agent %s saw: %w", id, err)
	}
	if related == "" {
		return nil, nil
	}
	return strings.Split(related, "\n"), nil
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

const runColumns = `id, agent_id, run_key, reason, template, model, status, detail, full_context, attempts, turns, prompt_tokens, completion_tokens, started_at, finished_at`

func scanRun(row interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var started, finished string
	err := row.Scan(&r.ID, &r.Agent, &r.RunKey, &r.Reason, &r.Template, &r.Model, &r.Status, &r.Detail, &r.FullContext, &r.Attempts, &r.Turns,
		&r.PromptTokens, &r.CompletionTokens, &started, &finished)
	r.Started, r.Finished = store.Unstamp(started), store.Unstamp(finished)
	return r, err
}

// startRun records a run of the agent under template (name@version).
func (s *Store) startRun(ctx context.Context, agent, key, reason, template string, full bool, now time.Time) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO wake_runs (agent_id, run_key, reason, template, status, full_context, started_at)
		VALUES (?, ?, ?, ?, 'started', ?, ?) RETURNING id`, agent, key, reason, template, full, store.Stamp(now)).Scan(&id)
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

// setRunModel records the model that answered a run.
func (s *Store) setRunModel(ctx context.Context, id int64, model string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE wake_runs SET model = ? WHERE id = ?`, model, id); err != nil {
		return fmt.Errorf("recording the model of run %d: %w", id, err)
	}
	return nil
}

// RunCause implements changes.Agents' RunCause: the template version and
// the model a run ran, for margin's history of the writes of its items.
func (s *Store) RunCause(ctx context.Context, id int64) (template, model string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT template, model FROM wake_runs WHERE id = ?`, id).Scan(&template, &model)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil // pruned, or a set from before runs were kept: not known
	}
	if err != nil {
		return "", "", fmt.Errorf("reading run %d: %w", id, err)
	}
	return template, model, nil
}

// runEnd is how a run ended.
type runEnd struct {
	status, detail, settledKey       string
	turns, promptTokens, completions int
	// modelFree says no model saw the sources (a done task's wake): the
	// run completes, but what the agent saw stays as it was.
	modelFree bool
}

// finishRun records how a run ended. A completed run also stores the
// sources the agent saw, counts the wake and clears the failure count, in
// one transaction: a completed run key always comes with its sources.
func (s *Store) finishRun(ctx context.Context, agent string, run int64, end runEnd, sources []Source, related []string, template string, now time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE wake_runs SET status = ?, detail = ?, settled_key = ?, turns = ?,
		prompt_tokens = ?, completion_tokens = ?, finished_at = ? WHERE id = ?`,
		end.status, end.detail, end.settledKey, end.turns, end.promptTokens, end.completions, store.Stamp(now), run); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	if end.status == RunCompleted && !end.modelFree {
		if _, err := tx.ExecContext(ctx, `DELETE FROM agent_sources WHERE agent_id = ?`, agent); err != nil {
			return fmt.Errorf("finishing run %d: %w", run, err)
		}
		for _, src := range sources {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_sources (agent_id, source, fingerprint, content) VALUES (?, ?, ?, ?)`,
				agent, src.ID, src.Fingerprint, src.Content); err != nil {
				return fmt.Errorf("finishing run %d: storing sources: %w", run, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET related = ? WHERE id = ?`, strings.Join(related, "\n"), agent); err != nil {
			return fmt.Errorf("finishing run %d: %w", run, err)
		}
	}
	if end.status == RunCompleted {
		if _, err := tx.ExecContext(ctx, `UPDATE agents SET wakes = wakes + 1, failures = 0, next_wake = '', last_wake = ?, template = ?
			WHERE id = ?`, store.Stamp(now), template, agent); err != nil {
			return fmt.Errorf("finishing run %d: %w", run, err)
		}
	} else if _, err := tx.ExecContext(ctx, `UPDATE agents SET last_wake = ? WHERE id = ?`, store.Stamp(now), agent); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finishing run %d: %w", run, err)
	}
	return nil
}

func (s *Store) addMessage(ctx context.Context, agent string, run int64, m Message) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO messages (run_id, agent_id, role, content, tool_calls, tool_call_id, tool_name, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, run, agent, m.Role, m.Content, string(m.ToolCalls), m.ToolCallID, m.ToolName, store.Stamp(m.Created))
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
	tc.Args, tc.Created = json.RawMessage(args), store.Unstamp(created)
	return tc, true, nil
}

func (s *Store) addToolCall(ctx context.Context, agent string, tc ToolCall, proposals []changes.Proposal) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording %s: %w", tc.Tool, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO tool_calls (operation_id, run_id, agent_id, tool, args, deferred, status, result, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, tc.OperationID, tc.Run, agent, tc.Tool, string(tc.Args), tc.Deferred, tc.Status, tc.Result, store.Stamp(tc.Created)); err != nil {
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
		m.Created = store.Unstamp(created)
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
		tc.Args, tc.Created = json.RawMessage(args), store.Unstamp(created)
		act.ToolCalls = append(act.ToolCalls, tc)
	}
	return act, rows.Err()
}
