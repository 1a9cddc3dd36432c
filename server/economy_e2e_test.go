package server_test

import (
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// Once agents.daily_token_budget is spent, the next model wake waits for
// the next day, and vault/status.agents says so with today's tokens; a
// done task's wake needs no model and still writes its report.
func TestDailyTokenBudgetShowsInStatus(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_AGENTS_DAILY_TOKEN_BUDGET=1"))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	waitWakes(t, e, a.ID, 1)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if !st.Agents.BudgetSpent || st.Agents.DailyTokenBudget != 1 || st.Agents.TokensToday < 1 || st.Agents.Queued != 0 {
		t.Fatalf("after one wake vault/status.agents = %+v, want the budget of 1 spent, today's tokens and nothing queued", st.Agents)
	}

	createAgent(t, e, "Tasks/Renew passport.md")
	e.MustCall("vault/status", nil, &st)
	if st.Agents.Queued != 1 || st.Agents.Running != 0 {
		t.Errorf("a wake under the spent budget: vault/status.agents = %+v, want it queued", st.Agents)
	}
	done := createAgent(t, e, "Tasks/Book physio appointment.md")
	waitNth(e, "the done task's report", "margin/reportUpdated", 1, forTask(done.Task))
	if report := readFile(t, dir, "Margin/Reports/Book physio appointment.md"); !strings.Contains(report, `generated_by: "offline"`) {
		t.Errorf("the done task's report:\n%s", report)
	}
	if calls := len(fake.Requests()); calls != 1 {
		t.Errorf("%d model calls, want only the first wake's", calls)
	}
}
