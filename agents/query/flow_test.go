package query_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/margin-md/margin/vault"
)

// fakeModel starts a fake Ollama answering by role and a client for it.
func fakeModel(t *testing.T, replies querytest.Replies) (*llmtest.Ollama, *querytest.Model, *llm.Client) {
	t.Helper()
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	m := querytest.NewModel(replies)
	fake.Handle(m.Reply)
	cfg := fake.Config()
	cfg.Retry.LLMRetry = 0
	cfg.Retry.ParseRetry = 1
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fake, m, client
}

func engine(t *testing.T, v *vault.Vault, client *llm.Client, now time.Time) *query.Engine {
	t.Helper()
	e, err := query.NewEngine(context.Background(), v, client, query.Options{Now: func() time.Time { return now }, LoopMax: 2})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func states(r query.Result) string {
	var out []string
	for _, tr := range r.Transitions {
		out = append(out, string(tr.To))
	}
	return strings.Join(out, " ")
}

func cited(r query.Result) []string {
	var out []string
	for _, c := range r.Citations {
		out = append(out, c.Link)
	}
	return out
}

// TestScenarios runs seed 003 §17.C's queries through the state machine
// over a scripted model and checks each one's path, status, citations and
// call count.
func TestScenarios(t *testing.T) {
	paths := map[string]string{
		"simple":         "BUILD_CONTEXT PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE",
		"insight":        "BUILD_CONTEXT PLAN RETRIEVE ANALYZE PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE",
		"recommendation": "BUILD_CONTEXT PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE",
		"multi-part":     "BUILD_CONTEXT PLAN RETRIEVE ANALYZE PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE",
		"no data":        "BUILD_CONTEXT PLAN RETRIEVE PLAN RETRIEVE PLAN RETRIEVE SYNTHESIZE OBSERVE COMPLETE",
	}
	for _, sc := range querytest.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			v := querytest.SampleVault(t)
			fake, m, client := fakeModel(t, sc.Replies)
			e := engine(t, v, client, querytest.Now)
			r, err := e.Ask(context.Background(), sc.Input, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Status) != sc.Status {
				t.Errorf("status = %s, want %s; answer %q", r.Status, sc.Status, r.Answer)
			}
			if got := states(r); got != paths[sc.Name] {
				t.Errorf("path =\n  %s\nwant\n  %s", got, paths[sc.Name])
			}
			for _, c := range sc.Cite {
				if !slices.Contains(cited(r), c) || !strings.Contains(r.Answer, c) {
					t.Errorf("answer does not cite %s: %q, citations %v", c, r.Answer, cited(r))
				}
			}
			if sc.Invented != "" && (slices.Contains(cited(r), sc.Invented) || strings.Contains(r.Answer, sc.Invented)) {
				t.Errorf("invented citation %s kept: %q %v", sc.Invented, r.Answer, cited(r))
			}
			if n := len(fake.Requests()); n > sc.MaxCalls {
				t.Errorf("%d model calls (%v), want at most %d", n, m.Calls(), sc.MaxCalls)
			}
		})
	}
}

func TestNoDataSaysSoAndInventsNothing(t *testing.T) {
	sc := scenario(t, "no data")
	v := querytest.SampleVault(t)
	fake, m, client := fakeModel(t, sc.Replies)
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), sc.Input, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Answer, "found nothing") || len(r.Citations) != 0 || r.Confidence != "low" {
		t.Errorf("answer %q, citations %v, confidence %s: want a plain no-data answer", r.Answer, r.Citations, r.Confidence)
	}
	if strings.Contains(r.Answer, "laps on Tuesday") {
		t.Errorf("answer carries the model's invention: %q", r.Answer)
	}
	if c := m.Calls(); c["synthesizer"]+c["analyzer"] != 0 {
		t.Errorf("synthesizer/analyzer were asked with nothing retrieved: %v", c)
	}
	// The second plan saw that the first attempt found nothing.
	var plans []string
	for _, req := range fake.Requests() {
		if querytest.RoleOf(req) == "planner" {
			plans = append(plans, querytest.User(req))
		}
	}
	if len(plans) < 2 || !strings.Contains(plans[1], "→ 0 entries") {
		t.Errorf("re-plan was not told the first attempt found nothing: %q", plans)
	}
}

func scenario(t *testing.T, name string) querytest.Scenario {
	for _, sc := range querytest.Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return querytest.Scenario{}
}

