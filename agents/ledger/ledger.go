// Package ledger keeps margin's accounting of model calls in the state
// database: one row per attempt at one provider (llm.Record), tagged with
// the wake run or query session that made it, so a run's tokens and a
// provider's failure rate can be read back.
//
// It owns the model_calls table, and client_calls, the calls AI applications
// make over MCP, and nothing else. It must not decide
// anything about agents, runs or queries: callers tag their context with
// WithScope and read totals back with Totals.
package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/store"
)

// schema holds the migration steps of the ledger. Append, never edit.
var schema = []string{`
CREATE TABLE model_calls (
	id                INTEGER PRIMARY KEY,
	scope             TEXT    NOT NULL, -- "run:<id>", "query:<session>", or "" when untagged
	time              TEXT    NOT NULL,
	role              TEXT    NOT NULL,
	provider          TEXT    NOT NULL,
	model             TEXT    NOT NULL,
	attempt           INTEGER NOT NULL,
	fallback          INTEGER NOT NULL,
	prompt_tokens     INTEGER NOT NULL,
	completion_tokens INTEGER NOT NULL,
	prompt_estimate   INTEGER NOT NULL,
	truncated         INTEGER NOT NULL,
	done_reason       TEXT    NOT NULL,
	latency_ms        INTEGER NOT NULL,
	outcome           TEXT    NOT NULL,
	error             TEXT    NOT NULL
);
CREATE INDEX model_calls_scope ON model_calls(scope) WHERE scope <> '';
`, `
-- Tool calls of AI applications connected over MCP (SPEC §10), with the
-- name each gave in clientInfo.
CREATE TABLE client_calls (
	id         INTEGER PRIMARY KEY,
	time       TEXT    NOT NULL,
	client     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	args       TEXT    NOT NULL, -- JSON, cut at 2 KiB
	outcome    TEXT    NOT NULL, -- ok | error
	error      TEXT    NOT NULL,
	latency_us INTEGER NOT NULL
);
CREATE INDEX client_calls_client ON client_calls(client, id);
`}

// Ledger records model calls in the state database. It implements
// llm.Recorder.
type Ledger struct {
	db  *sql.DB
	log *slog.Logger
}

