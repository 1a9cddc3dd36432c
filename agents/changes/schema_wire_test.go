package changes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// TestDeferredToolSchemasOnTheWire offers the deferred tools through the
// real ollama/api client to the fake server and reads their parameters as
// the server received them: closed sets carry their enum; a property's
// pattern or length bounds, which Ollama's tool parameters have no field
// for, are said in its description (a list's items keep theirs as they
// are).
func TestDeferredToolSchemasOnTheWire(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	fake.Script(llmtest.Reply{Content: "nothing to change"})
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	var specs []llm.ToolSpec
	for _, d := range DeferredTools() {
		specs = append(specs, llm.ToolSpec{Name: d.Name, Description: d.Description, Schema: d.Schema})
	}
	if _, err := client.Chat(t.Context(), llm.Request{Role: "task", Messages: []llm.Message{{Role: llm.RoleUser, Content: "wake"}}, Tools: specs}); err != nil {
		t.Fatal(err)
	}
	params := map[string]map[string]any{}
	for _, tool := range fake.Requests()[0].Tools {
		b, _ := json.Marshal(tool.Function.Parameters)
		var p struct {
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		params[tool.Function.Name] = p.Properties
	}
	prop := func(tool, path string) map[string]any {
		var cur any = map[string]any{"properties": params[tool]}
		for _, name := range splitPath(path) {
			m, _ := cur.(map[string]any)
			if name == "[]" {
				cur = m["items"]
				continue
			}
			props, _ := m["properties"].(map[string]any)
			cur = props[name]
		}
		m, _ := cur.(map[string]any)
		return m
	}
	for _, c := range []struct{ tool, path, key, says string }{
		{"set_task_status", "status", "enum", ""},
		{"update_task_priority", "priority", "enum", ""},
		{"update_task_due_date", "due_date", "description", "matching ^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
		{"update_task_estimate", "estimate", "description", "matching ^([0-9]+"},
		{"set_task_title", "title", "description", "at least 1 character; at most 300 characters)"},
		{"assign_task_labels", "labels", "description", "at least 1 item)"},
		{"assign_task_labels", "labels.[]", "minLength", ""},
		{"add_multiple_checklist_items", "items.[].title", "minLength", ""},
		{"add_multiple_checklist_items", "items.[].title", "maxLength", ""},
		{"update_checklist_items", "items.[].text", "minLength", ""},
		{"update_checklist_items", "items.[].text", "maxLength", ""},
	} {
		p := prop(c.tool, c.path)
		if p == nil || p[c.key] == nil {
			t.Errorf("%s %s has no %s on the wire: %v", c.tool, c.path, c.key, p)
			continue
		}
		if d, _ := p[c.key].(string); c.says != "" && !strings.Contains(d, c.says) {
			t.Errorf("%s %s: %s %q does not say %q", c.tool, c.path, c.key, d, c.says)
		}
	}
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return out
}
