package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
)

// weakAgentCalls reports how many model calls a task wake and an
// evolution session spend on a model with each fault of llmtest's weak
// profile, next to a cooperative model's: no flow may loop, so a wake
// stays within max_turns and a session within its turns, each turn with
// its llm retries.
func (b *bench) weakAgentCalls(sample string) error {
	fmt.Fprintln(os.Stderr, "measuring the agents' model calls of a weak model")
	return withTB(func(tb testing.TB) error { return b.measureWeakAgents(tb, sample) })
}

// agentFlow is one agent flow measured: it runs once on a copy of the
// sample vault against handle, and says how it ended.
type agentFlow struct {
	name, tool string
	bound      int
	run        func(ctx context.Context, dir string, model llm.Model) (string, error)
}

func (b *bench) measureWeakAgents(tb testing.TB, sample string) error {
	cfg := llm.DefaultConfig()
	attempts := 1 + cfg.Retry.LLMRetry
	const maxTurns = 5 // agents.max_turns' default
	good := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_report", Args: map[string]any{
		"tldr": "Export works; QA and docs left.", "content": "## Achieved\n- Endpoint\n\n## What is left to do\n- [ ] QA on staging\n"}}}}
	proposal := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "propose_directives", Args: map[string]any{
		"general_directive": templates.DefaultGeneral + "\n\nNever propose an estimate.", "report_directive": templates.DefaultReport,
		"rationale": "Estimates were rejected every time."}}}}
	flows := []struct {
		agentFlow
		cooperative llmtest.Reply
	}{
		{agentFlow{name: "task wake", tool: "update_report", bound: maxTurns * attempts, run: weakWake}, good},
		{agentFlow{name: "evolution", tool: "propose_directives", bound: evolution.Turns * attempts, run: weakSession}, proposal},
	}
	for _, f := range flows {
		coop, _, err := agentRun(tb, sample, f.agentFlow, func(llmtest.OllamaRequest) llmtest.Reply { return f.cooperative })
		if err != nil {
			return fmt.Errorf("%s, cooperative: %w", f.name, err)
		}
		var per []string
		most := 0
		for _, fault := range llmtest.Faults {
			n, how, err := agentRun(tb, sample, f.agentFlow, llmtest.Weak{Fault: fault, Tool: f.tool}.Ollama)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", f.name, fault, err)
			}
			per = append(per, fmt.Sprintf("%s %d (%s)", fault, n, how))
			most = max(most, n)
		}
		b.add(row{
			figure:   "model calls on a weak model, before it is given up: " + f.name,
			target:   fmt.Sprintf("≤ %d (turns × attempts)", f.bound),
			measured: strings.Join(per, ", "),
			baseline: fmt.Sprintf("cooperative: %d calls", coop),
			pass:     check(most <= f.bound),
		})
	}
	return nil
}

// agentRun runs f on a copy of the sample vault with a fake model server
// answering by handle, and counts the model calls.
func agentRun(tb testing.TB, sample string, f agentFlow, handle func(llmtest.OllamaRequest) llmtest.Reply) (int, string, error) {
	dir := tb.TempDir()
	if err := os.CopyFS(dir, os.DirFS(sample)); err != nil {
		return 0, "", err
	}
	fake := llmtest.NewOllama(tb, "qwen2.5:7b", "qwen2.5:14b")
	fake.Handle(handle)
	client, err := llm.New(fake.Config())
	if err != nil {
		return 0, "", err
	}
	how, err := f.run(context.Background(), dir, client)
	return len(fake.Requests()), how, err
}

// weakWake runs the first wake of the agent of the sample's invoice task.
func weakWake(ctx context.Context, dir string, model llm.Model) (string, error) {
	_, rt, stop, err := runAgents(ctx, vault.Options{Dir: dir}, model, task.Options{})
	if err != nil {
		return "", err
	}
	defer stop()
	a, err := rt.Create(ctx, "Tasks/Ship invoice export.md")
	if err != nil {
		return "", err
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		act, err := rt.Store().Activity(ctx, a.ID, 1)
		if err != nil {
			return "", err
		}
		if len(act.Runs) > 0 && act.Runs[0].Status != "started" {
			return act.Runs[0].Status, nil
		}
	}
	return "", fmt.Errorf("the wake did not finish")
}

// weakSession starts an evolution session on the task agent's template.
func weakSession(ctx context.Context, dir string, model llm.Model) (string, error) {
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		return "", err
	}
	defer v.Close()
	lib := templates.New(workspace.TemplatesVault(v), templates.Options{})
	agents, err := workspace.TaskStores(ctx, v)
	if err != nil {
		return "", err
	}
	stores, err := workspace.EvolutionStores(ctx, v, agents, nil)
	if err != nil {
		return "", err
	}
	evo := evolution.New(workspace.EvolutionVault(v), lib, stores, model, evolution.Options{})
	turn, err := evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		return "", err
	}
	if turn.Proposal == nil {
		return "no proposal", nil
	}
	if _, err := evo.Approve(ctx, turn.SessionID); err != nil {
		return "", fmt.Errorf("a proposal shown does not approve: %w", err)
	}
	return "proposal approved", nil
}
