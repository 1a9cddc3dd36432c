package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault/store"
)

const (
	activeTemplate = "Margin/Templates/task-agent.md"
	evolutionModel = "qwen2.5:14b"
)

// systemPrompts are the system prompts of the task model's requests, in order.
func systemPrompts(o *llmtest.Ollama) []string {
	var out []string
	for _, r := range o.Requests() {
		if r.Model == taskModel && len(r.Messages) > 0 && r.Messages[0].Role == "system" {
			out = append(out, r.Messages[0].Content)
		}
	}
	return out
}

func getTemplate(t *testing.T, e *editortest.Editor) protocol.TemplateResult {
	t.Helper()
	var got protocol.TemplateResult
	e.MustCall("templates/get", map[string]any{"name": "task-agent"}, &got)
	return got
}

func TestTemplatesLegacySeedAndHandEdits(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	legacy := "---\nmargin: template\nname: task-agent\nversion: 1\n---\n# Old\n\n## Directives\n\nYou are upbeat and call people by their first names.\n\nEnd the report with a summary table.\n"
	os.MkdirAll(filepath.Join(dir, "Margin/Templates"), 0o755)
	writeFile(t, dir, activeTemplate, legacy)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)

	// The seeding pass at startup: v2, split, authored by the seed.
	var v2 protocol.TemplateResult
	poll(t, "the legacy template seeded", func() bool { v2 = getTemplate(t, e); return v2.Version == 2 })
	if v2.AuthoredBy != "seed" || v2.Status != "active" || !strings.Contains(v2.General, "You are upbeat") ||
		strings.Contains(v2.General, "summary table") || !strings.Contains(v2.Report, "**Achieved**") || !strings.Contains(v2.Report, "**Links**") {
		t.Errorf("seeded version = %+v", v2)
	}
	var versions protocol.TemplateVersionsResult
	e.MustCall("templates/versions", map[string]any{"name": "task-agent"}, &versions)
	if len(versions.Versions) != 2 || versions.Versions[0].Status != "archived" || !strings.Contains(versions.Versions[0].Legacy, "summary table") {
		t.Errorf("versions = %+v, want the legacy v1 archived and v2", versions.Versions)
	}
	if got := readFile(t, dir, "Margin/Templates/task-agent/v1.md"); !strings.Contains(got, "status: archived") || !strings.Contains(got, "End the report with a summary table.") {
		t.Errorf("v1.md:\n%s", got)
	}

	// Agents run from the seeded version.
	a := createAgent(t, e, shipTask)
	waitWakes(t, e, a.ID, 1)
	sys := systemPrompts(fake)
	if len(sys) != 1 || !strings.Contains(sys[0], "## Your Personality & Directives\n\nYou are a persistent") || !strings.Contains(sys[0], "You are upbeat") ||
		!strings.Contains(sys[0], "## Report Format\n\nYou MUST finish") {
		t.Errorf("system prompt after seeding:\n%s", sys)
	}
	if rep := readFile(t, dir, shipReport); !strings.Contains(rep, `template: "task-agent@2"`) {
		t.Errorf("report does not name task-agent@2:\n%s", rep)
	}

	// A hand edit is picked up as v3, authored by the user.
	edited := strings.Replace(readFile(t, dir, activeTemplate), "You are upbeat and call people by their first names.", "You are dry and precise.", 1)
	writeFile(t, dir, activeTemplate, edited)
	// Picked up on save, by the watcher: nothing else reads the template
	// until the file says v3 (vault/status only paces the loop).
	poll(t, "the hand edit recorded on save", func() bool {
		e.MustCall("vault/status", nil, nil)
		return strings.Contains(readFile(t, dir, activeTemplate), "version: 3\nstatus: active\nauthored_by: user\n")
	})
	v3 := getTemplate(t, e)
	if v3.Version != 3 || v3.AuthoredBy != "user" || !strings.Contains(v3.General, "You are dry and precise.") {
		t.Errorf("v3 = %+v", v3)
	}

	// A broken hand edit is reported; v3 stays active and the text stays.
	broken := "---\nmargin: template\nkind: [task\n---\n## General Directive\nhalf a thought"
	writeFile(t, dir, activeTemplate, broken)
	p := e.WaitFor("margin/templateProblem", func(m editortest.Message) bool { return m.Method == "margin/templateProblem" })
	var problem struct {
		Name, Path, Problem string
		Active              int
	}
	json.Unmarshal(p.Params, &problem)
	if problem.Name != "task-agent" || problem.Active != 3 || !strings.Contains(problem.Problem, "broken frontmatter") {
		t.Errorf("templateProblem = %s", p.Params)
	}
	if got := getTemplate(t, e); got.Version != 3 || !strings.Contains(got.Problem, "broken frontmatter") {
		t.Errorf("templates/get with a broken edit = %+v, want v3 and the problem", got)
	}
	if readFile(t, dir, activeTemplate) != broken {
		t.Error("the broken edit was overwritten")
	}
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	waitWakes(t, e, a.ID, 2)
	if sys := systemPrompts(fake); len(sys) != 2 || !strings.Contains(sys[1], "You are dry and precise.") {
		t.Errorf("the wake after a broken edit did not run from v3:\n%s", sys[len(sys)-1])
	}
	if err := e.Call("templates/save", map[string]any{"name": "task-agent", "generalDirective": "x", "reportDirective": "y"}, nil); err == nil || err.Code != -33001 {
		t.Errorf("save over a broken hand edit: %v, want -33001", err)
	}

	var list struct {
		Templates []struct {
			Name, Kind string
			Version    int
		}
	}
	e.MustCall("templates/list", nil, &list)
	if len(list.Templates) != 2 || list.Templates[0].Name != "task-agent" || list.Templates[0].Version != 3 || list.Templates[1].Kind != "improver" {
		t.Errorf("templates/list = %+v", list.Templates)
	}
}

