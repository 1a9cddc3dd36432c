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

// An agent that failed into dormancy and one a person paused: doctor
// lists both and why, `agents resume TASK` brings one back, `agents
// resume --all` the rest.
func TestAgentsResumeAndDoctor(t *testing.T) {
	vault := editortest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	// A model that never calls update_report: each wake is a failure.
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: "Looks fine to me."} })
	e := editortest.Start(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_AUTO_CREATE=false", "MARGIN_AGENTS_DORMANT_AFTER=1",
		"MARGIN_LLM_RETRY_LLM_RETRY=0", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(vault)
	var ship, passport struct{ ID string }
	e.MustCall("agents/create", map[string]any{"task": "Tasks/Ship invoice export.md"}, &ship)
	e.WaitFor("the failed agent dormant", func(m editortest.Message) bool {
		return m.Method == "margin/agentStatus" && strings.Contains(string(m.Params), `"lifecycle":"dormant"`)
	})
	e.MustCall("agents/create", map[string]any{"task": "Tasks/Renew passport.md"}, &passport)
	e.MustCall("agents/control", map[string]any{"id": passport.ID, "action": "pause"}, nil)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	env := []string{"OLLAMA_HOST=" + fake.URL}
	out, _, _ := runMargin(t, env, "doctor", "--vault", vault)
	if !strings.Contains(out, "0 active, 2 dormant") || !strings.Contains(out, "Tasks/Ship invoice export.md ("+ship.ID+"): 1 failed wake") ||
		!strings.Contains(out, "Tasks/Renew passport.md ("+passport.ID+"): paused") || !strings.Contains(out, "fix: margin agents resume --all") {
		t.Errorf("doctor does not list the dormant agents and why:\n%s", out)
	}

	if _, stderr, code := runMargin(t, env, "agents", "resume", "--vault", vault); code != exitUsage || !strings.Contains(stderr, "--all") {
		t.Errorf("agents resume without an agent: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runMargin(t, env, "agents", "resume", "--vault", vault, "No such task"); code != exitFailure {
		t.Errorf("agents resume of an unknown task: exit %d, %s", code, stderr)
	}
	out, stderr, code := runMargin(t, env, "agents", "resume", "--vault", vault, "Ship invoice export")
	if code != 0 || !strings.Contains(out, "resumed Tasks/Ship invoice export.md ("+ship.ID+"), dormant because: 1 failed wake") {
		t.Errorf("agents resume TASK: exit %d\n%s\n%s", code, out, stderr)
	}
	lifecycles := func() map[string]string {
		out, stderr, code := runMargin(t, env, "agents", "--vault", vault, "--json")
		var list []struct {
			ID, Lifecycle string
			Failures      int
		}
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("agents --json: exit %d, %s %s", code, out, stderr)
		}
		got := map[string]string{}
		for _, a := range list {
			got[a.ID] = a.Lifecycle
			if a.Lifecycle == "active" && a.Failures != 0 {
				t.Errorf("agent %s resumed with %d failures, want a clean count", a.ID, a.Failures)
			}
		}
		return got
	}
	if got := lifecycles(); got[ship.ID] != "active" || got[passport.ID] != "dormant" {
		t.Errorf("after resuming one: %v", got)
	}
	out, stderr, code = runMargin(t, env, "agents", "resume", "--all", "--vault", vault)
	if code != 0 || !strings.Contains(out, "resumed Tasks/Renew passport.md") || strings.Contains(out, "Ship invoice export") {
		t.Errorf("agents resume --all: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := lifecycles(); got[ship.ID] != "active" || got[passport.ID] != "active" {
		t.Errorf("after resume --all: %v", got)
	}
	out, _, _ = runMargin(t, env, "doctor", "--vault", vault)
	if !strings.Contains(out, "2 active, 0 dormant") {
		t.Errorf("doctor after resume --all:\n%s", out)
	}
}
