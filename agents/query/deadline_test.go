package query_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// slowEngine is an engine over the sample vault whose model answers the
// simple scenario, except that role, which takes an hour per call. The
// model call's own timeout and retries are the defaults (3m, 3 retries):
// only the request's deadline can end it. The deadline leaves the fast
// roles room on a loaded machine under -race: 300ms was cut before the
// slow role was reached.
func slowEngine(t *testing.T, role string) *query.Engine {
	t.Helper()
	v := querytest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	replies := querytest.Scenarios()[0].Replies
	replies["parser"] = []any{querytest.Parse("Strength training", map[string]any{}, false)}
	m := querytest.NewModel(replies)
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		r := m.Reply(req)
		if querytest.RoleOf(req) == role {
			r.Delay = time.Hour
		}
		return r
	})
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	e, err := query.NewEngine(context.Background(), v, client, query.Options{
		Now: func() time.Time { return querytest.Now }, Deadline: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// hangGuard only catches a flow that ignores its deadline: without one,
// a slow model's call runs its 3m timeout four times.
func hangGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const cutGap = "cut at the 2s deadline (query.deadline)"

// A query whose model is slow is cut at query.deadline: before an answer
// is written it falls back to a plain search, after one it gives that
// answer unchecked; either way the answer says it was cut.
func TestQueryIsCutAtItsDeadline(t *testing.T) {
	input := querytest.Scenarios()[0].Input
	t.Run("slow analyzer", func(t *testing.T) {
		r, err := slowEngine(t, "analyzer").Ask(hangGuard(t), input, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != query.StatusDegraded || !slices.Contains(r.Gaps, cutGap) || !strings.Contains(r.Answer, "the model was too slow") || len(r.Citations) == 0 {
			t.Errorf("status %s gaps %q citations %d answer %q: want degraded, cut, with search hits", r.Status, r.Gaps, len(r.Citations), r.Answer)
		}
		if got := states(r); !strings.HasSuffix(got, "ANALYZE DEGRADED COMPLETE") {
			t.Errorf("states %s", got)
		}
	})
	t.Run("slow evaluator", func(t *testing.T) {
		r, err := slowEngine(t, "evaluator").Ask(hangGuard(t), input, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != query.StatusPartial || !slices.Contains(r.Gaps, cutGap) || !strings.Contains(r.Answer, "squatted 3x5 @ 275") {
			t.Errorf("status %s gaps %q answer %q: want the written answer, partial and cut", r.Status, r.Gaps, r.Answer)
		}
		if got := states(r); !strings.HasSuffix(got, "SYNTHESIZE EVALUATE COMPLETE") {
			t.Errorf("states %s", got)
		}
	})
	t.Run("slow parser", func(t *testing.T) {
		r, err := slowEngine(t, "parser").Log(hangGuard(t), "Bench 3x5 @ 200", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != query.StatusLogged || r.Logged == nil || !strings.Contains(r.Answer, cutGap) {
			t.Errorf("status %s logged %+v answer %q: want the line logged unparsed, cut", r.Status, r.Logged, r.Answer)
		}
	})
}
