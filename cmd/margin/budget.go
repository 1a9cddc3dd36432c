package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/margin-md/margin/agents/review"
	"github.com/margin-md/margin/agents/task"
)

// budgetFinding says what the wakes spent today against
// agents.daily_token_budget, from the runs in the state database.
func budgetFinding(ctx context.Context, cfg Config, db *sql.DB) finding {
	f := finding{check: "token budget", ok: true}
	st, err := task.OpenStore(ctx, db)
	if err != nil {
		f.warn, f.detail = true, err.Error()
		return f
	}
	spent, err := st.TokensToday(ctx, time.Now())
	if err != nil {
		f.warn, f.detail = true, err.Error()
		return f
	}
	// The scheduled reviews spend from the same budget.
	rs, err := review.OpenStore(ctx, db)
	if err == nil {
		var reviews int
		reviews, err = rs.TokensToday(ctx, time.Now())
		spent += reviews
	}
	if err != nil {
		f.warn, f.detail = true, err.Error()
		return f
	}
	limit := cfg.Agents.DailyTokenBudget
	switch {
	case limit == 0:
		f.detail = fmt.Sprintf("no daily limit (agents.daily_token_budget: 0); the wakes and reviews spent %d tokens today", spent)
	case spent >= limit:
		f.warn = true
		f.detail = fmt.Sprintf("spent: %d of %d tokens today (agents.daily_token_budget); wakes that need the model wait until midnight", spent, limit)
		f.fix = "wait for tomorrow, or raise agents.daily_token_budget (0: no limit) and restart margin"
	default:
		f.detail = fmt.Sprintf("%d of %d tokens spent today (agents.daily_token_budget)", spent, limit)
	}
	return f
}