// TestAgentsAreGivenWhatTheyNeed checks the prompts: the analyzer's verdict
// is the last property of its schema, note text is fenced as data, the
// planner knows today's date and the domain vocabulary.
func TestAgentsAreGivenWhatTheyNeed(t *testing.T) {
	sc := scenario(t, "insight")
	v := querytest.SampleVault(t)
	fake, _, client := fakeModel(t, sc.Replies)
	if _, err := engine(t, v, client, querytest.Now).Ask(context.Background(), sc.Input, nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, req := range fake.Requests() {
		role := querytest.RoleOf(req)
		seen[role] = true
		user, system := querytest.User(req), querytest.System(req)
		switch role {
		case "analyzer":
			var schema struct {
				Properties json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(req.Format, &schema); err != nil {
				t.Fatal(err)
			}
			props := string(schema.Properties)
			if i := strings.LastIndex(props, `"verdict"`); i < strings.LastIndex(props, `"verdict_reasoning"`) || i < strings.LastIndex(props, `"gaps_identified"`) {
				t.Errorf("verdict is not the last property of the analyzer's schema: %s", props)
			}
			if !strings.Contains(user, "<<<NOTES") || !strings.Contains(user, "Bench press felt really heavy") {
				t.Errorf("analyzer was not given the fenced entries:\n%s", user)
			}
			if !strings.Contains(system, "Strength training") {
				t.Errorf("analyzer system prompt lacks the selected domain's expertise")
			}
		case "planner":
			if !strings.Contains(user, "Today: 2026-11-22 (Sunday)") {
				t.Errorf("planner not told today's date:\n%s", user)
			}
			if !strings.Contains(system, "bench → bench press") {
				t.Errorf("planner system prompt lacks the vocabulary:\n%s", system)
			}
		case "router":
			if !strings.Contains(user, "- Strength training:") || !strings.Contains(user, "- Work:") || strings.Contains(user, "- General:") {
				t.Errorf("router must see the selectable domains (not the base one):\n%s", user)
			}
		}
	}
	for _, role := range []string{"router", "planner", "analyzer", "synthesizer", "evaluator", "observer"} {
		if !seen[role] {
			t.Errorf("no %s call", role)
		}
	}
}

func TestInsightUpdatesGlobalContext(t *testing.T) {
	sc := scenario(t, "insight")
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, sc.Replies)
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Ask(context.Background(), sc.Input, nil); err != nil {
		t.Fatal(err)
	}
	p, content, err := e.Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"margin: context", "last_updated: 2026-11-22", "version: 1", "## Insights", "- short_sleep_heavy_bench: Under 5h of sleep precedes heavy bench sessions (tentative, 2026-11-22)"} {
		if !strings.Contains(content, want) {
			t.Errorf("%s lacks %q:\n%s", p, want, content)
		}
	}
}

func TestLoopMaxGivesPartialAnswerWithGaps(t *testing.T) {
	v := querytest.SampleVault(t)
	fake, _, client := fakeModel(t, querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.Plan("insight", querytest.Instr("bench", "2026-11-09", "2026-11-15", "bench"))},
		"analyzer":    {querytest.Analysis(false, nil, nil, querytest.Gap("what the user ate on Thursday", "contextual", true))},
		"synthesizer": {querytest.Draft("Here's what I can tell you: the bench felt heavy on Friday.", "high")},
		"evaluator":   {querytest.Eval(true)},
	})
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "Why was bench heavy?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusPartial || !slices.Contains(r.Gaps, "what the user ate on Thursday") || r.Confidence == "high" {
		t.Errorf("status %s gaps %v confidence %s: want partial with the gap, confidence below high", r.Status, r.Gaps, r.Confidence)
	}
	plans := 0
	for _, req := range fake.Requests() {
		if querytest.RoleOf(req) == "planner" {
			plans++
		}
	}
	if plans != 3 {
		t.Errorf("%d plans, want 3 (the first and loop_max=2 re-plans)", plans)
	}
}

func TestMalformedOutputDegrades(t *testing.T) {
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, querytest.Replies{
		"router":  {querytest.Route("query", "Strength training")},
		"planner": {"this is not JSON at all"},
	})
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "Why did my bench press feel heavy?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusDegraded || !strings.Contains(r.Answer, "did not match the expected format") || len(r.Citations) == 0 {
		t.Errorf("status %s answer %q citations %d: want degraded with retrieval hits", r.Status, r.Answer, len(r.Citations))
	}
}

