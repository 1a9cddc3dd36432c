package server_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// links are the answer's citations as links.
func links(r protocol.Answer) []string {
	var out []string
	for _, c := range r.Citations {
		out = append(out, c.Link)
	}
	return out
}

// startQuery runs margin serve on dir with the fake model, on the sample
// vault's "today". Task agents are off: their wakes would talk to the same
// fake and muddle what the query agents were given.
func startQuery(t *testing.T, dir string, fake *llmtest.Ollama) *editortest.Editor {
	t.Helper()
	env := []string{"MARGIN_AGENTS_AUTO_CREATE=false", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	if fake != nil {
		env = append(env, "OLLAMA_HOST="+fake.URL)
	} else {
		env = append(env, "OLLAMA_HOST=http://127.0.0.1:1") // nothing listens there
	}
	e := editortest.Start(t, env, "--now", querytest.NowFlag)
	e.Initialize(dir)
	return e
}

func newFake(t *testing.T, replies querytest.Replies) (*llmtest.Ollama, *querytest.Model) {
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	m := querytest.NewModel(replies)
	fake.Handle(m.Reply)
	return fake, m
}

// requestsOf are the prompts (user messages) one agent was given.
func requestsOf(fake *llmtest.Ollama, role string) []string {
	var out []string
	for _, req := range fake.Requests() {
		if querytest.RoleOf(req) == role {
			out = append(out, querytest.User(req))
		}
	}
	return out
}

// TestQueryScenariosOverStdio asks seed 003 §17.C's questions of the
// built binary, one server per scenario, and checks the answers and what
// the agents were given.
func TestQueryScenariosOverStdio(t *testing.T) {
	for _, sc := range querytest.Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			fake, _ := newFake(t, sc.Replies)
			e := startQuery(t, editortest.SampleVault(t), fake)
			var r protocol.Answer
			e.MustCall("query/ask", map[string]any{"text": sc.Input}, &r)
			if string(r.Status) != sc.Status || r.SessionID == "" || r.Type != "query" {
				t.Fatalf("status %s session %q type %s; answer %q", r.Status, r.SessionID, r.Type, r.Answer)
			}
			for _, c := range sc.Cite {
				if !slices.Contains(links(r), c) {
					t.Errorf("citations %v lack %s", links(r), c)
				}
			}
			for _, c := range r.Citations {
				if c.Path == "" || c.Line == 0 {
					t.Errorf("citation %+v does not point at a line of a note", c)
				}
			}
			if sc.Invented != "" && strings.Contains(r.Answer, sc.Invented) {
				t.Errorf("invented citation survived: %q", r.Answer)
			}
			if n := len(fake.Requests()); n > sc.MaxCalls {
				t.Errorf("%d model calls, want at most %d", n, sc.MaxCalls)
			}
			switch sc.Name {
			case "simple":
				if a := requestsOf(fake, "analyzer"); len(a) != 1 || !strings.Contains(a[0], "Squat 3x5 @ 275, bench 3x5 @ 190") {
					t.Errorf("analyzer was not given Monday's lifts: %q", a)
				}
			case "insight":
				a := requestsOf(fake, "analyzer")
				if len(a) != 2 || strings.Contains(a[0], "Slept 4h30") || !strings.Contains(a[1], "Slept 4h30") || !strings.Contains(a[1], "protein bar") {
					t.Errorf("the second analysis must see the sleep and food the re-plan retrieved, the first not: %d prompts", len(a))
				}
				var got struct{ Path, Content string }
				e.MustCall("context/get", nil, &got)
				if got.Path != "Margin/Context.md" || !strings.Contains(got.Content, "short_sleep_heavy_bench") {
					t.Errorf("context/get = %+v: want the observer's insight", got)
				}
			case "recommendation":
				if ev := requestsOf(fake, "evaluator"); len(ev) != 2 || !strings.Contains(ev[0], "Go for a personal record") {
					t.Errorf("evaluator prompts %q: want the rejected draft first", ev)
				}
				if p := requestsOf(fake, "planner"); len(p) != 2 || !strings.Contains(p[1], "recommends a max attempt without evidence") {
					t.Errorf("re-plan was not given the evaluator's feedback")
				}
			case "multi-part":
				if !strings.Contains(r.Answer, "avoid late deploys") {
					t.Errorf("answer does not address the second part: %q", r.Answer)
				}
			case "no data":
				if !strings.Contains(r.Answer, "found nothing") || len(r.Citations) != 0 || strings.Contains(r.Answer, "laps on Tuesday") {
					t.Errorf("no-data answer %q with citations %v", r.Answer, r.Citations)
				}
				if len(requestsOf(fake, "synthesizer"))+len(requestsOf(fake, "analyzer")) != 0 {
					t.Errorf("a model was asked to write about data that does not exist")
				}
			}
		})
	}
}

