package task

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// tokenBudget is agents.daily_token_budget: the model tokens (prompt and
// completion) the wakes may spend in a day, the user's local day. It
// counts every wake's tokens as each call returns, whether or not there
// is a limit, for vault/status. A wake that starts under the limit runs
// to its end, so a day may overshoot by the wakes in flight.
type tokenBudget struct {
	limit int // 0: no limit

	mu    sync.Mutex // guards day and spent
	day   string     // the day spent counts, YYYY-MM-DD
	spent int
}

func newTokenBudget(limit int) *tokenBudget { return &tokenBudget{limit: max(limit, 0)} }

func dayOf(t time.Time) string { return t.Format(time.DateOnly) }

// startOfDay is the midnight that begins t's day, in t's location.
func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// nextDay is the midnight after t, when a spent budget renews.
func nextDay(t time.Time) time.Time { return startOfDay(t).AddDate(0, 0, 1) }

// add counts n tokens spent at now.
func (b *tokenBudget) add(now time.Time, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := dayOf(now); d != b.day {
		b.day, b.spent = d, 0
	}
	b.spent += n
}

// today is the tokens spent on now's day.
func (b *tokenBudget) today(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if dayOf(now) != b.day {
		return 0
	}
	return b.spent
}

// spentAt reports whether the day's budget is spent at now.
func (b *tokenBudget) spentAt(now time.Time) bool {
	return b.limit > 0 && b.today(now) >= b.limit
}

// holdForBudget reports whether the spent budget holds q's wake until the
// next day, and then makes sure a timer frees the held wakes at midnight.
// A wake that costs no model call is never held.
func (s *scheduler) holdForBudget(q *wakeQueue) bool {
	if q.prio.free || !s.budget.spentAt(s.now()) {
		return false
	}
	if s.dayTimer == nil && !s.stopped {
		t := s.now()
		s.dayTimer = time.AfterFunc(nextDay(t).Sub(t), s.newDay)
	}
	return true
}

// newDay frees the wakes the spent budget held.
func (s *scheduler) newDay() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dayTimer = nil
	if !s.stopped {
		s.startWaiting()
	}
}

// TokensToday sums the model tokens (prompt and completion) of the wake
// runs started on now's day (in now's location): how a restart, and
// margin doctor, know what today's budget spent.
func (s *Store) TokensToday(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM wake_runs WHERE started_at >= ?`,
		store.Stamp(startOfDay(now))).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("summing today's tokens: %w", err)
	}
	return n, nil
}

// BudgetSpent reports whether the day's token budget is spent at now: the
// scheduled reviews (agents/review) spend from it too.
func (r *Runtime) BudgetSpent(now time.Time) bool { return r.sched.budget.spentAt(now) }

// SpendTokens counts tokens a review spent at now against the day's budget.
func (r *Runtime) SpendTokens(now time.Time, tokens int) { r.sched.budget.add(now, tokens) }