// evolvingModel is a task model that proposes an estimate on its first
// wake and reports after, and an evolution model that proposes terse
// directives.
func evolvingModel(o *llmtest.Ollama) {
	var mu sync.Mutex
	wakes, sessions := 0, 0
	o.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		if r.Model == evolutionModel {
			mu.Lock()
			sessions++
			report := "Two sections: Done and Next."
			if sessions > 1 {
				report = "Three sections: Done, Next and Risks."
			}
			mu.Unlock()
			return llmtest.Reply{Content: "I tightened the estimate rule.", ToolCalls: []llmtest.ToolCall{{Name: "propose_directives", Args: map[string]any{
				"general_directive": "You are terse. Never propose estimates: the person sets them.",
				"report_directive":  report,
				"rationale":         "Estimate proposals were rejected.",
			}}}}
		}
		mu.Lock()
		wakes++
		first := wakes == 1
		mu.Unlock()
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- QA\n"}}
		if first {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h"}}, report}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report}}
	})
}

func TestEvolutionApproveRejectAndRollback(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel, evolutionModel)
	evolvingModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	created := e.WaitFor("the change set", func(m editortest.Message) bool { return m.Method == "margin/changeSetCreated" })
	var cs struct{ ID string }
	json.Unmarshal(created.Params, &cs)
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]any{{"item": "c1", "verdict": "rejected", "reason": "estimates are mine"}}}, nil)
	waitWakes(t, e, a.ID, 2)

	var turn protocol.EvolutionTurn
	e.MustCall("evolution/start", map[string]any{"template": "task-agent"}, &turn)
	p := turn.Proposal
	if turn.SessionID == "" || turn.Message != "I tightened the estimate rule." || p == nil || p.BaseVersion != 1 ||
		!strings.Contains(p.GeneralDiff, "+You are terse. Never propose estimates") || !strings.Contains(p.GeneralDiff, "-You are a persistent") ||
		!strings.Contains(p.ReportDiff, "+Two sections: Done and Next.") {
		t.Fatalf("evolution/start = %+v", turn)
	}

	// The context the evolution agent got: both directives separately,
	// and metrics that match the ledger in the state database.
	var evoReq llmtest.OllamaRequest
	for _, r := range fake.Requests() {
		if r.Model == evolutionModel {
			evoReq = r
		}
	}
	ctxMsg := userMessage(evoReq)
	db, err := store.Open(context.Background(), filepath.Join(dir, ".margin", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	var calls, failed, prompt, completion int
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(outcome <> 'ok'), 0), SUM(prompt_tokens), SUM(completion_tokens) FROM model_calls WHERE scope LIKE 'run:%'`).
		Scan(&calls, &failed, &prompt, &completion); err != nil {
		t.Fatal(err)
	}
	db.Close()
	m := turn.Metrics
	if calls != 2 || m.ModelCalls != calls || m.FailedCalls != failed || m.PromptTokens != prompt || m.CompletionTokens != completion || m.Wakes != 2 || m.Agents != 1 {
		t.Errorf("metrics %+v, the ledger says %d calls (%d failed), %d + %d tokens", m, calls, failed, prompt, completion)
	}
	if len(m.Tools) != 1 || m.Tools[0].Tool != "update_task_estimate" || m.Tools[0].Rejected != 1 || len(m.Rejections) != 1 ||
		m.Rejections[0].Reason != "estimates are mine" || m.Rejections[0].Version != 1 {
		t.Errorf("tool metrics = %+v, %+v", m.Tools, m.Rejections)
	}
	if vs := m.Versions; len(vs) != 1 || vs[0].Version != 1 || !vs[0].Active || vs[0].Wakes != 2 || vs[0].ModelCalls != calls ||
		len(vs[0].Tools) != 1 || vs[0].Tools[0].Rejected != 1 {
		t.Errorf("version metrics = %+v, want v1 alone with every wake and decision", vs)
	}
	for _, want := range []string{
		"## Current General Directive (v1)\n\nYou are a persistent", "## Current Report Directive (v1)\n\nYou MUST finish",
		"| | v1 (active) |\n",
		"| Wakes: completed / incomplete / failed | 2: 2 / 0 / 0 |",
		"| Model calls (failed) | 2 (0) |\n| Tokens: prompt / completion | " + itoa(prompt) + " / " + itoa(completion) + " |",
		"| update_task_estimate: confirmed / rejected / deferred | 0 / 1 / 0 (0%) |", "v1 update_task_estimate", "estimates are mine",
		"- v1 — active, authored by seed", "[data: report on " + shipTask, "## Instance Observations", "(no earlier sessions)",
	} {
		if !strings.Contains(ctxMsg, want) {
			t.Errorf("evolution context lacks %q:\n%s", want, ctxMsg)
		}
	}
	if len(evoReq.Tools) != 1 || evoReq.Tools[0].Function.Name != "propose_directives" {
		t.Errorf("evolution tools = %+v", evoReq.Tools)
	}

	// Approve: v2 by evolution; the next wake runs from it.
	var v2 protocol.TemplateResult
	e.MustCall("evolution/approve", map[string]any{"sessionId": turn.SessionID}, &v2)
	if v2.Version != 2 || v2.AuthoredBy != "evolution" || v2.General != "You are terse. Never propose estimates: the person sets them." {
		t.Fatalf("approve = %+v", v2)
	}
	if f := readFile(t, dir, turn.Path); !strings.HasPrefix(turn.Path, "Margin/Evolution/task-agent-") || !strings.Contains(f, "status: approved\n") ||
		!strings.Contains(f, "result_version: 2") || !strings.Contains(f, "```diff\n--- v1/general directive") || !strings.Contains(f, "## Context") {
		t.Errorf("session file %s:\n%s", turn.Path, f)
	}
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	waitWakes(t, e, a.ID, 3)
	sys := systemPrompts(fake)
	if last := sys[len(sys)-1]; !strings.Contains(last, "## Your Personality & Directives\n\nYou are terse. Never propose estimates") ||
		!strings.Contains(last, "## Report Format\n\nTwo sections: Done and Next.") {
		t.Errorf("system prompt after approval:\n%s", last)
	}
	if err := e.Call("evolution/approve", map[string]any{"sessionId": turn.SessionID}, nil); err == nil || err.Code != -33007 {
		t.Errorf("approving twice: %v, want -33007", err)
	}

	// Reject: recorded, nothing changes.
	var turn2 protocol.EvolutionTurn
	e.MustCall("evolution/start", map[string]any{"template": "task-agent"}, &turn2)
	if turn2.Proposal == nil || turn2.Proposal.BaseVersion != 2 || turn2.Proposal.GeneralDiff != "" || !strings.Contains(turn2.Proposal.ReportDiff, "+Three sections") {
		t.Errorf("second proposal against v2 = %+v, want the report changed and the general directive not", turn2.Proposal)
	}
	// The second session sets v2, which ran one wake, against v1; each
	// version's model calls are those of its runs in state.db.
	db, err = store.Open(context.Background(), filepath.Join(dir, ".margin", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	callsOf := map[int]int{}
	for _, v := range []int{1, 2} {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM model_calls c JOIN wake_runs r ON c.scope = 'run:' || r.id WHERE r.template = ?`,
			"task-agent@"+itoa(v)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		callsOf[v] = n
	}
	db.Close()
	if vs := turn2.Metrics.Versions; len(vs) != 2 || vs[0].Version != 2 || !vs[0].Active || vs[0].Wakes != 1 || vs[0].ModelCalls != callsOf[2] || len(vs[0].Tools) != 0 ||
		vs[1].Version != 1 || vs[1].Active || vs[1].Wakes != 2 || vs[1].ModelCalls != callsOf[1] || len(vs[1].Tools) != 1 || vs[1].Tools[0].Rejected != 1 {
		t.Errorf("version metrics of the second session = %+v, want v2 (1 wake, %d calls) and v1 (2 wakes, %d calls, the rejection)", vs, callsOf[2], callsOf[1])
	}
	if m2 := turn2.Metrics; m2.Wakes != 3 || m2.ModelCalls != callsOf[1]+callsOf[2] {
		t.Errorf("all versions of the second session: %d wakes, %d model calls; want 3 and %d", m2.Wakes, m2.ModelCalls, callsOf[1]+callsOf[2])
	}

	var rejected protocol.EvolutionSession
	e.MustCall("evolution/reject", map[string]any{"sessionId": turn2.SessionID, "reason": "too terse"}, &rejected)
	if rejected.Status != "rejected" || rejected.Reason != "too terse" || !strings.Contains(readFile(t, dir, rejected.Path), ": too terse") {
		t.Errorf("reject = %+v", rejected)
	}
	if got := getTemplate(t, e); got.Version != 2 {
		t.Errorf("after a rejection the active version is %d, want 2", got.Version)
	}

	// Rollback to v1: the next wake runs from v1 again.
	var back protocol.TemplateResult
	e.MustCall("templates/rollback", map[string]any{"name": "task-agent", "version": 1}, &back)
	if back.Version != 1 || back.Status != "active" || getTemplate(t, e).Version != 1 {
		t.Errorf("rollback = %+v", back)
	}
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	waitWakes(t, e, a.ID, 4)
	sys = systemPrompts(fake)
	if last := sys[len(sys)-1]; strings.Contains(last, "You are terse") || !strings.Contains(last, "You are a persistent") {
		t.Errorf("system prompt after rollback:\n%s", last)
	}

	for _, tc := range []struct {
		method string
		params map[string]any
		code   int64
		field  string
	}{
		{"templates/save", map[string]any{"name": "task-agent", "generalDirective": "G", "reportDirective": " "}, -32602, "reportDirective"},
		{"templates/get", map[string]any{"name": "../../etc/passwd"}, -32602, "name"},
		{"templates/get", map[string]any{"name": "task-agent", "version": 9}, -33000, ""},
		{"templates/rollback", map[string]any{"name": "task-agent"}, -32602, "version"},
		{"evolution/start", map[string]any{"template": "no-such-template"}, -33000, ""},
		{"evolution/send", map[string]any{"sessionId": turn2.SessionID, "text": "again"}, -33007, ""},
		{"evolution/reject", map[string]any{"sessionId": "nope"}, -33000, ""},
	} {
		err := e.Call(tc.method, tc.params, nil)
		if err == nil || int64(err.Code) != tc.code || !strings.Contains(err.Message, tc.field) {
			t.Errorf("%s %v: %v, want %d naming %q", tc.method, tc.params, err, tc.code, tc.field)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// templates/save refuses a directive that would read back cut short, and a
// template named by its file name is invalid params naming the field, with
// no absolute path in the message.
func TestTemplateInputsThatCannotWorkAreInvalidParams(t *testing.T) {
	e, dir := start(t)
	before := getTemplate(t, e)
	err := e.Call("templates/save", map[string]any{"name": "task-agent",
		"generalDirective": "Be terse.\n\n## Report Directive\n\nNo tables.", "reportDirective": "One line."}, nil)
	if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "generalDirective") || !strings.Contains(err.Message, "## Report Directive") {
		t.Errorf("save with a ## heading in the general directive = %v, want -32602 naming generalDirective and the line", err)
	}
	err = e.Call("templates/save", map[string]any{"name": "task-agent", "generalDirective": "Be terse.", "reportDirective": "One line.\n## Extra\nmore"}, nil)
	if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "reportDirective") {
		t.Errorf("save with a ## heading in the report directive = %v, want -32602 naming reportDirective", err)
	}
	if after := getTemplate(t, e); after.Version != before.Version {
		t.Errorf("a refused save made version %d", after.Version)
	}

	for _, method := range []string{"templates/get", "templates/versions", "templates/rollback"} {
		err := e.Call(method, map[string]any{"name": "task-agent.md", "version": 1}, nil)
		if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "name") || !strings.Contains(err.Message, `"task-agent"`) || strings.Contains(err.Message, dir) {
			t.Errorf("%s {name: task-agent.md} = %v, want -32602 naming name and suggesting task-agent, without the vault's path", method, err)
		}
	}
	if err := e.Call("evolution/start", map[string]any{"template": "task-agent.md"}, nil); err == nil || err.Code != -32602 || !strings.Contains(err.Message, "template") {
		t.Errorf("evolution/start {template: task-agent.md} = %v, want -32602 naming template", err)
	}
}
