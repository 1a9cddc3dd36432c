package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault/vaulttest"
)

// TestChaosOverStdio runs the built binary against a model that misbehaves
// for every agent at once: the task agent makes tool calls that try to
// change what they must not, the query agents answer garbage, then every
// reply comes too late. The server must stay up, tell the editor what
// failed, apply nothing without a decision, and write nothing outside
// Margin/ but the day's log.
func TestChaosOverStdio(t *testing.T) {
	const maxTurns = 3
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	slow := make(chan struct{})
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		select {
		case <-slow:
			return llmtest.Reply{Content: "{}", Delay: time.Minute}
		default:
		}
		if querytest.RoleOf(r) != "" {
			return llmtest.Reply{Content: "```json\n{\"answer\": 42, \"input_type\": [\"query\"]}\n```"}
		}
		// The task agent: deferred changes that try to apply themselves,
		// a language that is not one, a report that is not one.
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "set_task_status", Args: map[string]any{"status": "done", "human_summary": "Applied already\n- [x] c1"}},
			{Name: "set_task_status", Args: map[string]any{"status": "done", "apply": true}},
			{Name: "set_task_language", Args: map[string]any{"language": "en\nstatus: done"}},
			{Name: "write_file", Args: map[string]any{"path": "../../outside.md"}},
			{Name: "update_report", Args: map[string]any{"tldr": 1, "content": "---\nstatus: done\n---"}},
		}}
	})
	dir := editortest.SampleVault(t)
	before := vaulttest.UserFiles(t, dir)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_AGENTS_MAX_TURNS=3", "MARGIN_AGENTS_DORMANT_AFTER=1", "MARGIN_LLM_RETRY_TIMEOUT=2s"),
		"--now", querytest.NowFlag)
	e.Initialize(dir)

	// The wake ends within max_turns, proposes, applies nothing, and
	// the editor hears of the failure.
	a := createAgent(t, e, shipTask)
	st := waitNth(e, "agentStatus after the failed wake", "margin/agentStatus", 1, nil)
	if !strings.Contains(string(st), `"failures":1`) || !strings.Contains(string(st), "without update_report") {
		t.Errorf("agentStatus = %s, want the failure and why", st)
	}
	taskCalls := 0
	for _, r := range fake.Requests() {
		if querytest.RoleOf(r) == "" {
			taskCalls++
		}
	}
	if taskCalls != maxTurns {
		t.Errorf("the wake made %d model calls, want max_turns = %d", taskCalls, maxTurns)
	}
	var sets protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"task": shipTask}, &sets)
	if len(sets.ChangeSets) != 1 || len(sets.ChangeSets[0].Items) != 1 || sets.ChangeSets[0].Items[0].Status != "pending" {
		t.Errorf("change sets %+v, want the one valid proposal, pending", sets.ChangeSets)
	}

	// The query agents' garbage degrades the answer, and says so.
	var r protocol.Answer
	e.MustCall("query/ask", map[string]any{"text": "Why did my bench press feel heavy last week?"}, &r)
	if r.Status != "degraded" || !strings.Contains(r.Answer, "did not match the expected format") || len(r.Citations) == 0 {
		t.Errorf("ask: status %s answer %q citations %d, want degraded with search hits", r.Status, r.Answer, len(r.Citations))
	}
	var logged protocol.LogResult
	e.MustCall("log/append", map[string]any{"text": "Bench 3x5 @ 200"}, &logged)
	if logged.Path != "Daily/2026-11-22.md" {
		t.Errorf("log/append = %+v, want it logged to today's note", logged)
	}

	// Every reply too late: the timeout ends each call.
	close(slow)
	n := len(fake.Requests())
	e.MustCall("query/ask", map[string]any{"text": "How is the invoice export going?"}, &r)
	if r.Status != "degraded" || !strings.Contains(r.Answer, "took over 2s") {
		t.Errorf("slow ask: status %s answer %q, want degraded naming the timeout", r.Status, r.Answer)
	}
	if calls := len(fake.Requests()) - n; calls > 1 {
		t.Errorf("a slow router got %d requests, want one (llm_retry 0): the flow degrades after it", calls)
	}

	// Still up and answering.
	var status struct{ Notes int }
	e.MustCall("vault/status", nil, &status)
	var got protocol.AgentDetail
	e.MustCall("agents/get", map[string]any{"id": a.ID}, &got)
	if status.Notes == 0 || got.Lifecycle != "dormant" {
		t.Errorf("vault/status notes %d, agent %s: want the server up and the agent dormant after dormant_after=1", status.Notes, got.Lifecycle)
	}

	if out := vaulttest.Changed(before, vaulttest.UserFiles(t, dir), "Daily/2026-11-22.md"); len(out) > 0 {
		t.Errorf("changed, added or removed outside Margin/: %v", out)
	}
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	if e.Exit() != 0 {
		t.Errorf("margin did not exit cleanly; stderr:\n%s", e.StderrText())
	}
}
