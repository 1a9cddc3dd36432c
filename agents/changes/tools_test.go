package changes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

func TestDeferredToolsProposeOnlyChanges(t *testing.T) {
	task := note.Parse("Tasks/Ship.md", []byte(sampleTask), note.Options{})
	byName := map[string]DeferredTool{}
	for _, d := range DeferredTools() {
		byName[d.Name] = d
	}
	tests := []struct {
		tool, args    string
		items         []string // summaries
		unchanged     int
		wantErrSubstr string
	}{
		{tool: "update_task_priority", args: `{"priority":"P1"}`, unchanged: 1},
		{tool: "update_task_priority", args: `{"priority":"P0"}`, items: []string{"Set priority to P0"}},
		{tool: "set_task_status", args: `{"status":"done","human_summary":"It shipped"}`, items: []string{"Set status to done (because: It shipped)"}},
		{tool: "set_task_status", args: `{"status":"in-progress"}`, unchanged: 1},
		{tool: "add_multiple_checklist_items", args: `{"items":[{"title":"QA on staging"},{"title":"Write docs"},{"title":"Flag on"}]}`,
			items: []string{`Add checklist item "Write docs"`, `Add checklist item "Flag on"`}, unchanged: 1},
		{tool: "update_checklist_items", args: `{"items":[{"text":"QA on staging","done":true},{"text":"Spec the columns","done":true}]}`,
			items: []string{`Check off "QA on staging"`}, unchanged: 1},
		{tool: "update_checklist_items", args: `{"items":[{"text":"No such item","done":true}]}`, wantErrSubstr: "no checklist item"},
		{tool: "set_task_title", args: `{"title":"Ship"}`, unchanged: 1},
		{tool: "set_task_title", args: `{"title":"Ship the CSV export"}`, items: []string{`Rename the task to "Ship the CSV export"`}},
		{tool: "assign_task_labels", args: `{"labels":["billing"]}`, items: []string{"Add labels billing"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			items, unchanged, err := byName[tt.tool].Items(task, Shown{}, json.RawMessage(tt.args))
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Errorf("err = %v, want %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Summary)
			}
			if strings.Join(got, "|") != strings.Join(tt.items, "|") || len(unchanged) != tt.unchanged {
				t.Errorf("items %q, unchanged %q; want %q and %d unchanged", got, unchanged, tt.items, tt.unchanged)
			}
		})
	}
}

// sampleTask is task's prompt_test sampleTask: a task a wake proposes against.
const sampleTask = "---\ntype: task\nstatus: in-progress\npriority: P1\n---\n# Ship export\n\nLong prose the agent read before.\n\n## Checklist\n- [x] Spec the columns\n- [ ] QA on staging\n"