func TestClarificationAcrossRestart(t *testing.T) {
	dir := editortest.SampleVault(t)
	fake, _ := newFake(t, querytest.Replies{
		"router":      {querytest.Route("query", "Strength training")},
		"planner":     {querytest.PlanClarify("insight", "How stressed were you on Friday?")},
		"clarifier":   {querytest.Clarify("How stressed were you on Friday?", "not at all", "somewhat", "very")},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Very stressed on Friday, by the user's account")}, nil)},
		"synthesizer": {querytest.Draft("By your account you were very stressed on Friday.", "medium")},
		"evaluator":   {querytest.Eval(true)},
	})
	first := startQuery(t, dir, fake)
	var asked protocol.Answer
	first.MustCall("query/ask", map[string]any{"text": "Was stress behind Friday's heavy bench?"}, &asked)
	if asked.Status != "needs_clarification" || len(asked.Questions) != 1 || len(asked.Questions[0].Options) != 3 {
		t.Fatalf("ask = %+v", asked)
	}
	first.MustCall("shutdown", nil, nil)
	first.Notify("exit", nil)
	if code := first.Exit(); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	second := startQuery(t, dir, fake)
	var replied protocol.Answer
	second.MustCall("query/reply", map[string]any{"sessionId": asked.SessionID, "answers": map[string]string{asked.Questions[0].ID: "very"}}, &replied)
	if replied.Status != "answered" || replied.SessionID != asked.SessionID {
		t.Errorf("reply = %+v", replied)
	}
	if a := requestsOf(fake, "analyzer"); len(a) != 1 || !strings.Contains(a[0], "A: very") {
		t.Errorf("analyzer was not given the user's answer: %q", a)
	}
	for _, tc := range []struct{ name, id string }{{"unknown", "0123456789abcdef"}, {"answered already", asked.SessionID}} {
		err := second.Call("query/reply", map[string]any{"sessionId": tc.id, "answers": map[string]string{"q1": "very"}}, nil)
		if err == nil || err.Code != -33000 || !strings.Contains(err.Message, "session") {
			t.Errorf("%s session: %v, want -33000 naming the session", tc.name, err)
		}
	}
}

