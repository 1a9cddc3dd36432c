package task

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
)

// TestDecisionPromptLines moved here from changes_test.go: the prompt
// lines and run keys of decisions are the wake's.
func TestDecisionPromptLines(t *testing.T) {
	day := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	ds := []changes.Decision{ // newest first, as the store returns them
		{Verdict: changes.Rejected, Summary: "Set estimate to 2h", Tool: "update_task_estimate", Reason: "a day is right", Outcome: changes.ItemRejected, Created: day},
		{Verdict: changes.Confirmed, Summary: "Set priority to P0", Tool: "update_task_priority", Outcome: changes.ItemStale, Created: day},
		{Verdict: changes.Confirmed, Summary: `Add checklist item "QA"`, Tool: "add_checklist_item", Outcome: changes.ItemConfirmed, Created: day.AddDate(0, 0, -1)},
	}
	got := decisionLines(ds)
	want := []string{
		`2026-11-21 confirmed: Add checklist item "QA" (add_checklist_item)`,
		"2026-11-22 confirmed: Set priority to P0 (update_task_priority) — not applied: the task had changed since the proposal",
		"2026-11-22 rejected: Set estimate to 2h (update_task_estimate) — reason: a day is right",
	}
	if !slices.Equal(got, want) {
		t.Errorf("decision lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if k := decisionKeys(ds); len(k) != 3 || runKey("a", "t", nil, k) == runKey("a", "t", nil, nil) {
		t.Error("decisions do not change the run key")
	}
}