func TestOffline(t *testing.T) {
	v := querytest.SampleVault(t)
	cfg := llm.DefaultConfig()
	p := cfg.Providers[llm.KindOllama]
	p.APIBase = "http://127.0.0.1:1" // nothing listens there
	cfg.Providers[llm.KindOllama] = p
	cfg.Retry.LLMRetry = 0
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t, v, client, querytest.Now)
	t.Run("ask", func(t *testing.T) {
		r, err := e.Ask(context.Background(), "bench press heavy", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != query.StatusDegraded || !strings.Contains(r.Answer, "no model was reachable") || !slices.Contains(cited(r), "[[Daily/2026-11-13#18:15]]") {
			t.Errorf("status %s answer %q citations %v", r.Status, r.Answer, cited(r))
		}
	})
	t.Run("log", func(t *testing.T) {
		r, err := e.Log(context.Background(), "Bench 3x5 @ 200", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != query.StatusLogged || r.Logged == nil || r.Logged.Parsed != nil || !strings.Contains(r.Logged.Note, "unparsed") {
			t.Fatalf("result %+v logged %+v: want logged unparsed", r, r.Logged)
		}
		b, err := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md"))
		if err != nil || !strings.Contains(string(b), "## 18:00\nSleep: \n\nBench 3x5 @ 200\n") {
			t.Errorf("daily note = %q, %v", b, err)
		}
	})
}

func TestLogParsesStoresAndCreatesTheNoteFromTheTemplate(t *testing.T) {
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{
			"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 200, "sets": 3, "reps": 5}},
			"rpe":       9, // not in the text: must be dropped
		}, true, "Strength training.exercises.felt")},
		"observer": {querytest.Observe("fact", "bench_pr", "200 lbs 3x5", "certain")},
	})
	e := engine(t, v, client, querytest.Now)
	at := time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local)
	r, err := e.Log(context.Background(), "Bench 3x5 @ 200, new PR!", at, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusLogged || r.Logged == nil || r.Logged.Path != "Daily/2026-11-22.md" || r.Logged.Heading != "18:00" {
		t.Fatalf("result %+v", r)
	}
	b, _ := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md"))
	if !strings.HasPrefix(string(b), "---\ntags: [daily]\n---\n# Sunday, November 22\n") || !strings.HasSuffix(string(b), "## 18:00\nSleep: \n\nBench 3x5 @ 200, new PR!\n") {
		t.Errorf("daily note not created from the template and appended:\n%s", b)
	}
	got, err := e.ParsedData(context.Background(), "Daily/2026-11-22.md", "18:00")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := got["Strength training"].(map[string]any)
	if st == nil || st["exercises"] == nil || st["rpe"] != nil {
		t.Errorf("stored data = %v: want the exercises without the invented rpe", got)
	}
	if !slices.ContainsFunc(r.Logged.Uncertain, func(s string) bool { return strings.HasPrefix(s, "Strength training.rpe") }) ||
		!slices.Contains(r.Logged.Uncertain, "Strength training.exercises.felt") {
		t.Errorf("uncertain = %v: want the parser's own and the dropped field", r.Logged.Uncertain)
	}
	_, ctxText, _ := e.Context(context.Background())
	if !strings.Contains(ctxText, "- bench_pr: 200 lbs 3x5 (certain, 2026-11-22)") {
		t.Errorf("significant log did not reach the global context:\n%s", ctxText)
	}
}

