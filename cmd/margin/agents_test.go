package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

func TestAgentsAndReportCommands(t *testing.T) {
	vault := editortest.SampleVault(t)
	if _, stderr, code := runMargin(t, nil, "agents", "--vault", vault); code != 0 || !strings.Contains(stderr, "no agents yet") {
		t.Errorf("agents on a fresh vault: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := runMargin(t, nil, "report", "--vault", vault, "Ship invoice export"); code != 1 || !strings.Contains(stderr, "no report") {
		t.Errorf("report before any wake: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := runMargin(t, nil, "agents", "--vault", vault, "--lifecycle", "asleep"); code != exitUsage {
		t.Errorf("agents --lifecycle asleep: exit %d, want %d", code, exitUsage)
	}

	// margin serve creates the agent and its first report.
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- [ ] QA\n"}}}}
	})
	e := editortest.Start(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(vault)
	e.MustCall("agents/create", map[string]any{"task": "Tasks/Ship invoice export.md"}, nil)
	e.WaitFor("the report", func(m editortest.Message) bool { return m.Method == "margin/reportUpdated" })
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	out, stderr, code := runMargin(t, nil, "agents", "--vault", vault, "--json")
	var list []struct{ Task, Lifecycle string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].Task != "Tasks/Ship invoice export.md" {
		t.Errorf("agents --json: exit %d, %s %s", code, out, stderr)
	}
	out, stderr, code = runMargin(t, nil, "report", "--vault", vault, "Ship invoice export")
	if code != 0 || !strings.Contains(out, "TLDR: QA left.") || !strings.Contains(out, "- ☐ QA") || !strings.Contains(out, "qwen2.5:7b") {
		t.Errorf("report: exit %d\n%s\n%s", code, out, stderr)
	}
}
