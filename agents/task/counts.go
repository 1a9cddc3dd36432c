package task

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

const lifecycleCountsSQL = `SELECT lifecycle, COUNT(*) FROM agents GROUP BY lifecycle`

// LifecycleCounts counts agents by lifecycle in the database. vault/status
// asks for it on every call, so it reads one index (agents_lifecycle), not
// every agent's row.
func (s *Store) LifecycleCounts(ctx context.Context) (map[Lifecycle]int, error) {
	rows, err := s.db.QueryContext(ctx, lifecycleCountsSQL)
	if err != nil {
		return nil, fmt.Errorf("counting agents: %w", err)
	}
	defer rows.Close()
	out := map[Lifecycle]int{}
	for rows.Next() {
		var l Lifecycle
		var n int
		if err := rows.Scan(&l, &n); err != nil {
			return nil, fmt.Errorf("counting agents: %w", err)
		}
		out[l] = n
	}
	return out, rows.Err()
}

// WakeTally counts the wake runs of one template version (name@version;
// "" for runs from before margin recorded it) by how they ended.
type WakeTally struct {
	Template                             string
	Wakes, Completed, Incomplete, Failed int
}

// WakeTallies counts the wake runs of every template version. Runs that
// found the model away say nothing of a template and are not counted.
func (s *Store) WakeTallies(ctx context.Context) ([]WakeTally, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT template, COUNT(*), COALESCE(SUM(status = 'completed'), 0), COALESCE(SUM(status = 'incomplete'), 0),
		COALESCE(SUM(status = 'failed'), 0) FROM wake_runs WHERE status <> 'offline' GROUP BY template`)
	if err != nil {
		return nil, fmt.Errorf("counting wakes: %w", err)
	}
	defer rows.Close()
	var out []WakeTally
	for rows.Next() {
		var w WakeTally
		if err := rows.Scan(&w.Template, &w.Wakes, &w.Completed, &w.Incomplete, &w.Failed); err != nil {
			return nil, fmt.Errorf("counting wakes: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// RunTemplates maps every wake run that recorded its template version to
// that version (name@version).
func (s *Store) RunTemplates(ctx context.Context) (map[int64]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, template FROM wake_runs WHERE template <> ''`)
	if err != nil {
		return nil, fmt.Errorf("reading the versions of runs: %w", err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var label string
		if err := rows.Scan(&id, &label); err != nil {
			return nil, fmt.Errorf("reading the versions of runs: %w", err)
		}
		out[id] = label
	}
	return out, rows.Err()
}

// LastOtherVersion is the version (name@version) of template name the
// agents ran last other than except, "" when they ran no other.
func (s *Store) LastOtherVersion(ctx context.Context, name, except string) (string, error) {
	var label string
	err := s.db.QueryRowContext(ctx, `SELECT template FROM wake_runs WHERE substr(template, 1, length(?1)) = ?1 AND template <> ?2
		ORDER BY id DESC LIMIT 1`, name+"@", except).Scan(&label)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("finding the version before %s: %w", except, err)
	}
	return label, nil
}

// RecentlyWoken returns the agents that are not destroyed and have woken,
// the most recently woken first, at most limit.
func (s *Store) RecentlyWoken(ctx context.Context, limit int) ([]Agent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+agentColumns+` FROM agents a WHERE a.lifecycle <> 'destroyed' AND a.last_wake <> ''
		ORDER BY a.last_wake DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading recent agents: %w", err)
	}
	defer rows.Close()
	var out []Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("reading recent agents: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, s.countPending(ctx, "", out)
}

// Counts are the agents by state, for vault/status.
type Counts struct {
	Active  int `json:"active"`
	Dormant int `json:"dormant"`
	Queued  int `json:"queued"`
	Running int `json:"running"`
	// Routing counts batches of vault changes not yet routed to the
	// agents: wakes may come of them, so the agents are not idle yet.
	Routing int `json:"routing"`
	// WaitingForModel counts the agents whose wake waits for a model
	// that is away; the probe wakes them when it is back.
	WaitingForModel int `json:"waitingForModel"`
	// TokensToday are the model tokens the wakes spent today (the local
	// day), against DailyTokenBudget (agents.daily_token_budget; 0: no
	// limit). BudgetSpent says the wakes that need the model wait for the
	// next day.
	TokensToday      int  `json:"tokensToday"`
	DailyTokenBudget int  `json:"dailyTokenBudget"`
	BudgetSpent      bool `json:"budgetSpent"`
}

// Counts counts the agents.
func (r *Runtime) Counts(ctx context.Context) (Counts, error) {
	byLifecycle, err := r.store.LifecycleCounts(ctx)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Active: byLifecycle[Active], Dormant: byLifecycle[Dormant]}
	c.Queued, c.Running = r.sched.counts()
	c.WaitingForModel = r.watch.count()
	r.mu.Lock()
	c.Routing = len(r.batches) + r.routing
	r.mu.Unlock()
	now, b := r.now(), r.sched.budget
	c.TokensToday, c.DailyTokenBudget, c.BudgetSpent = b.today(now), b.limit, b.spentAt(now)
	return c, nil
}