func TestCorrectionAppendsAndUpdatesParsedData(t *testing.T) {
	v := querytest.SampleVault(t)
	_, m, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 85, "sets": 3, "reps": 5}}}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Log(context.Background(), "Bench 3x5 @ 85", time.Date(2026, 11, 22, 7, 30, 0, 0, time.Local), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Scan(context.Background(), nil); err != nil { // what the watcher does in the server
		t.Fatal(err)
	}
	m.Set(querytest.Replies{
		"router": {querytest.RouteCorrection("the bench weight this morning", "Strength training")},
		"parser": {querytest.ParseCorrection("[[Daily/2026-11-22#07:30]]", "Strength training",
			map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 185, "sets": 3, "reps": 5}}})},
		"observer": {querytest.Observe("preference", "weight_unit", "lbs", "likely")},
	})
	r, err := e.Ask(context.Background(), "Actually that was 185 not 85 pounds", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != query.InputCorrection || r.Logged == nil || r.Logged.Heading != "09:00 [correction]" || r.Logged.Corrects != "[[Daily/2026-11-22#07:30]]" {
		t.Fatalf("result type %s logged %+v", r.Type, r.Logged)
	}
	b, _ := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md"))
	if !strings.Contains(string(b), "## 07:30\nSleep: \n\nBench 3x5 @ 85\n\n## 09:00 [correction]\nActually that was 185 not 85 pounds\n") {
		t.Errorf("correction not appended after the original, which must stay:\n%s", b)
	}
	got, _ := e.ParsedData(context.Background(), "Daily/2026-11-22.md", "07:30")
	if !strings.Contains(toJSON(got), `"weight_lbs":185`) {
		t.Errorf("parsed data of the corrected entry = %s, want weight 185", toJSON(got))
	}
	_, ctxText, _ := e.Context(context.Background())
	if !strings.Contains(ctxText, "- weight_unit: lbs (certain, 2026-11-22)") {
		t.Errorf("a correction's lesson must be certain:\n%s", ctxText)
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestBothLogsThenAnswers(t *testing.T) {
	v := querytest.SampleVault(t)
	fake, _, client := fakeModel(t, querytest.Replies{
		"router":      {querytest.RouteBoth("Slept 5 hours again.", "Why am I always tired?", "Work")},
		"parser":      {querytest.Parse("General", map[string]any{"sleep_hours": 5}, false)},
		"planner":     {querytest.Plan("insight", querytest.Instr("sleep", "2026-11-15", "2026-11-22", "sleep"))},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("5 hours today", "[[Daily/2026-11-22#09:00]]")}, nil)},
		"synthesizer": {querytest.Draft("You slept 5 hours last night [[Daily/2026-11-22#09:00]].", "medium", "[[Daily/2026-11-22#09:00]]")},
		"evaluator":   {querytest.Eval(true)},
	})
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "Slept 5 hours again. Why am I always tired?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != query.InputBoth || r.Status != query.StatusAnswered || r.Logged == nil || !slices.Contains(cited(r), "[[Daily/2026-11-22#09:00]]") {
		t.Fatalf("type %s status %s logged %+v citations %v", r.Type, r.Status, r.Logged, cited(r))
	}
	if got := states(r); !strings.HasPrefix(got, "BUILD_CONTEXT PARSE STORE BUILD_CONTEXT PLAN") {
		t.Errorf("path %s: want the log stored before the question is planned", got)
	}
	b, _ := os.ReadFile(filepath.Join(v.Dir(), "Daily/2026-11-22.md"))
	if !strings.Contains(string(b), "## 09:00\nSleep: \n\nSlept 5 hours again.\n") || strings.Contains(string(b), "Why am I") {
		t.Errorf("daily note must hold the log part only:\n%s", b)
	}
	for _, req := range fake.Requests() {
		if querytest.RoleOf(req) == "analyzer" && !strings.Contains(querytest.User(req), "Slept 5 hours again.") {
			t.Errorf("analyzer did not see the entry just logged")
		}
	}
}

func TestClarificationSurvivesRestartAndExpires(t *testing.T) {
	v := querytest.SampleVault(t)
	replies := querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.PlanClarify("insight", "How stressed were you on Friday?")},
		"clarifier":   {querytest.Clarify("How stressed were you on Friday?", "not at all", "somewhat", "very")},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Very stressed on Friday (user)")}, nil)},
		"synthesizer": {querytest.Draft("Stress on Friday, as you say, plus little sleep.", "medium")},
		"evaluator":   {querytest.Eval(true)},
	}
	_, _, client := fakeModel(t, replies)
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "Was stress behind Friday's heavy bench?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusClarification || len(r.Questions) != 1 || r.Questions[0].ID != "q1" || len(r.Questions[0].Options) != 3 {
		t.Fatalf("status %s questions %+v", r.Status, r.Questions)
	}
	ctx := context.Background()
	// A new engine over the same database is a restarted server.
	restarted := engine(t, v, client, querytest.Now.Add(time.Hour))
	got, err := restarted.Reply(ctx, r.SessionID, map[string]string{"q1": "very"}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != query.StatusAnswered || !strings.Contains(states(got), "WAIT_USER ANALYZE SYNTHESIZE") {
		t.Errorf("reply status %s path %s", got.Status, states(got))
	}
	if _, err := restarted.Reply(ctx, r.SessionID, map[string]string{"q1": "very"}, false, nil); !errors.Is(err, query.ErrSessionNotFound) {
		t.Errorf("second reply: %v, want ErrSessionNotFound", err)
	}
	if _, err := restarted.Reply(ctx, "nosuchsession", nil, true, nil); !errors.Is(err, query.ErrSessionNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	r2, err := engine(t, v, client, querytest.Now).Ask(ctx, "Was stress behind Friday's heavy bench?", nil)
	if err != nil {
		t.Fatal(err)
	}
	late := engine(t, v, client, querytest.Now.Add(25*time.Hour))
	if _, err := late.Reply(ctx, r2.SessionID, map[string]string{"q1": "very"}, false, nil); !errors.Is(err, query.ErrSessionNotFound) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("reply after the TTL: %v, want an expired-session error", err)
	}
}

