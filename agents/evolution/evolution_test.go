package evolution

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/internal/agenttest"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// scriptedModel answers with its replies in order and keeps the requests.
type scriptedModel struct {
	mu       sync.Mutex
	replies  []llm.Message
	requests []llm.Request
}

func (m *scriptedModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if len(m.replies) == 0 {
		return llm.Response{}, errors.New("script ran out")
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	return llm.Response{Message: r, Model: "fake"}, nil
}

func proposeCall(general, report, rationale string) llm.Message {
	args, _ := json.Marshal(map[string]string{"general_directive": general, "report_directive": report, "rationale": rationale})
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "propose_directives", Args: args}}}
}

type evolutionFixture struct {
	v     *vault.Vault
	lib   *templates.Templates
	evo   *Evolution
	model *scriptedModel
	led   *ledger.Ledger
}

func newEvolutionFixture(t *testing.T) *evolutionFixture {
	t.Helper()
	ctx := context.Background()
	v, err := vault.Open(ctx, vault.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	clock := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	opts := Options{Now: func() time.Time { clock = clock.Add(time.Minute); return clock }}
	f := &evolutionFixture{v: v, lib: templates.New(libraryVault(v), templates.Options{Now: opts.Now}), model: &scriptedModel{}}
	if f.evo, err = newEvolution(ctx, v, f.lib, f.model, opts); err != nil {
		t.Fatal(err)
	}
	f.led = f.evo.ledger
	return f
}

// history records what a few weeks of task agents would leave: two
// agents, four runs with their model calls, and decisions with reasons.
func (f *evolutionFixture) history(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	db := f.v.DB()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	a1 := addAgent(t, db, "a1", "Tasks/A.md", "A", at)
	a2 := addAgent(t, db, "a2", "Tasks/B.md", "B", at)
	for i, r := range []struct {
		agent  string
		status string
		calls  [][2]int // prompt, completion tokens per call
	}{
		{a1.ID, task.RunCompleted, [][2]int{{1200, 90}, {300, 40}}},
		{a1.ID, task.RunIncomplete, [][2]int{{800, 10}}},
		{a2.ID, task.RunCompleted, [][2]int{{1000, 120}}},
		{a2.ID, task.RunFailed, nil},
	} {
		run := startRun(t, db, r.agent, "k"+string(rune('a'+i)), "task-agent@1", at)
		for _, c := range r.calls {
			f.led.Record(ledger.WithScope(ctx, "run:"+itoa(run)), llm.Record{Time: at, Role: "task", Provider: "ollama", Model: "m",
				PromptTokens: c[0], CompletionTokens: c[1], Outcome: "ok"})
		}
		if r.calls == nil {
			f.led.Record(ledger.WithScope(ctx, "run:"+itoa(run)), llm.Record{Time: at, Role: "task", Provider: "ollama", Outcome: "timeout", Err: "timed out"})
		}
		finishRun(t, db, r.agent, run, r.status, at)
	}
	for _, d := range []struct{ tool, verdict, reason string }{
		{"update_task_estimate", changes.Confirmed, ""},
		{"update_task_estimate", changes.Rejected, "estimates are mine to set"},
		{"update_task_priority", changes.Rejected, "P1 is right"},
		{"update_task_priority", changes.Rejected, ""},
		{"update_task_priority", changes.Deferred, ""},
	} {
		if _, err := f.v.DB().ExecContext(ctx, `INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
			VALUES (?, 'Tasks/A.md', 's1', 'c1', ?, 'Change it', ?, ?, 'x', ?)`, a1.ID, d.tool, d.verdict, d.reason, store.Stamp(at)); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestEvolutionMetricsMatchTheLedger(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	f.history(t)
	tmpl, err := f.lib.Active(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.evo.Metrics(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.led.TotalsWithPrefix(ctx, "run:")
	if err != nil {
		t.Fatal(err)
	}
	if m.ModelCalls != want.Calls || m.FailedCalls != want.Failed || m.PromptTokens != want.PromptTokens || m.CompletionTokens != want.CompletionTokens {
		t.Errorf("metrics %+v do not match the ledger %+v", m, want)
	}
	if m.ModelCalls != 5 || m.FailedCalls != 1 || m.PromptTokens != 3300 || m.CompletionTokens != 260 {
		t.Errorf("metrics = %+v, want 5 calls (1 failed), 3300 + 260 tokens", m)
	}
	if m.Agents != 2 || m.Wakes != 4 || m.Completed != 2 || m.Incomplete != 1 || m.Failed != 1 {
		t.Errorf("wakes = %+v", m)
	}
	if len(m.Tools) != 2 || m.Tools[0] != (ToolRate{"update_task_estimate", 1, 1, 0}) || m.Tools[1] != (ToolRate{"update_task_priority", 0, 2, 1}) {
		t.Errorf("tools = %+v", m.Tools)
	}
	if m.Tools[0].ConfirmRate() != 50 || m.Tools[1].ConfirmRate() != 0 {
		t.Errorf("rates = %d, %d", m.Tools[0].ConfirmRate(), m.Tools[1].ConfirmRate())
	}
	if len(m.Rejections) != 2 || m.Rejections[0].Reason != "P1 is right" {
		t.Errorf("rejections = %+v, want the two with reasons, newest first", m.Rejections)
	}
}

func TestEvolutionStartApproveAndReject(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	f.history(t)
	before, _ := f.lib.Active(ctx, templates.TaskAgent)
	newGeneral := strings.Replace(templates.DefaultGeneral, "Propose only changes the notes support.", "Never propose a priority or an estimate: people set those.", 1)

	f.model.replies = []llm.Message{
		{Role: llm.RoleAssistant, Content: "Are estimates always yours to set?"},
		proposeCall(templates.DefaultGeneral, templates.DefaultReport, "No change."), // refused: changes nothing
		proposeCall(newGeneral, templates.DefaultReport, "Priority and estimate proposals were rejected 3 of 4 times."),
	}
	turn, err := f.evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Proposal != nil || turn.Message != "Are estimates always yours to set?" || turn.SessionID == "" {
		t.Fatalf("start = %+v, want the agent's question", turn)
	}
	// The context: both directives separately, the metrics, history.
	first := f.model.requests[0]
	agenttest.Golden(t, "evolution_context.golden", first.Messages[0].Content)
	if first.Role != templates.EvolutionRole || !strings.Contains(first.System, "## Your Directives\n\n"+templates.ImproverGeneral[:40]) || len(first.Tools) != 1 {
		t.Errorf("request: role %s, %d tools, system:\n%s", first.Role, len(first.Tools), first.System)
	}

	turn, err = f.evo.Send(ctx, turn.SessionID, "Yes, and priorities too.")
	if err != nil {
		t.Fatal(err)
	}
	p := turn.Proposal
	if p == nil || p.BaseVersion != 1 || p.ReportDiff != "" ||
		!strings.Contains(p.GeneralDiff, "-circumstances clearly changed. Propose only changes the notes support.") ||
		!strings.Contains(p.GeneralDiff, "+circumstances clearly changed. Never propose a priority or an estimate: people set those.") {
		t.Fatalf("proposal = %+v", p)
	}
	if !strings.Contains(f.model.requests[2].Messages[len(f.model.requests[2].Messages)-1].Content, "changes nothing") {
		t.Error("the model was not told its empty proposal changed nothing")
	}
	if turn.Message != p.Rationale {
		t.Errorf("message = %q, want the rationale when the model said nothing else", turn.Message)
	}

	// A hand edit after the proposal moves the template on: approving
	// the stale proposal is refused.
	if _, err := f.lib.Save(ctx, templates.TaskAgent, "Other.", "Other report."); err != nil {
		t.Fatal(err)
	}
	if _, err := f.evo.Approve(ctx, turn.SessionID); !errors.Is(err, templates.ErrTemplateMoved) {
		t.Fatalf("approve of a stale proposal: %v", err)
	}
	if _, err := f.lib.Rollback(ctx, templates.TaskAgent, 1); err != nil {
		t.Fatal(err)
	}
	v3, err := f.evo.Approve(ctx, turn.SessionID)
	if err != nil || v3.Version != 3 || v3.AuthoredBy != templates.ByEvolution || v3.General != newGeneral {
		t.Fatalf("approve: %+v, %v", v3, err)
	}
	if cur, _ := f.lib.Active(ctx, templates.TaskAgent); cur.Version != 3 || cur.ID() == before.ID() {
		t.Errorf("active after approve = %+v", cur)
	}
	if _, err := f.evo.Approve(ctx, turn.SessionID); !errors.Is(err, ErrSessionClosed) {
		t.Errorf("second approve: %v", err)
	}
	s, err := f.evo.Session(ctx, turn.SessionID)
	if err != nil || s.Status != SessionApproved || s.ResultVersion != 3 {
		t.Fatalf("session: %+v, %v", s, err)
	}
	file, err := f.v.Root().ReadFile(s.Path)
	if err != nil || !strings.Contains(string(file), "status: approved\n") || !strings.Contains(string(file), "**You:** Yes, and priorities too.") {
		t.Errorf("session file %s:\n%s", s.Path, file)
	}

	// A second session, rejected with a reason, shows up in the notes of
	// the next one.
	f.model.replies = []llm.Message{proposeCall(newGeneral+"\n\nBe brief.", templates.DefaultReport, "Shorter reports.")}
	turn2, err := f.evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.evo.Reject(ctx, turn2.SessionID, "brevity is not the problem"); err != nil {
		t.Fatal(err)
	}
	if cur, _ := f.lib.Active(ctx, templates.TaskAgent); cur.Version != 3 {
		t.Errorf("a rejected proposal changed the template: v%d", cur.Version)
	}
	if s2, _ := f.evo.Session(ctx, turn2.SessionID); s2.Status != SessionRejected || s2.Reason != "brevity is not the problem" || s2.Path == s.Path {
		t.Errorf("rejected session = %+v", s2)
	}
	f.model.replies = []llm.Message{{Role: llm.RoleAssistant, Content: "Nothing to change."}}
	if _, err := f.evo.Start(ctx, templates.TaskAgent); err != nil {
		t.Fatal(err)
	}
	notes := f.model.requests[len(f.model.requests)-1].Messages[0].Content
	for _, want := range []string{"rejected — brevity is not the problem", "approved as v3 — Priority and estimate proposals", "- v3 — active, authored by evolution"} {
		if !strings.Contains(notes, want) {
			t.Errorf("next context lacks %q:\n%s", want, notes)
		}
	}
	if _, err := f.evo.Send(ctx, "nope", "hi"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

func TestImproverEvolvesItselfAtMostTwiceInARow(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	for i := 1; i <= 2; i++ {
		f.model.replies = []llm.Message{proposeCall(templates.ImproverGeneral+strings.Repeat("\n\nMore.", i), templates.ImproverReport, "Sharper.")}
		turn, err := f.evo.Start(ctx, templates.Improver)
		if err != nil {
			t.Fatal(err)
		}
		v, err := f.evo.Approve(ctx, turn.SessionID)
		if err != nil || v.Depth != i {
			t.Fatalf("evolution %d: %+v, %v", i, v, err)
		}
	}
	if _, err := f.evo.Start(ctx, templates.Improver); !errors.Is(err, templates.ErrEvolutionDepth) || !strings.Contains(err.Error(), "depth 2") {
		t.Fatalf("third evolution: %v, want the depth limit", err)
	}
	// A person's save resets the depth.
	if v, err := f.lib.Save(ctx, templates.Improver, "Mine.", "Say it briefly."); err != nil || v.Depth != 0 {
		t.Fatalf("save: %+v, %v", v, err)
	}
	f.model.replies = []llm.Message{{Role: llm.RoleAssistant, Content: "Looks fine."}}
	if _, err := f.evo.Start(ctx, templates.Improver); err != nil {
		t.Errorf("after a person's save: %v", err)
	}
}

func TestEvolutionSessionFileGolden(t *testing.T) {
	created := time.Date(2026, 11, 22, 5, 40, 0, 0, time.UTC)
	newGeneral := strings.Replace(templates.DefaultGeneral, "calm,\ndirect", "warm,\ndirect", 1)
	s := Session{
		ID: "e0a1b2c3", Template: templates.TaskAgent, BaseVersion: 2, Status: SessionApproved, ResultVersion: 3,
		Path: "Margin/Evolution/task-agent-2026-11-22-0540.md", Created: created, Updated: created.Add(3 * time.Minute),
		Context: "# Evolution of template task-agent\n\n## Current General Directive (v2)\n\n```\nfenced\n```\n",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: "(context)"},
			{Role: llm.RoleAssistant, Content: "Should the tone be warmer?"},
			{Role: llm.RoleUser, Content: "Yes."},
			proposeCall(newGeneral, templates.DefaultReport, "The person asked for warmth."),
			{Role: llm.RoleTool, Content: "Proposal recorded.", ToolName: "propose_directives"},
		},
		Proposal: &Proposal{General: newGeneral, Report: templates.DefaultReport, Rationale: "The person asked for warmth.", BaseVersion: 2,
			GeneralDiff: directiveDiff("general directive", 2, templates.DefaultGeneral, newGeneral)},
	}
	agenttest.Golden(t, "evolution_session.golden", string(renderSession(s)))
}

func TestEvolutionModelFailureKeepsTheSession(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	// A hand-written legacy template without a date: the context says so.
	if _, err := f.v.Root().Create("Margin/Templates/task-agent.md", []byte("---\nmargin: template\n---\n## Directives\n\nBe kind.\n")); err != nil {
		t.Fatal(err)
	}
	_, err := f.evo.Start(ctx, templates.TaskAgent) // the script is empty: the model fails
	if err == nil || !strings.Contains(err.Error(), "script ran out") {
		t.Fatalf("start with a failing model: %v", err)
	}
	sessions, err := f.evo.Sessions(ctx, templates.TaskAgent, 10)
	if err != nil || len(sessions) != 1 || sessions[0].Status != SessionOpen || sessions[0].Proposal != nil {
		t.Fatalf("sessions = %+v, %v; want the one, open, without a proposal", sessions, err)
	}
	for _, want := range []string{"## Current Directives (v1, legacy: one field for both)\n\nBe kind.", "- v1 — active, authored by user, date unknown"} {
		if !strings.Contains(sessions[0].Context, want) {
			t.Errorf("context lacks %q:\n%s", want, sessions[0].Context)
		}
	}
	// A proposal for a legacy template is diffed against its directives
	// and approved as a split version.
	f.model.replies = []llm.Message{proposeCall("Be kind and brief.", "Done, Next.", "Brevity.")}
	turn, err := f.evo.Send(ctx, sessions[0].ID, "try again")
	if err != nil || turn.Proposal == nil || !strings.Contains(turn.Proposal.GeneralDiff, "-Be kind.\n+Be kind and brief.") {
		t.Fatalf("send: %+v, %v", turn, err)
	}
	v2, err := f.evo.Approve(ctx, turn.SessionID)
	if err != nil || v2.IsLegacy() || v2.Report != "Done, Next." {
		t.Errorf("approve: %+v, %v", v2, err)
	}

	noModel, err := newEvolution(ctx, f.v, f.lib, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noModel.Start(ctx, templates.TaskAgent); !errors.Is(err, llm.ErrUnavailable) {
		t.Errorf("start without a model: %v, want llm.ErrUnavailable", err)
	}
}

// The evolution agent runs from the improver template, so that template's
// tier and model choose its model.
func TestEvolutionUsesImproverTierAndModel(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	withTemplateKeys(t, f.lib, f.v.Dir(), templates.Improver, "tier: high\nmodel: some-model\n")
	f.model.replies = []llm.Message{{Role: llm.RoleAssistant, Content: "What should change?"}}
	if _, err := f.evo.Start(ctx, templates.TaskAgent); err != nil {
		t.Fatal(err)
	}
	if len(f.model.requests) != 1 {
		t.Fatalf("%d model requests, want 1", len(f.model.requests))
	}
	if r := f.model.requests[0]; r.Tier != "high" || r.Model != "some-model" {
		t.Errorf("request tier %q model %q, want the improver template's high and some-model", r.Tier, r.Model)
	}
}

// newEvolution opens evolution on v as the composition root does: its
// stores in v's state database, and the parts of v it is handed.
func newEvolution(ctx context.Context, v *vault.Vault, lib *templates.Templates, model llm.Model, opts Options) (*Evolution, error) {
	var (
		stores Stores
		err    error
	)
	if stores.Sessions, err = OpenStore(ctx, v.DB()); err != nil {
		return nil, err
	}
	if stores.Agents, err = task.OpenStore(ctx, v.DB()); err != nil {
		return nil, err
	}
	if stores.Changes, err = changes.OpenStore(ctx, v.DB()); err != nil {
		return nil, err
	}
	if stores.Ledger, err = ledger.Open(ctx, v.DB(), opts.Logger); err != nil {
		return nil, err
	}
	return New(Vault{Files: v.Root(), OutputFolder: v.Options().OutputFolder}, lib, stores, model, opts), nil
}

// libraryVault hands the template library the parts of v.
func libraryVault(v *vault.Vault) templates.Vault {
	return templates.Vault{Files: v.Root(), Events: v, OutputFolder: v.Options().OutputFolder}
}
