package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
)

// TestEvolveInteractive drives the terminal dialogue with typed answers:
// approving before there is a proposal is refused, a message gets a
// proposal, and approving it makes the new version.
func TestEvolveInteractive(t *testing.T) {
	ctx := context.Background()
	fake := llmtest.NewOllama(t, "qwen2.5:14b")
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "user" && strings.Contains(last.Content, "Shorter") {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "propose_directives", Args: map[string]any{
				"general_directive": "Short.", "report_directive": "Done and Next.", "rationale": "You asked for shorter.",
			}}}}
		}
		return llmtest.Reply{Content: "What bothers you about the reports?"}
	})
	cfg := fake.Config()
	cfg.Retry.LLMRetry = 0
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(ctx, vault.Options{Dir: editortest.SampleVault(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	agents, err := workspace.TaskStores(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	stores, err := workspace.EvolutionStores(ctx, v, agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	evo := evolution.New(workspace.EvolutionVault(v), templates.New(workspace.TemplatesVault(v), templates.Options{}), stores, client, evolution.Options{})
	turn, err := evo.Start(ctx, "task-agent")
	if err != nil || turn.Proposal != nil {
		t.Fatalf("start: %+v, %v", turn, err)
	}
	var out bytes.Buffer
	s := evolveSession{ctx: ctx, evo: evo, out: &out}
	if err := s.interact(turn, strings.NewReader("a\n\nShorter please\na\n")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"[r]eject, [q]uit leaving it open, or type a message: there is no proposal to approve yet",
		"Proposal (from v1): You asked for shorter.", "+Short.", "+Done and Next.",
		"[a]pprove, [r]eject, [q]uit leaving it open, or type a message: approved: task-agent@2 is active",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("dialogue lacks %q:\n%s", want, got)
		}
	}

	// Reject asks for a reason.
	turn, err = evo.Start(ctx, "task-agent")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := s.interact(turn, strings.NewReader("r\nnot now\n")); err != nil {
		t.Fatal(err)
	}
	if sess, _ := evo.Session(ctx, turn.SessionID); sess.Status != evolution.SessionRejected || sess.Reason != "not now" {
		t.Errorf("after r: %+v\n%s", sess, out.String())
	}
}