// Open migrates the ledger's table in db (the vault's state database) and
// returns a ledger writing to it. logger hears write failures; nil discards.
func Open(ctx context.Context, db *sql.DB, logger *slog.Logger) (*Ledger, error) {
	if err := store.Migrate(ctx, db, "ledger", schema); err != nil {
		return nil, fmt.Errorf("opening the ledger: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Ledger{db: db, log: logger}, nil
}

type scopeKey struct{}

// WithScope tags every model call made with ctx, so Totals can sum them:
// the agents use "run:<id>", the query flow "query:<session>".
func WithScope(ctx context.Context, scope string) context.Context {
	return context.WithValue(ctx, scopeKey{}, scope)
}

func scopeOf(ctx context.Context) string {
	s, _ := ctx.Value(scopeKey{}).(string)
	return s
}

// Record implements llm.Recorder. A failure to write is logged, never
// returned: accounting must not fail a model call.
func (l *Ledger) Record(ctx context.Context, r llm.Record) {
	_, err := l.db.ExecContext(ctx, `INSERT INTO model_calls (scope, time, role, provider, model, attempt, fallback,
		prompt_tokens, completion_tokens, prompt_estimate, truncated, done_reason, latency_ms, outcome, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		scopeOf(ctx), r.Time.UTC().Format(time.RFC3339Nano), r.Role, r.Provider, r.Model, r.Attempt, r.Fallback,
		r.PromptTokens, r.CompletionTokens, r.PromptEstimate, r.Truncated, r.DoneReason, r.Latency.Milliseconds(), r.Outcome, r.Err)
	if err != nil {
		l.log.Warn("recording a model call", "err", err)
	}
}

// ToolCall is one call of an MCP client's to one of margin's tools.
type ToolCall struct {
	Time    time.Time     `json:"time"`
	Client  string        `json:"client"`
	Tool    string        `json:"tool"`
	Args    string        `json:"args"`
	Err     string        `json:"error,omitempty"` // "" when it succeeded
	Latency time.Duration `json:"latency"`
}

// maxToolArgs bounds the arguments a tool call's row keeps.
const maxToolArgs = 2 << 10

// RecordToolCalls records tool calls in one transaction.
func (l *Ledger) RecordToolCalls(ctx context.Context, calls []ToolCall) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("recording tool calls: %w", err)
	}
	defer tx.Rollback()
	for _, c := range calls {
		args, outcome := c.Args, "ok"
		if len(args) > maxToolArgs {
			args = strings.ToValidUTF8(args[:maxToolArgs], "") + "…"
		}
		if c.Err != "" {
			outcome = "error"
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO client_calls (time, client, tool, args, outcome, error, latency_us)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, c.Time.UTC().Format(time.RFC3339Nano), c.Client, c.Tool, args, outcome, c.Err, c.Latency.Microseconds()); err != nil {
			return fmt.Errorf("recording tool calls: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("recording tool calls: %w", err)
	}
	return nil
}

// ToolCalls returns the latest tool calls, newest first, at most limit.
func (l *Ledger) ToolCalls(ctx context.Context, limit int) ([]ToolCall, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT time, client, tool, args, error, latency_us FROM client_calls ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading tool calls: %w", err)
	}
	defer rows.Close()
	var out []ToolCall
	for rows.Next() {
		var c ToolCall
		var at string
		var us int64
		if err := rows.Scan(&at, &c.Client, &c.Tool, &c.Args, &c.Err, &us); err != nil {
			return nil, fmt.Errorf("reading tool calls: %w", err)
		}
		c.Time, _ = time.Parse(time.RFC3339Nano, at)
		c.Latency = time.Duration(us) * time.Microsecond
		out = append(out, c)
	}
	return out, rows.Err()
}

// DefaultKeep is how long the ledger keeps a call when no one says: as
// long as the history keeps margin's writes (history.keep).
const DefaultKeep = 90 * 24 * time.Hour

// pruneChunk bounds the rows one delete removes, so that the first prune
// of a ledger grown for months holds the write lock for short spells
// that the other margin process's writes can wait out.
const pruneChunk = 5000

// Prune deletes the model calls and tool calls recorded before before,
// and says how many it deleted. Rows are numbered in the order they were
// written, nearly that of their times (a model call is written when it
// ends): it deletes the rows numbered below the first one at or after
// before, so it never deletes a newer call, may keep an older one a
// prune longer, and reads only the rows it deletes, with no index on time.
func (l *Ledger) Prune(ctx context.Context, before time.Time) (int64, error) {
	cutoff := before.UTC().Format(time.RFC3339Nano)
	var deleted int64
	for _, table := range []string{"model_calls", "client_calls"} {
		var first sql.NullInt64
		if err := l.db.QueryRowContext(ctx, `SELECT coalesce((SELECT id FROM `+table+` WHERE time >= ? ORDER BY id LIMIT 1),
			(SELECT max(id) + 1 FROM `+table+`))`, cutoff).Scan(&first); err != nil {
			return deleted, fmt.Errorf("pruning the ledger's %s: %w", table, err)
		}
		for first.Valid {
			res, err := l.db.ExecContext(ctx, `DELETE FROM `+table+` WHERE id < ? AND id < (SELECT min(id) FROM `+table+`) + ?`, first.Int64, pruneChunk)
			if err != nil {
				return deleted, fmt.Errorf("pruning the ledger's %s: %w", table, err)
			}
			n, _ := res.RowsAffected()
			deleted += n
			if n == 0 {
				break
			}
		}
	}
	return deleted, nil
}

// KeepFor prunes the calls older than keep (DefaultKeep when 0) now and
// then every interval until ctx is done. The processes that run for long
// (margin serve and margin mcp) run it, off their calls' path.
func (l *Ledger) KeepFor(ctx context.Context, keep, interval time.Duration) {
	if keep <= 0 {
		keep = DefaultKeep
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := l.Prune(ctx, time.Now().Add(-keep)); err != nil && ctx.Err() == nil {
			l.log.Warn("pruning the ledger", "err", err)
		} else if n > 0 {
			l.log.Info("pruned the ledger of old calls", "calls", n, "keep", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Totals is what the calls of one scope cost.
type Totals struct {
	Calls            int `json:"calls"`
	Failed           int `json:"failed"`
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
}

// Totals sums the calls recorded under scope.
func (l *Ledger) Totals(ctx context.Context, scope string) (Totals, error) {
	var t Totals
	err := l.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(outcome <> 'ok'), 0),
		COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM model_calls WHERE scope = ?`, scope).Scan(&t.Calls, &t.Failed, &t.PromptTokens, &t.CompletionTokens)
	if err != nil {
		return t, fmt.Errorf("summing model calls of %s: %w", scope, err)
	}
	return t, nil
}

// TotalsWithPrefix sums the calls of every scope that starts with prefix:
// "run:" is every wake of every task agent, "evolution:" every evolution
// session.
func (l *Ledger) TotalsWithPrefix(ctx context.Context, prefix string) (Totals, error) {
	var t Totals
	err := l.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(outcome <> 'ok'), 0),
		COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM model_calls WHERE substr(scope, 1, length(?1)) = ?1 AND scope <> ''`, prefix).Scan(&t.Calls, &t.Failed, &t.PromptTokens, &t.CompletionTokens)
	if err != nil {
		return t, fmt.Errorf("summing model calls of %s*: %w", prefix, err)
	}
	return t, nil
}

// TotalsByScope sums the calls of each scope that starts with prefix, so
// a caller can add up the scopes it groups (the runs of one template
// version) without the ledger knowing what a scope stands for.
func (l *Ledger) TotalsByScope(ctx context.Context, prefix string) (map[string]Totals, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT scope, COUNT(*), COALESCE(SUM(outcome <> 'ok'), 0),
		COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM model_calls WHERE substr(scope, 1, length(?1)) = ?1 AND scope <> '' GROUP BY scope`, prefix)
	if err != nil {
		return nil, fmt.Errorf("summing model calls by scope of %s*: %w", prefix, err)
	}
	defer rows.Close()
	out := map[string]Totals{}
	for rows.Next() {
		var scope string
		var t Totals
		if err := rows.Scan(&scope, &t.Calls, &t.Failed, &t.PromptTokens, &t.CompletionTokens); err != nil {
			return nil, fmt.Errorf("summing model calls by scope of %s*: %w", prefix, err)
		}
		out[scope] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("summing model calls by scope of %s*: %w", prefix, err)
	}
	return out, nil
}

// Slot is an llm.Recorder that forwards to a Ledger once there is one. The
// model client is built at startup, before an editor names the vault whose
// state database holds the ledger; calls made before Attach are not recorded.
type Slot struct {
	mu sync.Mutex // guards to
	to llm.Recorder
}

// Attach makes the slot forward to r; nil detaches it.
func (s *Slot) Attach(r llm.Recorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.to = r
}

// Record implements llm.Recorder.
func (s *Slot) Record(ctx context.Context, r llm.Record) {
	s.mu.Lock()
	to := s.to
	s.mu.Unlock()
	if to != nil {
		to.Record(ctx, r)
	}
}
