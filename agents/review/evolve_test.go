package review

import (
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// evolvedDirective is what the evolution agent proposes for the daily
// review: words no definition file holds, to find in the next prompt.
const evolvedDirective = "Open with the kiln: say first whether the element was ordered, then what the logs say about sleep."

// A review's directive evolves like a task agent's template: a session on
// review-daily proposes a new directive, the person approves it, and the
// next run prompts with it and names the new version in its note. The
// session's metrics say a review has none rather than show the task
// agents' numbers as the review's.
func TestEvolvedDirectiveDrivesTheNextRun(t *testing.T) {
	ctx := context.Background()
	// The evolution agent's role asks for a larger model than reviews.
	fake := llmtest.NewOllama(t, "qwen2.5:7b", "qwen2.5:14b")
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Content, "margin's evolution agent") {
			return citing(req)
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return llmtest.Reply{Content: "Proposed a kiln-first directive."}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "propose_directives", Args: map[string]string{
			"general_directive": evolvedDirective,
			"report_directive":  reportDirective,
			"rationale":         "The person reads the kiln first every morning.",
		}}}}
	})
	model, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, model)
	if run := r.runNow("daily"); run.Template != "review-daily@1" {
		t.Fatalf("the first run used %s, want review-daily@1", run.Template)
	}

	// A task agent's history that must not be shown as the review's metrics.
	db := r.v.DB()
	agents, err := task.OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := changes.OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := evolution.OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO decisions (agent_id, task, set_id, item, tool, summary, verdict, reason, outcome, created_at)
		VALUES ('a1', 'Tasks/A.md', 's1', 'c1', 'update_task_priority', 'Raise it', 'rejected', 'P1 is right', 'x', '2026-11-27T09:00:00Z')`); err != nil {
		t.Fatal(err)
	}
	lib := r.opts.Directives.(*templates.Templates)
	evo := evolution.New(evolution.Vault{Files: r.v.Root(), OutputFolder: r.v.Options().OutputFolder}, lib,
		evolution.Stores{Sessions: sessions, Agents: agents, Changes: decisions, Ledger: led}, model, evolution.Options{Now: r.clock.Now})

	turn, err := evo.Start(ctx, "review-daily")
	if err != nil {
		t.Fatal(err)
	}
	if turn.Proposal == nil || !strings.Contains(turn.Proposal.GeneralDiff, "+"+evolvedDirective) {
		t.Fatalf("turn %+v, want a proposal of the kiln-first directive", turn)
	}
	if turn.Metrics.Agents != 0 || turn.Metrics.Tools != nil || len(turn.Metrics.Rejections) != 0 || !strings.Contains(turn.Metrics.Unmeasured, "does not measure review runs") {
		t.Errorf("a review's metrics %+v, want none and why", turn.Metrics)
	}
	s, err := evo.Session(ctx, turn.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Context, "A review proposes no change sets") || strings.Contains(s.Context, "P1 is right") ||
		strings.Contains(s.Context, "Wakes:") {
		t.Errorf("the evolution context shows task agents' metrics as the review's:\n%s", s.Context)
	}
	approved, err := evo.Approve(ctx, turn.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if approved.Label() != "review-daily@2" || approved.AuthoredBy != templates.ByEvolution {
		t.Fatalf("approved %s by %s, want review-daily@2 by evolution", approved.Label(), approved.AuthoredBy)
	}

	r.clock.set(at("2026-11-29 07:00"))
	r.edit("Notes/handles.md", "point 1:", "point 1 (pulled thicker today):")
	before := len(fake.Requests())
	run := r.runNow("daily")
	if run.Template != "review-daily@2" {
		t.Errorf("the run after approval used %s, want review-daily@2", run.Template)
	}
	reqs := fake.Requests()[before:]
	if len(reqs) != 1 {
		t.Fatalf("%d model calls in the run after approval, want 1", len(reqs))
	}
	system := reqs[0].Messages[0].Content
	if !strings.Contains(system, evolvedDirective) || strings.Contains(system, "sleep and spending") {
		t.Errorf("the run's prompt does not carry the evolved directive alone:\n%s", system)
	}
	if note := r.read(run.Note); !strings.Contains(note, `template: "review-daily@2"`) {
		t.Errorf("the note does not name review-daily@2:\n%s", note)
	}
}

// The person's edit of a review's definition after an evolution wins, as
// any edit of theirs does; the next run's note says it replaced the
// evolved version, and the run after it says nothing more.
func TestEditedDefinitionReplacesTheEvolvedDirective(t *testing.T) {
	_, model := fakeModel(t, citing)
	r := newRig(t, model)
	r.runNow("daily")
	lib := r.opts.Directives.(*templates.Templates)
	if evolved, err := lib.Evolve("review-daily", 1, evolvedDirective, reportDirective); err != nil || evolved.Label() != "review-daily@2" {
		t.Fatalf("evolved %s, %v", evolved.Label(), err)
	}

	r.clock.set(at("2026-11-29 07:00"))
	r.edit("Margin/Reviews/daily.md", "sleep and spending", "sleep, spending and the kiln")
	run := r.runNow("daily")
	if run.Template != "review-daily@3" {
		t.Errorf("the run after the edit used %s, want the edit as review-daily@3", run.Template)
	}
	want := "Your edit of Margin/Reviews/daily.md replaces the evolved directive review-daily@2 with review-daily@3."
	if note := r.read(run.Note); !strings.Contains(note, "\n"+want+"\n") {
		t.Errorf("the note does not say the edit replaced the evolved directive:\n%s", note)
	}
	r.clock.set(at("2026-11-30 07:00"))
	r.edit("Notes/handles.md", "point 1:", "point 1 (pulled thicker today):")
	if note := r.read(r.runNow("daily").Note); strings.Contains(note, "replaces the evolved") {
		t.Errorf("the next run says it again:\n%s", note)
	}
}
