package task

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/vault/note"
)

// taskNote parses src as the task note a wake reads.
func taskNote(src string) *note.Note {
	return note.Parse("Tasks/Ship export.md", []byte(src), note.Options{})
}

func TestToolSchemasRejectBadArguments(t *testing.T) {
	// A task with a checklist and no language is offered every tool.
	wt := &wakeTools{w: &waking{task: taskNote(sampleTask)}}
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
