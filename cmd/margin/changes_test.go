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

func TestChangesApproveAndRejectCommands(t *testing.T) {
	vault := editortest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h"}},
			{Name: "update_task_priority", Args: map[string]any{"priority": "P0"}},
			{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- [ ] QA\n"}},
		}}
	})
	e := editortest.Start(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(vault)
	e.MustCall("agents/create", map[string]any{"task": "Tasks/Ship invoice export.md"}, nil)
	e.WaitFor("the change set", func(m editortest.Message) bool { return m.Method == "margin/changeSetCreated" })
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	out, stderr, code := runMargin(t, nil, "changes", "--vault", vault, "--json")
	var sets []struct {
		ID    string
		Items []struct{ ID, Summary string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &sets) != nil || len(sets) != 1 || len(sets[0].Items) != 2 {
		t.Fatalf("changes --json: exit %d, %s %s", code, out, stderr)
	}
	id := sets[0].ID

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"reject one item with a reason", []string{"reject", id, "c2", "--reason", "P1 is right"}, 0, "c2 rejected"},
		{"approve the rest", []string{"approve", id}, 0, "c1 confirmed"},
		{"approve again applies nothing twice", []string{"approve", id, "c1"}, 0, id + ": resolved"},
		{"unknown change set", []string{"approve", "nope"}, 1, ""},
		{"unknown item", []string{"reject", id, "c9"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runMargin(t, nil, append(tc.args, "--vault", vault)...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) {
				t.Errorf("margin %v: exit %d (want %d)\n%s\n%s", tc.args, code, tc.wantCode, out, stderr)
			}
		})
	}
	task, err := os.ReadFile(filepath.Join(vault, "Tasks", "Ship invoice export.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(task), "\nestimate: 2h\n") || !strings.Contains(string(task), "\npriority: P1\n") {
		t.Errorf("task after approve/reject:\n%s", task)
	}
	if out, _, code := runMargin(t, nil, "changes", "--vault", vault); code != 0 || strings.Contains(out, id) {
		t.Errorf("changes lists the resolved set by default: %s", out)
	}
	if out, _, _ := runMargin(t, nil, "changes", "--vault", vault, "--status", "all"); !strings.Contains(out, id) || !strings.Contains(out, "rejected") {
		t.Errorf("changes --status all: %s", out)
	}

	// The decisions and the applied estimate are state the agent has not
	// seen: the next serve wakes it at startup, and the prompt carries
	// the reason given on the command line.
	calls := len(fake.Requests())
	e = editortest.Start(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(vault)
	e.WaitFor("the wake after the decisions", func(m editortest.Message) bool { return m.Method == "margin/reportUpdated" })
	reqs := fake.Requests()
	if len(reqs) <= calls {
		t.Fatal("no wake after the command-line decisions")
	}
	var prompt string
	for _, m := range reqs[calls].Messages {
		if m.Role == "user" {
			prompt = m.Content
		}
	}
	if !strings.Contains(prompt, "rejected: Set priority to P0 (update_task_priority) — reason: P1 is right") {
		t.Errorf("the wake after the decisions does not show the rejection:\n%s", prompt)
	}
}
