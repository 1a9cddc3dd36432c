package query_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// weakModel is a fake Ollama whose agents answer like a small local model
// with fault, except the roles scripted in replies, and a client with
// parse_retry 1.
func weakModel(t *testing.T, fault llmtest.Fault, replies querytest.Replies) (*llmtest.Ollama, *llm.Client) {
	t.Helper()
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	scripted := querytest.NewModel(replies)
	weak := llmtest.Weak{Fault: fault}
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		if _, ok := replies[querytest.RoleOf(req)]; ok {
			return scripted.Reply(req)
		}
		return weak.Ollama(req)
	})
	cfg := fake.Config()
	cfg.Retry.LLMRetry = 0
	cfg.Retry.ParseRetry = 1
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fake, client
}

func transitionsSay(r query.Result, what string) bool {
	return slices.ContainsFunc(r.Transitions, func(tr query.Transition) bool { return strings.Contains(tr.Why, what) })
}

// TestWeakModelAsk asks a question whose offline answer cites the heavy
// bench evening of a model with each fault (the router is told it is a
// question: only the agents after it are weak). Whatever the fault, the
// answer cites at least what margin cites without a model, no citation of
// a note that does not exist survives, and the model is called a bounded
// number of times; each case names how the flow got there.
func TestWeakModelAsk(t *testing.T) {
	offline := offlineCitations(t, benchQuestion)
	// router 1 + 3 rounds of planner (2 calls each with parse_retry 1)
	// + analyzer, synthesizer, evaluator (2 each).
	const maxCalls = 1 + 3*2 + 3*2
	for _, tc := range []struct {
		fault   llmtest.Fault
		outcome string
		check   func(query.Result) bool
	}{
		{llmtest.Filler, "a plan of \"ok\" dates fails its schema: the offline answer",
			func(r query.Result) bool { return r.Status == query.StatusDegraded }},
		{llmtest.DatesInWords, "a plan dated \"last week\" fails its schema: the offline answer",
			func(r query.Result) bool { return r.Status == query.StatusDegraded }},
		{llmtest.Headings, "headings in one-line fields fail the schema: the offline answer",
			func(r query.Result) bool { return r.Status == query.StatusDegraded }},
		{llmtest.Cut, "a reply cut mid-JSON is re-asked once, then the offline answer",
			func(r query.Result) bool { return r.Status == query.StatusDegraded }},
		{llmtest.EveryOptional, "a glob and tags that match nothing are dropped and said; the plain search stands in",
			func(r query.Result) bool {
				return r.Status == query.StatusAnswered && transitionsSay(r, `glob "The glob." matches no note`) && strings.Contains(r.Answer, "came up empty")
			}},
		{llmtest.NearDuplicates, "near-duplicate keywords find nothing; the plain search stands in and is said",
			func(r query.Result) bool {
				return r.Status == query.StatusAnswered && strings.Contains(r.Answer, "came up empty")
			}},
		{llmtest.MissingPaths, "a glob of a missing note is dropped; an empty answer citing missing notes becomes the offline one",
			func(r query.Result) bool {
				return r.Status == query.StatusPartial && r.Confidence == "low" && transitionsSay(r, "matches no note") && strings.HasPrefix(r.Answer, "The model's answer said nothing")
			}},
		{llmtest.OtherLanguage, "the answer in another language is kept, with the offline citations under it",
			func(r query.Result) bool {
				return r.Status == query.StatusAnswered && strings.HasPrefix(r.Answer, llmtest.ForeignText) && strings.Contains(r.Answer, "also found")
			}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			fake, client := weakModel(t, tc.fault, querytest.Replies{"router": {querytest.Route("query", "Strength training")}})
			r, err := engine(t, querytest.SampleVault(t), client, querytest.Now).Ask(context.Background(), benchQuestion, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(r) {
				t.Errorf("want: %s; got status %s, answer %q, path %s", tc.outcome, r.Status, r.Answer, states(r))
			}
			if strings.Contains(r.Answer, "I found nothing") {
				t.Errorf("found nothing, where offline cites %v", offline)
			}
			if miss := missingCites(r, offline); len(miss) > 0 {
				t.Errorf("lacks the offline citations %v: %q", miss, r.Answer)
			}
			if strings.Contains(r.Answer, "Never written") || slices.ContainsFunc(r.Citations, func(c query.Citation) bool { return strings.Contains(c.Link, "Never written") }) {
				t.Errorf("a citation of a missing note survived: %q", r.Answer)
			}
			if n := len(fake.Requests()); n > maxCalls {
				t.Errorf("%d model calls, want at most %d", n, maxCalls)
			}
		})
	}
}

const personsContext = `---
margin: context
last_updated: 2026-11-01
version: 3
---

# Global Context

## Preferences

- weight_unit: lbs (certain, 2026-11-01)
I train before work, never after 8pm.

## Patterns

- (none yet)

## Facts

- (none yet)

## Insights

- (none yet)
`

