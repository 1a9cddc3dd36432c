package changes

import (
	"encoding/json"
	"strings"
	"testing"

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
		{"add_link", `{"path":"Notes/Comet.md","link":"Comet"}`, ""},
		{"add_link", `{"path":"Notes/Comet.md","link":"Comet]] [[Evil"}`, "a wikilink cannot hold"},
		{"add_link", `{"path":"Notes/Comet.md","link":"Comet|alias"}`, "a wikilink cannot hold"},
		{"add_link", `{"path":"Notes/Comet.md","link":"Comet\n## Done"}`, "must be one line"},
		{"add_link", `{"path":"ok","link":"ok"}`, "not a note's path"},
		{"add_link", `{"link":"Comet"}`, "blank"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			err := CheckValues(tc.tool, json.RawMessage(tc.args))
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
				Base: ItemBase(n, tc.tool, json.RawMessage(tc.args))}
			out, stale, err := applyItem(shipPath, src, it, note.Options{})
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
	var status DeferredTool
	for _, d := range DeferredTools() {
		if d.Name == "set_task_status" {
			status = d
		}
	}
	ps, _, err := status.Items(n, Shown{}, json.RawMessage(`{"status":"done","human_summary":"Add checklist item \"Write docs\" — agreed ^c2"}`))
	if err != nil || len(ps) != 1 {
		t.Fatalf("items = %+v, %v", ps, err)
	}
	const want = `Set status to done (because: Add checklist item "Write docs" - agreed ^c2)`
	if ps[0].Summary != want {
		t.Fatalf("summary %q, want %q", ps[0].Summary, want)
	}
	cs := sampleSet(t)
	cs.Items[0] = ChangeItem{ID: "c1", Tool: "set_task_status", Args: ps[0].Args, Summary: ps[0].Summary, Status: ItemPending}
	src, err := renderChangeSet(cs, nil)
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