func TestBothInputLogsAndAnswers(t *testing.T) {
	dir := editortest.SampleVault(t)
	fake, _ := newFake(t, querytest.Replies{
		"router":      {querytest.RouteBoth("Slept 5 hours again.", "Why am I always tired?", "Work")},
		"parser":      {querytest.Parse("General", map[string]any{"sleep_hours": 5}, false)},
		"planner":     {querytest.Plan("insight", querytest.Instr("sleep", "2026-11-09", "2026-11-22", "slept"))},
		"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("Short nights", "[[Daily/2026-11-13#07:15]]", "[[Daily/2026-11-22#09:00]]")}, nil)},
		"synthesizer": {querytest.Draft("Short nights again: 5 hours today [[Daily/2026-11-22#09:00]] and 4h30 on the 13th [[Daily/2026-11-13#07:15]].", "medium")},
		"evaluator":   {querytest.Eval(true)},
	})
	e := startQuery(t, dir, fake)
	var r protocol.Answer
	e.MustCall("query/ask", map[string]any{"text": "Slept 5 hours again. Why am I always tired?"}, &r)
	if r.Type != "both" || r.Status != "answered" || r.Logged == nil || r.Logged.Path != "Daily/2026-11-22.md" {
		t.Fatalf("result %+v", r)
	}
	if !slices.Contains(links(r), "[[Daily/2026-11-22#09:00]]") || !slices.Contains(links(r), "[[Daily/2026-11-13#07:15]]") {
		t.Errorf("citations %v: want the new entry and the old one", links(r))
	}
	b, err := os.ReadFile(filepath.Join(dir, "Daily/2026-11-22.md"))
	if err != nil || !strings.Contains(string(b), "# Sunday, November 22") || !strings.HasSuffix(string(b), "## 09:00\nSleep: \n\nSlept 5 hours again.\n") {
		t.Errorf("daily note = %q (%v)", b, err)
	}
}

func TestLogAppendWritesTheDailyNote(t *testing.T) {
	dir := editortest.SampleVault(t)
	fake, m := newFake(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{"exercises": []any{map[string]any{"name": "overhead press", "weight_lbs": 115, "sets": 3, "reps": 5}}}, false)},
	})
	e := startQuery(t, dir, fake)
	var r struct {
		Type, Path, Heading string
		Parsed              map[string]any
		Uncertain           []string
		Corrects            string
	}
	e.MustCall("log/append", map[string]any{"text": "OHP 3x5 @ 115, easy.", "time": "2026-11-21T18:30"}, &r)
	if r.Type != "log" || r.Path != "Daily/2026-11-21.md" || r.Heading != "18:30" || r.Parsed["Strength training"] == nil {
		t.Fatalf("log/append = %+v", r)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "Daily/2026-11-21.md"))
	if !strings.HasSuffix(string(b), "Mood good.\n\n## 18:30\nOHP 3x5 @ 115, easy.\n") {
		t.Errorf("entry not appended at the end of the existing note:\n%s", b)
	}
	if p := requestsOf(fake, "parser"); len(p) != 1 || !strings.Contains(p[0], `"weight_lbs"`) || !strings.Contains(p[0], "OHP 3x5 @ 115") {
		t.Errorf("parser was not given the domain's log_schema and the text: %q", p)
	}

	m.Set(querytest.Replies{
		"router": {querytest.RouteCorrection("yesterday's bench weight", "Strength training")},
		"parser": {querytest.ParseCorrection("[[Daily/2026-11-20#07:20]]", "Strength training",
			map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 190, "sets": 5, "reps": 3}}})},
		"observer": {querytest.Observe("fact", "bench_top_triple", "190 lbs 5x3", "certain")},
	})
	e.MustCall("log/append", map[string]any{"text": "Actually yesterday's bench was 5x3 @ 190, not 195. Misread the plates.", "time": "2026-11-21T19:00"}, &r)
	if r.Type != "correction" || r.Heading != "19:00 [correction]" || r.Corrects != "[[Daily/2026-11-20#07:20]]" {
		t.Errorf("correction = %+v", r)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "Daily/2026-11-21.md"))
	if !strings.HasSuffix(string(b), "## 19:00 [correction]\nActually yesterday's bench was 5x3 @ 190, not 195. Misread the plates.\n") {
		t.Errorf("correction not appended:\n%s", b)
	}
	if orig, _ := os.ReadFile(filepath.Join(dir, "Daily/2026-11-20.md")); !strings.Contains(string(orig), "Bench 5x3 @ 195") {
		t.Errorf("the corrected entry was rewritten; corrections must be appended")
	}
}

func TestOfflineQueryAndLog(t *testing.T) {
	dir := editortest.SampleVault(t)
	e := startQuery(t, dir, nil)
	var r protocol.Answer
	e.MustCall("query/ask", map[string]any{"text": "bench press felt heavy", "workDoneToken": "q1"}, &r)
	if r.Status != "degraded" || !strings.Contains(r.Answer, "no model was reachable") || !slices.Contains(links(r), "[[Daily/2026-11-13#18:15]]") {
		t.Errorf("offline ask = %+v", r)
	}
	e.WaitFor("$/progress naming a stage", func(m editortest.Message) bool {
		return m.Method == "$/progress" && strings.Contains(string(m.Params), "searching without a model")
	})
	var l struct{ Type, Path, Heading, Note string }
	e.MustCall("log/append", map[string]any{"text": "Walked 5k in the rain.", "time": "2026-11-22T10:15"}, &l)
	if l.Path != "Daily/2026-11-22.md" || l.Heading != "10:15" || !strings.Contains(l.Note, "unparsed") {
		t.Errorf("offline log = %+v", l)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "Daily/2026-11-22.md"))
	if !strings.HasSuffix(string(b), "## 10:15\nSleep: \n\nWalked 5k in the rain.\n") {
		t.Errorf("raw text not appended offline:\n%s", b)
	}
	for _, tc := range []struct {
		method string
		params any
	}{
		{"query/ask", map[string]any{"text": ""}},
		{"log/append", map[string]any{"text": "x", "time": "yesterday"}},
		{"query/reply", map[string]any{}},
	} {
		if err := e.Call(tc.method, tc.params, nil); err == nil || err.Code != -32602 {
			t.Errorf("%s %v: %v, want -32602", tc.method, tc.params, err)
		}
	}
}