// TestWeakModelLogAndObserver logs an entry the parser finds significant
// (the router and parser are scripted), so the Observer runs, weak with
// each fault. The entry is always logged with its data; the person's
// context lines are never blanked or rewritten; junk is dropped and said,
// and a reply that never fits leaves the context as it was and says so.
func TestWeakModelLogAndObserver(t *testing.T) {
	for _, tc := range []struct {
		fault   llmtest.Fault
		outcome string
		check   func(r query.Result, before, after string) bool
	}{
		{llmtest.Filler, `an "ok: ok" update is dropped and said`,
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "dropped 1 empty of content")
			}},
		{llmtest.DatesInWords, "an update with no key or value is dropped",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "dropped 1")
			}},
		{llmtest.MissingPaths, "an update with no key or value is dropped",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "dropped 1")
			}},
		{llmtest.Headings, "a heading in a one-line value fails the schema: the context is unchanged, and said",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "the global context is unchanged")
			}},
		{llmtest.Cut, "a cut reply never fits: the context is unchanged, and said",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "the global context is unchanged")
			}},
		{llmtest.NearDuplicates, "the model says there is nothing to update: the context is unchanged",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "0 update(s)")
			}},
		{llmtest.EveryOptional, "a plausible update is added beside the person's lines",
			func(r query.Result, before, after string) bool {
				return strings.Contains(after, "- the_key: The value.")
			}},
		{llmtest.OtherLanguage, "the model says there is nothing to update: the context is unchanged",
			func(r query.Result, before, after string) bool {
				return after == before && transitionsSay(r, "0 update(s)")
			}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			v := querytest.SampleVault(t)
			ctxPath := filepath.Join(v.Dir(), "Margin", "Context.md")
			if err := os.WriteFile(ctxPath, []byte(personsContext), 0o644); err != nil {
				t.Fatal(err)
			}
			_, client := weakModel(t, tc.fault, querytest.Replies{
				"router": {querytest.Route("log", "Strength training")},
				"parser": {querytest.Parse("Strength training", map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 200, "sets": 3, "reps": 5}}}, true)},
			})
			r, err := engine(t, v, client, querytest.Now).Log(context.Background(), "Bench 3x5 @ 200, a new best", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Logged == nil || r.Logged.Parsed["Strength training"] == nil {
				t.Fatalf("the entry was not logged with its data: %+v", r.Logged)
			}
			b, err := os.ReadFile(ctxPath)
			if err != nil {
				t.Fatal(err)
			}
			after := string(b)
			for _, line := range []string{"- weight_unit: lbs (certain, 2026-11-01)", "I train before work, never after 8pm."} {
				if !strings.Contains(after, line+"\n") {
					t.Errorf("the person's line %q is gone:\n%s", line, after)
				}
			}
			if strings.Contains(after, "- ok: ") || strings.Contains(after, "##  ") {
				t.Errorf("junk reached the context:\n%s", after)
			}
			if !tc.check(r, personsContext, after) {
				t.Errorf("want: %s; transitions %+v, context:\n%s", tc.outcome, r.Transitions, after)
			}
		})
	}
}

// TestObserverNearDuplicateKeys: "same point" and "Same point." are one
// item of the context, not two lines.
func TestObserverNearDuplicateKeys(t *testing.T) {
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, true)},
		"observer": {map[string]any{"insights_captured": []string{}, "should_update": true, "updates": []map[string]any{
			{"category": "pattern", "key": "Bench day", "value": "Friday", "confidence": "likely", "source": ""},
			{"category": "pattern", "key": "bench_day.", "value": "Friday", "confidence": "likely", "source": ""},
		}}},
	})
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Log(context.Background(), "Bench 3x5 @ 200", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil); err != nil {
		t.Fatal(err)
	}
	_, text, err := e.Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text, "bench_day"); n != 1 || !strings.Contains(text, "- bench_day: Friday") {
		t.Errorf("%d bench_day lines, want 1:\n%s", n, text)
	}
}