func TestBadInput(t *testing.T) {
	v := querytest.SampleVault(t)
	e := engine(t, v, nil, querytest.Now)
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"empty", "  \n", query.ErrEmptyInput},
		{"huge", strings.Repeat("x", 17<<10), query.ErrInputTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := e.Ask(context.Background(), tc.text, nil); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCancellationStopsTheFlow(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("query")},
		"planner": {func(llmtest.OllamaRequest) any {
			cancel()
			return querytest.Plan("simple", querytest.Instr("x", "", "", "bench"))
		}},
	})
	_, err := engine(t, v, client, querytest.Now).Ask(ctx, "bench?", nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestDomainExpansion: a planner asking for an available domain, and an
// analysis with a gap outside the loaded expertise, each load the domain
// and re-plan with it; a request for a domain that does not exist or is
// loaded already changes nothing, so expansion cannot loop.
func TestDomainExpansion(t *testing.T) {
	gapOutside := querytest.Gap("how the late deploy affected sleep", "contextual", true)
	gapOutside["outside_current_expertise"], gapOutside["suspected_domain"] = true, "Work"
	expand := querytest.Plan("insight", querytest.Instr("bench", "2026-11-13", "2026-11-13", "bench"))
	expand["domain_expansion_request"], expand["next_action"] = []string{"Work", "Knitting"}, "expand_domain"
	for _, tc := range []struct {
		name     string
		replies  querytest.Replies
		wantPath string
	}{
		{"planner asks", querytest.Replies{
			"router":      {querytest.Route("query", "Strength training")},
			"planner":     {expand, querytest.Plan("insight", querytest.Instr("bench", "2026-11-13", "2026-11-13", "bench"))},
			"analyzer":    {querytest.Analysis(true, nil, nil)},
			"synthesizer": {querytest.Draft("Friday's bench was heavy.", "medium")},
			"evaluator":   {querytest.Eval(true)},
		}, "BUILD_CONTEXT PLAN EXPAND_DOMAIN BUILD_CONTEXT PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE"},
		{"analyzer gap outside expertise", querytest.Replies{
			"router":      {querytest.Route("query", "Strength training")},
			"planner":     {querytest.Plan("insight", querytest.Instr("bench", "2026-11-13", "2026-11-13", "bench"))},
			"analyzer":    {querytest.Analysis(false, nil, nil, gapOutside), querytest.Analysis(true, nil, nil)},
			"synthesizer": {querytest.Draft("Friday's bench was heavy.", "medium")},
			"evaluator":   {querytest.Eval(true)},
		}, "BUILD_CONTEXT PLAN RETRIEVE ANALYZE EXPAND_DOMAIN BUILD_CONTEXT PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := querytest.SampleVault(t)
			fake, _, client := fakeModel(t, tc.replies)
			r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "Why was Friday's bench heavy?", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := states(r); got != tc.wantPath {
				t.Errorf("path =\n  %s\nwant\n  %s", got, tc.wantPath)
			}
			plans := 0
			for _, req := range fake.Requests() {
				if querytest.RoleOf(req) == "planner" {
					plans++
					if plans == 2 && !strings.Contains(querytest.System(req), "### Work") {
						t.Errorf("the re-plan's system prompt lacks the Work domain's expertise")
					}
				}
			}
		})
	}
}

