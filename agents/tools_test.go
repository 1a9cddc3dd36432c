package agents

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/vault/note"
)

func TestToolSchemasRejectBadArguments(t *testing.T) {
	wt := &wakeTools{}
	box, err := wt.toolbox()
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]*jsonschema.Schema{}
	for _, s := range box.Specs() {
		specs[s.Name] = s.Schema
	}
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{"update_report", `{"tldr":"t","content":"c"}`, true},
		{"update_report", `{"tldr":"","content":"c"}`, false},
		{"update_report", `{"content":"c"}`, false},
		{"update_report", `{"tldr":"t","content":"c","extra":1}`, false},
		{"record_observations", `{"observations":["x"]}`, true},
		{"record_observations", `{"observations":[]}`, false},
		{"set_task_language", `{"language":"pt-BR"}`, true},
		{"set_task_language", `{"language":"Portuguese"}`, false},
		{"set_task_status", `{"status":"done"}`, true},
		{"set_task_status", `{"status":"finished"}`, false},
		{"update_task_priority", `{"priority":"P9"}`, false},
		{"update_task_due_date", `{"due_date":"tomorrow"}`, false},
		{"update_task_due_date", `{"due_date":"2026-12-01","human_summary":"Move due"}`, true},
		{"update_task_estimate", `{"estimate":"1.5h"}`, true},
		{"update_task_estimate", `{"estimate":"a while"}`, false},
		{"add_multiple_checklist_items", `{"items":[{"title":""}]}`, false},
		{"update_checklist_items", `{"items":[{"text":"QA","done":true}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			s := specs[tt.tool]
			if s == nil {
				t.Fatalf("tool %s not offered", tt.tool)
			}
			rs, err := s.Resolve(nil)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			json.Unmarshal([]byte(tt.args), &v)
			if err := rs.Validate(v); (err == nil) != tt.ok {
				t.Errorf("valid = %v (%v), want %v", err == nil, err, tt.ok)
			}
		})
	}
}

func TestDeferredToolsProposeOnlyChanges(t *testing.T) {
	task := note.Parse("Tasks/Ship.md", []byte(sampleTask), note.Options{})
	byName := map[string]deferredTool{}
	for _, d := range deferredTools() {
		byName[d.name] = d
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
			items, unchanged, err := byName[tt.tool].items(task, json.RawMessage(tt.args))
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
