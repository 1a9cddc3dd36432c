package query_test

import (
	"context"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// TestModelCallsAreInTheLedgerUnderTheSession: every model call of a
// question and of a log is in the ledger as "query:<session id>", as SPEC
// promises, and none is left untagged.
func TestModelCallsAreInTheLedgerUnderTheSession(t *testing.T) {
	ctx := context.Background()
	v := querytest.SampleVault(t)
	led, err := ledger.Open(ctx, v.DB(), nil)
	if err != nil {
		t.Fatal(err)
	}
	replies := querytest.Scenarios()[0].Replies // simple
	replies["router"] = append(replies["router"], querytest.Route("log", "Strength training"))
	replies["parser"] = append(replies["parser"], querytest.Parse("Strength training", map[string]any{}, false))
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	fake.Handle(querytest.NewModel(replies).Reply)
	cfg := fake.Config()
	cfg.Retry.LLMRetry = 0
	client, err := llm.New(cfg, llm.WithRecorder(led))
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t, v, client, querytest.Now)

	asked, err := e.Ask(ctx, querytest.Scenarios()[0].Input, nil)
	if err != nil {
		t.Fatal(err)
	}
	askCalls := len(fake.Requests())
	logged, err := e.Log(ctx, "Bench 3x5 @ 200", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
	if err != nil {
		t.Fatal(err)
	}
	logCalls := len(fake.Requests()) - askCalls
	for _, c := range []struct {
		session string
		calls   int
	}{{asked.SessionID, askCalls}, {logged.SessionID, logCalls}} {
		tot, err := led.Totals(ctx, "query:"+c.session)
		if err != nil {
			t.Fatal(err)
		}
		if c.calls == 0 || tot.Calls != c.calls {
			t.Errorf("ledger has %d calls under query:%s, the model was asked %d times", tot.Calls, c.session, c.calls)
		}
	}
	if untagged, err := led.Totals(ctx, ""); err != nil || untagged.Calls != 0 {
		t.Errorf("untagged calls in the ledger: %+v, %v", untagged, err)
	}
}