// TestWeakModelParser logs an entry, then corrects it, with a weak Parser
// (the router is scripted). The raw text is always in the daily note; the
// parsed data is never junk; and the correction never changes the data
// the earlier entry had, which is kept as the last good parse.
func TestWeakModelParser(t *testing.T) {
	for _, tc := range []struct {
		fault   llmtest.Fault
		outcome string
		check   func(log, correction query.Result) bool
	}{
		{llmtest.Filler, `"ok" data and "ok" uncertain fields are dropped`,
			func(l, c query.Result) bool { return len(l.Logged.Uncertain) == 0 }},
		{llmtest.DatesInWords, "nothing to parse is parsed as nothing",
			func(l, c query.Result) bool { return len(l.Logged.Parsed) == 0 }},
		{llmtest.Headings, "a heading in a one-line field fails the schema: stored unparsed, and said",
			func(l, c query.Result) bool { return strings.Contains(l.Logged.Note, "stored unparsed") }},
		{llmtest.Cut, "a cut reply never fits: stored unparsed, and said",
			func(l, c query.Result) bool { return strings.Contains(l.Logged.Note, "stored unparsed") }},
		{llmtest.EveryOptional, "a correction target that is no recent entry is not followed, and said",
			func(l, c query.Result) bool { return strings.Contains(c.Logged.Note, "no earlier data was changed") }},
		{llmtest.NearDuplicates, "near-duplicate domains that were not asked for are dropped",
			func(l, c query.Result) bool { return len(l.Logged.Parsed) == 0 }},
		{llmtest.MissingPaths, "a correction of a missing entry is not followed, and said",
			func(l, c query.Result) bool { return strings.Contains(c.Logged.Note, "no earlier data was changed") }},
		{llmtest.OtherLanguage, "notes in another language are kept as the model's notes; no data is made up",
			func(l, c query.Result) bool { return len(l.Logged.Parsed) == 0 }},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			v := querytest.SampleVault(t)
			bench := map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 85, "sets": 3, "reps": 5}}}
			_, _, client := fakeModel(t, querytest.Replies{
				"router": {querytest.Route("log", "Strength training")},
				"parser": {querytest.Parse("Strength training", bench, false)},
			})
			e := engine(t, v, client, querytest.Now)
			if _, err := e.Log(context.Background(), "Bench 3x5 @ 85", time.Date(2026, 11, 22, 7, 30, 0, 0, time.Local), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Scan(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			_, weakClient := weakModel(t, tc.fault, querytest.Replies{"router": {querytest.Route("log", "Strength training")}})
			we := engine(t, v, weakClient, querytest.Now)
			l, err := we.Log(context.Background(), "Squat 3x5 @ 225", time.Date(2026, 11, 22, 8, 0, 0, 0, time.Local), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, weakClient = weakModel(t, tc.fault, querytest.Replies{"router": {querytest.RouteCorrection("the bench weight this morning", "Strength training")}})
			c, err := engine(t, v, weakClient, querytest.Now).Ask(context.Background(), "Actually the bench was 185 not 85", nil)
			if err != nil {
				t.Fatal(err)
			}
			daily, _ := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md"))
			for _, raw := range []string{"Bench 3x5 @ 85", "Squat 3x5 @ 225", "Actually the bench was 185 not 85"} {
				if !strings.Contains(string(daily), raw) {
					t.Errorf("%q is not in the daily note:\n%s", raw, daily)
				}
			}
			for _, r := range []query.Result{l, c} {
				if r.Logged == nil {
					t.Fatalf("not logged: %+v", r)
				}
				for domain, data := range r.Logged.Parsed {
					if domain != "Strength training" && domain != "General" || len(data.(map[string]any)) > 0 {
						t.Errorf("junk stored as parsed data: %s %v", domain, data)
					}
				}
				if slices.ContainsFunc(r.Logged.Uncertain, func(u string) bool { return u == "ok" }) {
					t.Errorf("uncertain fields %q", r.Logged.Uncertain)
				}
			}
			got, err := e.ParsedData(context.Background(), "Daily/2026-11-22.md", "07:30")
			if err != nil {
				t.Fatal(err)
			}
			if ex, _ := got["Strength training"].(map[string]any)["exercises"].([]any); len(ex) != 1 || ex[0].(map[string]any)["weight_lbs"] != float64(85) {
				t.Errorf("the earlier entry's data changed: %v", got)
			}
			if !tc.check(l, c) {
				t.Errorf("want: %s; log %+v, correction %+v", tc.outcome, l.Logged, c.Logged)
			}
		})
	}
}

// TestWeakRouterNeverLogsAQuestion: a weak router takes every input for
// a log (its schema's first word); a question is still answered, never
// written into the person's daily note.
func TestWeakRouterNeverLogsAQuestion(t *testing.T) {
	offline := offlineCitations(t, benchQuestion)
	for _, fault := range llmtest.Faults {
		t.Run(string(fault), func(t *testing.T) {
			v := querytest.SampleVault(t)
			_, client := weakModel(t, fault, nil)
			r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), benchQuestion, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Logged != nil || r.Status == query.StatusLogged {
				t.Errorf("the question was logged: %+v", r.Logged)
			}
			if _, err := os.Stat(filepath.Join(v.Dir(), "Daily/2026-11-22.md")); !os.IsNotExist(err) {
				t.Errorf("today's daily note was written: %v", err)
			}
			if miss := missingCites(r, offline); len(miss) > 0 {
				t.Errorf("lacks the offline citations %v: %q", miss, r.Answer)
			}
		})
	}
}
