package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
)

// weakCalls reports how many model calls the query and log flows spend on
// a model with each fault of llmtest's weak profile before they finish
// without it (or with what it gave), next to a cooperative model's calls
// for the same input: no flow may loop, so each stays within the bound
// loop_max and parse_retry set.
func (b *bench) weakCalls() error {
	fmt.Fprintln(os.Stderr, "measuring model calls of a weak model")
	return withTB(b.measureWeak)
}

// weakFlow is one flow measured: its input, the roles a cooperative model
// is scripted with, and the roles kept scripted under a weak one (the
// router, so a question stays a question).
type weakFlow struct {
	name        string
	run         func(ctx context.Context, e *query.Engine) (query.Result, error)
	cooperative querytest.Replies
	scripted    querytest.Replies
	// agents is how many agents the flow may ask per round, rounds the
	// rounds it may take: with the router, the bound on its calls.
	agents, rounds int
}

func (b *bench) measureWeak(tb testing.TB) error {
	cfg := llm.DefaultConfig()
	attempts := 1 + cfg.Retry.ParseRetry
	insight := querytest.Scenarios()[1]
	bench := map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 200, "sets": 3, "reps": 5}}}
	flows := []weakFlow{
		{
			name: "ask",
			run: func(ctx context.Context, e *query.Engine) (query.Result, error) {
				return e.Ask(ctx, insight.Input, nil)
			},
			cooperative: insight.Replies,
			scripted:    querytest.Replies{"router": insight.Replies["router"]},
			// planner, analyzer, synthesizer, evaluator each round; the
			// observer once.
			agents: 4, rounds: 1 + cfg.Retry.LoopMax,
		},
		{
			// An AI application's question: the router is weak too.
			name: "MCP ask",
			run: func(ctx context.Context, e *query.Engine) (query.Result, error) {
				return e.Question(ctx, insight.Input, nil)
			},
			cooperative: insight.Replies,
			scripted:    querytest.Replies{},
			agents:      4, rounds: 1 + cfg.Retry.LoopMax,
		},
		{
			name: "log",
			run: func(ctx context.Context, e *query.Engine) (query.Result, error) {
				return e.Log(ctx, "Bench 3x5 @ 200, a new best", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
			},
			cooperative: querytest.Replies{
				"router":   {querytest.Route("log", "Strength training")},
				"parser":   {querytest.Parse("Strength training", bench, true)},
				"observer": {querytest.Observe("fact", "bench_best", "200 lbs 3x5", "certain")},
			},
			scripted: querytest.Replies{"router": {querytest.Route("log", "Strength training")}},
			// parser and observer, once.
			agents: 2, rounds: 1,
		},
	}
	for _, f := range flows {
		bound := attempts * (1 + f.agents*f.rounds + 1)
		coop, _, err := b.weakRun(tb, f, f.cooperative, nil)
		if err != nil {
			return fmt.Errorf("%s, cooperative: %w", f.name, err)
		}
		var per []string
		most := 0
		for _, fault := range llmtest.Faults {
			n, status, err := b.weakRun(tb, f, f.scripted, &llmtest.Weak{Fault: fault})
			if err != nil {
				return fmt.Errorf("%s, %s: %w", f.name, fault, err)
			}
			per = append(per, fmt.Sprintf("%s %d (%s)", fault, n, status))
			most = max(most, n)
		}
		b.add(row{
			figure:   fmt.Sprintf("model calls on a weak model, before it is given up: %s", f.name),
			target:   fmt.Sprintf("≤ %d (loop_max %d, parse_retry %d)", bound, cfg.Retry.LoopMax, cfg.Retry.ParseRetry),
			measured: strings.Join(per, ", "),
			baseline: fmt.Sprintf("cooperative: %d calls", coop),
			pass:     check(most <= bound),
		})
	}
	return nil
}

// weakRun runs f once with the roles in scripted answered as scripted and
// the others by weak (nil: none), and counts the model calls.
func (b *bench) weakRun(tb testing.TB, f weakFlow, scripted querytest.Replies, weak *llmtest.Weak) (int, query.Status, error) {
	fake := llmtest.NewOllama(tb, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	m := querytest.NewModel(scripted)
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		if _, ok := scripted[querytest.RoleOf(req)]; ok || weak == nil {
			return m.Reply(req)
		}
		return weak.Ollama(req)
	})
	client, err := llm.New(fake.Config())
	if err != nil {
		return 0, "", err
	}
	ctx := context.Background()
	v, err := vault.Open(ctx, vault.Options{Dir: editortest.SampleVault(tb)})
	if err != nil {
		return 0, "", err
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		return 0, "", err
	}
	st, err := query.OpenStore(ctx, v.DB())
	if err != nil {
		return 0, "", err
	}
	e := query.New(workspace.QueryVault(v), st, client, query.Options{Now: func() time.Time { return querytest.Now }})
	r, err := f.run(ctx, e)
	if err != nil {
		return 0, "", err
	}
	return len(fake.Requests()), r.Status, nil
}
