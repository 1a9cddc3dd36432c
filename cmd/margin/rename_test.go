package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// A task renamed while margin serves takes its report, journal and pending
// change set along: margin changes lists the set under the new path and
// name, and approving it edits the renamed note.
func TestRenamedTaskTakesItsOutputsToMarginChanges(t *testing.T) {
	vault := editortest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "record_observations", Args: map[string]any{"observations": []string{"Acme wants the flag first."}}},
			{Name: "update_task_priority", Args: map[string]any{"priority": "P0"}},
			{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- [ ] QA\n"}},
		}}
	})
	const renamed = "Tasks/Invoice CSV export.md"
	e := editortest.Start(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(vault)
	e.MustCall("agents/create", map[string]any{"task": "Tasks/Ship invoice export.md"}, nil)
	e.WaitFor("the change set", func(m editortest.Message) bool { return m.Method == "margin/changeSetCreated" })
	if err := os.Rename(filepath.Join(vault, "Tasks", "Ship invoice export.md"), filepath.Join(vault, renamed)); err != nil {
		t.Fatal(err)
	}
	e.WaitFor("the report on the renamed task", func(m editortest.Message) bool {
		return m.Method == "margin/reportUpdated" && strings.Contains(string(m.Params), `"task":"`+renamed+`"`)
	})
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	link := "task: \"[[Tasks/Invoice CSV export]]\"\n"
	for _, p := range []string{"Margin/Reports/Invoice CSV export.md", "Margin/Journal/Invoice CSV export.md"} {
		if b, err := os.ReadFile(filepath.Join(vault, p)); err != nil || !strings.Contains(string(b), link) {
			t.Errorf("%s (%v):\n%s", p, err, b)
		}
	}
	for _, p := range []string{"Margin/Reports/Ship invoice export.md", "Margin/Journal/Ship invoice export.md"} {
		if _, err := os.Stat(filepath.Join(vault, p)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}

	out, stderr, code := runMargin(t, nil, "changes", "--vault", vault, "--json")
	var sets []struct{ ID, Task, Path string }
	if code != 0 || json.Unmarshal([]byte(out), &sets) != nil || len(sets) != 1 {
		t.Fatalf("changes --json: exit %d, %s %s", code, out, stderr)
	}
	if cs := sets[0]; cs.Task != renamed || !strings.HasPrefix(cs.Path, "Margin/Changes/Invoice CSV export/") {
		t.Errorf("margin changes lists %+v; want it on %s, under Margin/Changes/Invoice CSV export/", cs, renamed)
	}
	if b, err := os.ReadFile(filepath.Join(vault, sets[0].Path)); err != nil || !strings.Contains(string(b), link) {
		t.Errorf("the change set file (%v):\n%s", err, b)
	}
	if out, stderr, code := runMargin(t, nil, "approve", sets[0].ID, "--vault", vault); code != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", code, out, stderr)
	}
	task, err := os.ReadFile(filepath.Join(vault, renamed))
	if err != nil || !strings.Contains(string(task), "\npriority: P0\n") {
		t.Errorf("the renamed task after approve (%v):\n%s", err, task)
	}
	if _, err := os.Stat(filepath.Join(vault, "Tasks", "Ship invoice export.md")); !os.IsNotExist(err) {
		t.Errorf("approving brought the old path back: %v", err)
	}
}
