package query_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
)

// A router that answers a word outside its set is asked again, and when it
// never answers in the set the question is answered without a model: it
// is never taken for a log entry and written into the daily note (#20).
func TestRouterOutOfSetInputTypeIsNotLogged(t *testing.T) {
	v := querytest.SampleVault(t)
	fake, m, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("remember this for me", "Strength training")},
	})
	const question = "Why did my bench press feel heavy last week?"
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), question, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status == query.StatusLogged || r.Logged != nil || r.Type == query.InputLog {
		t.Fatalf("status %s type %s logged %+v: a question was taken for a log entry", r.Status, r.Type, r.Logged)
	}
	if r.Status != query.StatusDegraded || !strings.Contains(r.Answer, "did not match the expected format") || len(r.Citations) == 0 {
		t.Errorf("status %s answer %q citations %d: want a degraded answer from retrieval", r.Status, r.Answer, len(r.Citations))
	}
	if b, err := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md")); err == nil && strings.Contains(string(b), question) {
		t.Errorf("the question was written into the daily note:\n%s", b)
	}
	if n := m.Calls()["router"]; n != 2 {
		t.Errorf("router calls = %d, want 1 + parse_retry", n)
	}
	reqs := fake.Requests()
	retry := reqs[len(reqs)-1]
	if querytest.RoleOf(retry) != "router" || !strings.Contains(retry.Messages[len(retry.Messages)-1].Content, "remember this for me") {
		t.Errorf("the retry does not show the model what was wrong: %+v", retry.Messages)
	}
}

// A router that corrects itself after the corrective message is followed.
func TestRouterCorrectedInputTypeIsFollowed(t *testing.T) {
	v := querytest.SampleVault(t)
	sc := scenario(t, "insight")
	sc.Replies["router"] = append([]any{querytest.Route("QUESTION", "Strength training")}, sc.Replies["router"]...)
	_, m, client := fakeModel(t, sc.Replies)
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), sc.Input, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != query.InputQuery || r.Status != query.StatusAnswered || m.Calls()["router"] != 2 {
		t.Errorf("type %s status %s router calls %d: want the retried routing", r.Type, r.Status, m.Calls()["router"])
	}
}

// Every closed set of the agents' outputs reaches the model as an enum.
func TestClosedSetsAreEnums(t *testing.T) {
	schemaOf := func(f func() (*jsonschema.Schema, error)) *jsonschema.Schema {
		s, err := f()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	routing := schemaOf(llm.SchemaFor[query.Routing])
	plan := schemaOf(llm.SchemaFor[query.Plan])
	analysis := schemaOf(llm.SchemaFor[query.Analysis])
	draft := schemaOf(llm.SchemaFor[query.Draft])
	eval := schemaOf(llm.SchemaFor[query.Evaluation])
	obs := schemaOf(llm.SchemaFor[query.Observation])
	tests := []struct {
		field string
		got   *jsonschema.Schema
		want  []any
	}{
		{"router input_type", routing.Properties["input_type"], []any{"log", "query", "both", "correction"}},
		{"planner query_type", plan.Properties["query_type"], []any{"simple", "insight", "recommendation", "comparison"}},
		{"planner execution_strategy", plan.Properties["execution_strategy"], []any{"independent", "dependent", "coupled"}},
		{"planner next_action", plan.Properties["next_action"], []any{"retrieve", "expand_domain", "clarify", "synthesize"}},
		{"analyzer finding confidence", analysis.Properties["findings"].Items.Properties["confidence"], []any{"high", "medium", "low"}},
		{"analyzer gap_type", analysis.Properties["gaps_identified"].Items.Properties["gap_type"], []any{"temporal", "topical", "contextual", "subjective", "clarification"}},
		{"analyzer severity", analysis.Properties["gaps_identified"].Items.Properties["severity"], []any{"critical", "nice_to_have"}},
		{"analyzer verdict", analysis.Properties["verdict"], []any{"sufficient", "insufficient"}},
		{"synthesizer confidence", draft.Properties["confidence"], []any{"high", "medium", "low"}},
		{"evaluator dimension", eval.Properties["dimensions"].Items.Properties["dimension"], []any{"accuracy", "relevance", "safety", "completeness"}},
		{"evaluator dimension verdict", eval.Properties["dimensions"].Items.Properties["verdict"], []any{"pass", "fail"}},
		{"evaluator recommendation", eval.Properties["recommendation"], []any{"accept", "retry_with_feedback", "retry_with_more_context", "give_partial"}},
		{"evaluator overall_verdict", eval.Properties["overall_verdict"], []any{"pass", "fail"}},
		{"observer category", obs.Properties["updates"].Items.Properties["category"], []any{"preference", "pattern", "fact", "insight"}},
		{"observer confidence", obs.Properties["updates"].Items.Properties["confidence"], []any{"certain", "likely", "tentative"}},
	}
	for _, tt := range tests {
		if tt.got == nil || !slices.Equal(tt.got.Enum, tt.want) {
			t.Errorf("%s: schema %+v, want enum %v", tt.field, tt.got, tt.want)
		}
	}
	// The analyzer still writes its verdict last.
	if o := analysis.PropertyOrder; o[len(o)-1] != "verdict" {
		t.Errorf("analyzer property order %v, want verdict last", o)
	}
}