// askScenario asks sc's question of a model scripted with sc's replies.
func askScenario(t *testing.T, sc querytest.Scenario) (query.Result, *llmtest.Ollama, *querytest.Model) {
	t.Helper()
	fake, m, client := fakeModel(t, sc.Replies)
	r, err := engine(t, querytest.SampleVault(t), client, querytest.Now).Ask(context.Background(), sc.Input, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, fake, m
}

// TestDependentPartsAreWorkedInOrder: the second part of "why, and what to
// change" is planned and judged with what the first part found, and the
// answer is written from the findings of both, part by part.
func TestDependentPartsAreWorkedInOrder(t *testing.T) {
	_, fake, _ := askScenario(t, scenario(t, "multi-part"))
	byRole := map[string][]string{}
	for _, req := range fake.Requests() {
		byRole[querytest.RoleOf(req)] = append(byRole[querytest.RoleOf(req)], querytest.User(req))
	}
	for role, want := range map[string][][]string{
		"planner": {
			{"Question: Why was I tired last week and what should I change?"}, // the first plan finds the parts
			{"Plan for part 2 of 2 now: What should I change?", "Findings of the earlier parts:\n- Slept 4h30 on Friday"},
		},
		"analyzer": {
			{"Judge part 1 of 2 now: Why was I tired last week?"},
			{"Judge part 2 of 2 now: What should I change?", "- Slept 4h30 on Friday"},
		},
		"synthesizer": {
			{"1. Why was I tired last week?\n2. What should I change?", "- Slept 4h30 on Friday", "- The short night followed a late deploy"},
		},
	} {
		if len(byRole[role]) != len(want) {
			t.Errorf("%d %s calls, want %d", len(byRole[role]), role, len(want))
			continue
		}
		for i, parts := range want {
			for _, p := range parts {
				if !strings.Contains(byRole[role][i], p) {
					t.Errorf("%s call %d lacks %q:\n%s", role, i+1, p, byRole[role][i])
				}
			}
		}
	}
}

// TestIndependentPartsAreOnePass: parts that do not build on each other
// are retrieved together and answered in one pass.
func TestIndependentPartsAreOnePass(t *testing.T) {
	sc := scenario(t, "multi-part")
	sc.Replies["planner"] = []any{querytest.PlanParts("insight", "independent", []string{"How did I sleep last week?", "How was my bench?"},
		querytest.Instr("sleep", "2026-11-09", "2026-11-15", "slept"), querytest.Instr("bench", "2026-11-09", "2026-11-15", "bench"))}
	sc.Replies["analyzer"] = sc.Replies["analyzer"][1:]
	r, _, m := askScenario(t, sc)
	if got, want := states(r), "BUILD_CONTEXT PLAN RETRIEVE ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE"; got != want {
		t.Errorf("path =\n  %s\nwant\n  %s", got, want)
	}
	if calls := m.Calls(); calls["planner"] != 1 || calls["analyzer"] != 1 {
		t.Errorf("calls %v, want one plan and one analysis", calls)
	}
}

// TestLaterPartCoveredByEarlierRetrievalIsStillJudged: when the planner
// finds the entries already retrieved enough for the next part, that part
// is analysed without another retrieval before the answer is written.
func TestLaterPartCoveredByEarlierRetrievalIsStillJudged(t *testing.T) {
	sc := scenario(t, "multi-part")
	enough := querytest.Plan("recommendation")
	enough["next_action"] = "synthesize"
	sc.Replies["planner"] = []any{sc.Replies["planner"][0], enough}
	r, _, m := askScenario(t, sc)
	if got, want := states(r), "BUILD_CONTEXT PLAN RETRIEVE ANALYZE PLAN ANALYZE SYNTHESIZE EVALUATE OBSERVE COMPLETE"; got != want {
		t.Errorf("path =\n  %s\nwant\n  %s", got, want)
	}
	if calls := m.Calls(); calls["analyzer"] != 2 {
		t.Errorf("calls %v, want an analysis of each part", calls)
	}
}

// TestPlanWithoutInstructionsSearchesTheQuestion: a plan that retrieves
// nothing itself is carried out by searching the question's own words
// together, and the analyzer reads what they found.
func TestPlanWithoutInstructionsSearchesTheQuestion(t *testing.T) {
	v := querytest.SampleVault(t)
	fake, _, client := fakeModel(t, querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.Plan("simple")},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("the program is 5x5", "[[Reference/Training program]]")}, nil)},
		"synthesizer": {querytest.Draft("A 5x5 program, see [[Reference/Training program]].", "high")},
		"evaluator":   {querytest.Eval(true)},
	})
	r, err := engine(t, v, client, querytest.Now).Ask(context.Background(), "What is my training program?", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Transitions, func(tr query.Transition) bool { return strings.Contains(tr.Why, "searching the question's words") }) {
		t.Errorf("transitions %+v: want the question's words searched", r.Transitions)
	}
	var given string
	for _, req := range fake.Requests() {
		if querytest.RoleOf(req) == "analyzer" {
			given = querytest.User(req)
		}
	}
	if !strings.Contains(given, "Reference/Training program") {
		t.Errorf("the analyzer was given no Reference/Training program:\n%s", given)
	}
}
