package query_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
)

// benchQuestion is answered offline by, among others, the evening the
// sample vault's bench felt heavy.
const (
	benchQuestion = "Why did my bench press feel heavy?"
	heavyBench    = "[[Daily/2026-11-13#18:15]]"
)

// offlineCitations are what margin cites for question with no model.
func offlineCitations(t *testing.T, question string) []string {
	t.Helper()
	r, err := engine(t, querytest.SampleVault(t), nil, querytest.Now).Ask(context.Background(), question, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusDegraded || len(r.Citations) == 0 {
		t.Fatalf("offline: status %s, citations %v", r.Status, r.Citations)
	}
	return cited(r)
}

// missingCites lists the offline citations an online result lacks.
func missingCites(r query.Result, offline []string) []string {
	var out []string
	for _, c := range offline {
		if !slices.Contains(cited(r), c) {
			out = append(out, c)
		}
	}
	return out
}

// TestJunkPlanFallsBackToOfflineCitations is issue 33's report: a planner
// that fills every field with "ok" made margin search exactly that and
// answer "I found nothing", where margin without a model cites the right
// daily notes. The plan's junk is dropped, the plain search of the
// question stands in, and the answer cites at least what offline does.
func TestJunkPlanFallsBackToOfflineCitations(t *testing.T) {
	offline := offlineCitations(t, benchQuestion)
	if !slices.Contains(offline, heavyBench) {
		t.Fatalf("offline citations %v miss the heavy bench", offline)
	}
	for _, tc := range []struct {
		name string
		plan map[string]any
	}{
		{"as reported", map[string]any{"from": "ok", "to": "ok", "glob": "ok", "tags": []string{"ok"}}},
		{"dates that are no days", map[string]any{"from": "2026-02-30", "to": "2026-02-31", "glob": "Nowhere/**", "tags": []string{"nosuchtag"}}},
		{"a range backwards", map[string]any{"from": "2026-11-15", "to": "2026-11-09", "tags": []string{"ok"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := querytest.Instr("the heavy session", "", "")
			for k, v := range tc.plan {
				in[k] = v
			}
			_, m, client := fakeModel(t, querytest.Replies{
				"router":   {querytest.Route("query")},
				"planner":  {querytest.Plan("simple", in)},
				"analyzer": {querytest.Analysis(true, []map[string]any{querytest.Finding("Bench felt heavy on Friday", heavyBench)}, nil)},
				// It cites the heavy evening and a note that does not exist.
				"synthesizer": {querytest.Draft("Friday's bench felt heavy "+heavyBench+" after a short night [[Never written]].", "medium",
					heavyBench, "[[Never written]]")},
				"evaluator": {querytest.Eval(true)},
			})
			r, err := engine(t, querytest.SampleVault(t), client, querytest.Now).Ask(context.Background(), benchQuestion, nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(r.Answer, "I found nothing") {
				t.Fatalf("answer %q: found nothing, where offline cites %v", r.Answer, offline)
			}
			if miss := missingCites(r, offline); len(miss) > 0 {
				t.Errorf("answer lacks the offline citations %v: %q", miss, r.Answer)
			}
			if strings.Contains(r.Answer, "Never written") || slices.Contains(cited(r), "[[Never written]]") {
				t.Errorf("a citation of a note that does not exist was kept: %q", r.Answer)
			}
			if r.Status == query.StatusDegraded {
				return // the schema refused the plan: the offline answer
			}
			if c := m.Calls(); c["planner"] != 1 {
				t.Errorf("planner called %d times: the plan's junk was re-planned instead of dropped", c["planner"])
			}
			var whys []string
			for _, tr := range r.Transitions {
				whys = append(whys, tr.Why)
			}
			if all := strings.Join(whys, "\n"); !strings.Contains(all, "dropped") || !strings.Contains(r.Answer, "plain search") {
				t.Errorf("the dropped plan is not said: transitions %q, answer %q", all, r.Answer)
			}
		})
	}
}

// TestEmptyPlanIsRelaxedStepByStep: tags, a glob and a day that all exist
// but together match nothing are relaxed — tags first, then the glob —
// until the day and keyword find the evening, without asking the planner
// again.
func TestEmptyPlanIsRelaxedStepByStep(t *testing.T) {
	in := querytest.Instr("the heavy session", "2026-11-13", "2026-11-13", "bench")
	in["tags"], in["glob"] = []string{"sleep"}, "Reference/**"
	_, m, client := fakeModel(t, querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.Plan("simple", in)},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Bench felt heavy on Friday", heavyBench)}, nil)},
		"synthesizer": {querytest.Draft("Friday's bench felt heavy "+heavyBench+".", "medium", heavyBench)},
		"evaluator":   {querytest.Eval(true)},
	})
	r, err := engine(t, querytest.SampleVault(t), client, querytest.Now).Ask(context.Background(), "What happened on the bench on the 13th?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !transitionsSay(r, "its instructions without a glob did") || m.Calls()["planner"] != 1 {
		t.Errorf("path %s, planner calls %d: want the plan relaxed down to its day and keyword", states(r), m.Calls()["planner"])
	}
	if !slices.Contains(cited(r), heavyBench) || strings.Contains(r.Answer, "came up empty") {
		t.Errorf("answer %q: want the evening cited, from the relaxed plan", r.Answer)
	}
}

// TestFillerNeverReachesThePersonAsAQuestion: a plan that would clarify
// with "ok" is not a clarification, and a clarifier's "ok" is no question
// to put to the person; either way the question is answered.
func TestFillerNeverReachesThePersonAsAQuestion(t *testing.T) {
	for _, tc := range []struct {
		name, planned, asked string
		clarifierCalls       int
	}{
		{"the planner's", "ok", "How stressed were you?", 0},
		{"the clarifier's", "How stressed were you on Friday?", "ok", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m, client := fakeModel(t, querytest.Replies{
				"router":      {querytest.Route("query", "Strength training")},
				"planner":     {querytest.PlanClarify("insight", tc.planned)},
				"clarifier":   {querytest.Clarify(tc.asked)},
				"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Bench felt heavy on Friday", heavyBench)}, nil)},
				"synthesizer": {querytest.Draft("Friday's bench felt heavy "+heavyBench+".", "medium", heavyBench)},
				"evaluator":   {querytest.Eval(true)},
			})
			r, err := engine(t, querytest.SampleVault(t), client, querytest.Now).Ask(context.Background(), benchQuestion, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == query.StatusClarification || len(r.Questions) > 0 || m.Calls()["clarifier"] != tc.clarifierCalls {
				t.Errorf("status %s, questions %+v, clarifier calls %d: want the question answered", r.Status, r.Questions, m.Calls()["clarifier"])
			}
		})
	}
}
