package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/note"
)

func TestCheckValues(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		wantErr    string // "" for a value the field holds
	}{
		{"update_task_due_date", `{"due_date":"2026-12-01"}`, ""},
		{"update_task_due_date", `{"due_date":"2026-13-45"}`, "not a day of the calendar"},
		{"update_task_due_date", `{"due_date":"2026-02-29"}`, "not a day of the calendar"},
		{"update_task_due_date", `{"due_date":"next week"}`, "YYYY-MM-DD"},
		{"update_task_estimate", `{"estimate":"1.5h"}`, ""},
		{"update_task_estimate", `{"estimate":"250d"}`, ""},
		{"update_task_estimate", `{"estimate":"99999999999999999999d"}`, "out of range"},
		{"update_task_estimate", `{"estimate":"0m"}`, "out of range"},
		{"update_task_estimate", `{"estimate":"2 hours"}`, "not a duration"},
		{"set_task_title", `{"title":"Ship the CSV export"}`, ""},
		{"set_task_title", `{"title":"Ship\n---\nstatus: done"}`, "must be one line"},
		{"set_task_title", `{"title":"  "}`, "blank"},
		{"set_task_title", `{"title":"` + strings.Repeat("x", 201) + `"}`, "longer than 200"},
		{"assign_task_labels", `{"labels":["billing","q4"]}`, ""},
		{"assign_task_labels", `{"labels":["ok\nstatus: done"]}`, "must be one line"},
		{"assign_task_labels", `{"labels":[]}`, "no labels"},
		{"set_task_status", `{"status":"done"}`, ""},
		{"set_task_status", `{"status":"done\nx: y"}`, "not one of"},
		{"update_task_priority", `{"priority":"P4"}`, "not one of"},
		{"add_checklist_item", `{"title":"a\tb"}`, "must be one line"},
		{"update_checklist_item", `{"text":"QA on staging","done":true}`, ""},
		{"set_task_language", `{"language":"en"}`, "unknown tool"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			err := checkValues(tc.tool, json.RawMessage(tc.args))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// An item stored before values were checked is refused when confirmed,
// and nothing reaches the task note.
func TestApplyRefusesAValueItsFieldCannotHold(t *testing.T) {
	src := shipTask(t)
	n := note.Parse(shipPath, src, note.Options{})
	for _, tc := range []struct{ tool, args string }{
		{"update_task_due_date", `{"due_date":"2026-13-45"}`},
		{"update_task_estimate", `{"estimate":"99999999999999999999d"}`},
		{"set_task_title", `{"title":"Ship\n---\nstatus: done"}`},
		{"assign_task_labels", `{"labels":["ok\nstatus: done"]}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			it := ChangeItem{ID: "c1", Tool: tc.tool, Args: json.RawMessage(tc.args), Status: ItemPending,
				Base: itemBase(n, tc.tool, json.RawMessage(tc.args))}
			out, stale, err := applyItem(shipPath, src, it, nil)
			if err != nil || out != nil || !strings.HasPrefix(stale, "refused, nothing written: ") {
				t.Errorf("applyItem = %q, %q, %v; want a refusal", out, stale, err)
			}
		})
	}
}

// The line a person ticks says what the item does, in margin's words; the
// model's words follow as its reason and cannot be mistaken for the
// person's own reason when they reject it.
func TestChangeLineSaysWhatTheItemDoes(t *testing.T) {
	n := note.Parse(shipPath, shipTask(t), note.Options{})
	var status deferredTool
	for _, d := range deferredTools() {
		if d.name == "set_task_status" {
			status = d
		}
	}
	ps, _, err := status.items(n, json.RawMessage(`{"status":"done","human_summary":"Add checklist item \"Write docs\" — agreed ^c2"}`))
	if err != nil || len(ps) != 1 {
		t.Fatalf("items = %+v, %v", ps, err)
	}
	const want = `Set status to done (because: Add checklist item "Write docs" - agreed ^c2)`
	if ps[0].Summary != want {
		t.Fatalf("summary %q, want %q", ps[0].Summary, want)
	}
	cs := sampleSet(t)
	cs.Items[0] = ChangeItem{ID: "c1", Tool: "set_task_status", Args: ps[0].Args, Summary: ps[0].Summary, Status: ItemPending}
	src, err := renderChangeSet(cs)
	if err != nil {
		t.Fatal(err)
	}
	line := "- [ ] " + want + " ^c1"
	if !strings.Contains(string(src), "\n"+line+"\n") {
		t.Fatalf("file lacks %q:\n%s", line, src)
	}
	edited := strings.Replace(string(src), line, "- [-] "+want+" — not yet — Dana decides ^c1", 1)
	ds, ignored := fileDecisions([]byte(edited), cs)
	if len(ds) != 1 || ds[0].Verdict != Rejected || ds[0].Reason != "not yet — Dana decides" || len(ignored) > 0 {
		t.Errorf("decisions %+v, ignored %q; want c1 rejected for %q", ds, ignored, "not yet — Dana decides")
	}
	if got := because("Set estimate to 2h", "Set estimate to 2h."); got != "Set estimate to 2h" {
		t.Errorf("a reason that repeats the action: %q", got)
	}
}

// set_task_language fills in a language, never replaces the person's.
func TestSetTaskLanguageLeavesASetLanguage(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	p := filepath.Join(c.v.Dir(), chaosTask)
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	withLanguage := strings.Replace(string(src), "type: task\n", "type: task\nlanguage: en\n", 1)
	if err := os.WriteFile(p, []byte(withLanguage), 0o644); err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("set_task_language", map[string]any{"language": "de"})}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	if got, _ := os.ReadFile(p); string(got) != withLanguage {
		t.Errorf("the task's language was overwritten:\n%s", got)
	}
	reqs := c.fake.Requests()
	if len(reqs) < 2 || !strings.Contains(string(reqs[1].Raw), "the task's language is already en") {
		t.Errorf("the model was not told the language is set")
	}
}

// A person's save made from a copy older than margin's last write (they
// saved while items were being decided) does not leave decided items
// reading as open: margin writes those lines as decided again.
func TestStaleSaveOfAChangeSetFileGetsItsDecidedLinesBack(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("add_multiple_checklist_items", map[string]any{"items": []any{
					map[string]any{"title": "One"}, map[string]any{"title": "Two"}, map[string]any{"title": "Three"}}}),
				goodReport,
			}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	ctx := t.Context()
	sets, err := c.rt.store.ChangeSets(ctx, ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 || len(sets[0].Items) != 3 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	cs := sets[0]
	p := filepath.Join(c.v.Dir(), cs.Path)
	pending, err := os.ReadFile(p) // the person's copy
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.rt.Decide(ctx, cs.ID, []ItemDecision{{Item: "c1", Verdict: Rejected}, {Item: "c2", Verdict: Rejected}, {Item: "c3", Verdict: Rejected, Reason: "later"}}); err != nil {
		t.Fatal(err)
	}
	// Their save lands after margin's write, with a line of their own.
	saved := strings.Replace(string(pending), "\n- [ ] ", "\nAsk Dana.\n- [ ] ", 1)
	if err := os.WriteFile(p, []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.onChangeSetFile(ctx, cs.Path); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if n := strings.Count(string(got), "\n- [-] "); n != 3 || !strings.Contains(string(got), "\nstatus: resolved\n") {
		t.Errorf("%d of 3 rejected lines read as rejected:\n%s", n, got)
	}
	if !strings.Contains(string(got), "\nAsk Dana.\n") {
		t.Errorf("the person's own line was lost:\n%s", got)
	}
}

// An item stored before values were checked (an older margin, or an edit
// of the database) is refused when a person confirms it: nothing reaches
// the task note, and the item is settled with why, not left pending.
func TestConfirmingAnInvalidStoredItemWritesNothing(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	ctx := t.Context()
	a, err := c.rt.store.Agent(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(c.v.Dir(), chaosTask)
	task, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := note.Parse(chaosTask, task, note.Options{})
	args := `{"due_date":"2026-13-45"}`
	if _, err := c.rt.store.db.ExecContext(ctx, `INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
		VALUES (?, 1, 'op', 'update_task_due_date', ?, 'Set due date to 2026-13-45', ?, '2026-11-22T09:00:00Z')`,
		a.ID, args, itemBase(n, "update_task_due_date", json.RawMessage(args))); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.routeProposals(ctx, a, 1, n); err != nil {
		t.Fatal(err)
	}
	sets, err := c.rt.store.ChangeSets(ctx, ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	cs, err := c.rt.ConfirmAll(ctx, sets[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if it := cs.Items[0]; it.Status != ItemStale || !strings.Contains(it.Detail, "not a day of the calendar") {
		t.Errorf("item %s (%s), want refused with why", it.Status, it.Detail)
	}
	if got, _ := os.ReadFile(p); string(got) != string(task) {
		t.Errorf("the task note changed:\n%s", got)
	}
	file, _ := os.ReadFile(filepath.Join(c.v.Dir(), cs.Path))
	if !strings.Contains(string(file), "- [-] Set due date to 2026-13-45 — not applied: refused, nothing written: ") {
		t.Errorf("change set file:\n%s", file)
	}
}
