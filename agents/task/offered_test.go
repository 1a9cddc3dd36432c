package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
)

var (
	immediate = []string{"update_report", "record_observations"}
	fields    = []string{"set_task_title", "set_task_status", "update_task_estimate", "update_task_due_date", "update_task_priority", "assign_task_labels"}
	checklist = []string{"add_multiple_checklist_items", "update_checklist_items"}
)

func offered(names ...[]string) []string { return slices.Concat(names...) }

const noChecklistTask = "---\ntype: task\nstatus: open\n---\n# Call the bank\n\nAsk about the fee.\n"

func withLanguage(src string) string {
	return strings.Replace(src, "type: task\n", "type: task\nlanguage: en\n", 1)
}

// A wake offers only the tools that can apply to its task (SPEC §4.1).
func TestToolsOfferedByTaskShape(t *testing.T) {
	tests := []struct {
		name, task string
		want       []string
	}{
		{"checklist, no language", sampleTask, offered(immediate, []string{"set_task_language"}, fields, checklist)},
		{"checklist, language", withLanguage(sampleTask), offered(immediate, fields, checklist)},
		{"no checklist, no language", noChecklistTask, offered(immediate, []string{"set_task_language"}, fields)},
		{"no checklist, language", withLanguage(noChecklistTask), offered(immediate, fields)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box, err := (&wakeTools{w: &waking{task: taskNote(tt.task)}}).toolbox()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range box.Specs() {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("offered %v\nwant    %v", got, tt.want)
			}
			b, _ := json.Marshal(box.Specs())
			t.Logf("%d tools, %d characters of definitions", len(got), len(b))
		})
	}
}

// toolsAndSystem are the stable prefix of a wake's request as it goes to
// the model server: the system prompt and the tool definitions, in bytes.
func toolsAndSystem(t *testing.T, req llmtest.OllamaRequest) (tools, system string) {
	t.Helper()
	var body struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(req.Raw, &body); err != nil {
		t.Fatal(err)
	}
	if req.Messages[0].Role != "system" {
		t.Fatalf("first message is %s, want the system prompt", req.Messages[0].Role)
	}
	return string(body.Tools), req.Messages[0].Content
}

func toolNames(t *testing.T, tools string) []string {
	t.Helper()
	var defs []struct {
		Function struct{ Name string } `json:"function"`
	}
	if err := json.Unmarshal([]byte(tools), &defs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range defs {
		out = append(out, d.Function.Name)
	}
	return out
}

// The system prompt and the tool definitions are the same bytes on each
// wake of a template version, for every task of the same shape, so a
// model server reuses its KV cache; a task of another shape is offered
// fewer tools, and a call to a withheld one is told why.
func TestWakePromptPrefixIsStable(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	// A second wake on a changed task: the user message differs, the prefix not.
	p := filepath.Join(c.v.Dir(), chaosTask)
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(src, "\nDemo on Friday.\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	c.wake(t)
	// Another task of the same shape (a checklist, no language).
	other, err := c.rt.store.createAgent(t.Context(), "Tasks/Renew passport.md", "", c.rt.now())
	if err != nil {
		t.Fatal(err)
	}
	c.id = other.ID
	c.wake(t)

	reqs := c.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	tools0, system0 := toolsAndSystem(t, reqs[0])
	if names := toolNames(t, tools0); !slices.Equal(names, offered(immediate, []string{"set_task_language"}, fields, checklist)) {
		t.Errorf("offered %v, want all 11 tools", names)
	}
	for i, req := range reqs[1:] {
		tools, system := toolsAndSystem(t, req)
		if tools != tools0 || system != system0 {
			t.Errorf("wake %d: the prompt prefix changed (tools equal %v, system equal %v)", i+2, tools == tools0, system == system0)
		}
	}
	if userOf(reqs[0]) == userOf(reqs[1]) {
		t.Error("the second wake's user message is the first's: the test changed nothing")
	}
	t.Logf("stable prefix: %d characters of system prompt, %d of tool definitions", len(system0), len(tools0))
}

func userOf(req llmtest.OllamaRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// A task with a language and no checklist is offered 8 tools; a model that
// calls set_task_language anyway is told the language is set.
func TestWakeWithholdsToolsThatCannotApply(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	p := filepath.Join(c.v.Dir(), chaosTask)
	if err := os.WriteFile(p, []byte(withLanguage(noChecklistTask)), 0o644); err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("set_task_language", map[string]any{"language": "de"}),
				call("update_checklist_items", map[string]any{"items": []any{map[string]any{"text": "x", "done": true}}}),
			}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	reqs := c.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	tools, _ := toolsAndSystem(t, reqs[0])
	if names := toolNames(t, tools); !slices.Equal(names, offered(immediate, fields)) {
		t.Errorf("offered %v, want %v", names, offered(immediate, fields))
	}
	t.Logf("%d characters of tool definitions on the wire", len(tools))
	raw := string(reqs[1].Raw)
	for _, want := range []string{"the task's language is already en", "the task has no checklist"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the model was not told %q", want)
		}
	}
	if got, _ := os.ReadFile(p); string(got) != withLanguage(noChecklistTask) {
		t.Errorf("the task changed:\n%s", got)
	}
}
