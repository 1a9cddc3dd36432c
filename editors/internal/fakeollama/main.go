// Command fakeollama is the model of the editor plugins' tests: llmtest's
// fake Ollama server, scripted so that the first wake of the agent of
// Tasks/Ship invoice export.md proposes a change set (its estimate, 2h),
// the first wake of the agent of Tasks/Renew passport.md proposes the set
// a diff review goes through (its status, its due date and a checklist
// item: one to apply, one to make stale by hand, one to reject), every
// other wake only writes a report, and the question Clarified first
// gets clarifying questions with the reason it asks, then a cited answer
// once they are answered, or a partial answer naming its gaps when they are
// declined. With -embed it has the embedding model too (its vectors by
// llmtest.Meanings), so the vault is embedded and notes have related
// notes. It prints its URL on the first line of stdout and serves until
// stdin closes, so a test that starts it cannot leave it running.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
)

// The models of config.yaml's llm.tiers: the task agents use medium, the
// query flow all three.
var models = []string{"qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b"}

// Clarified is the question the query flow answers only after asking the
// person two things, one with options and one without, so a plugin's
// reply path meets both kinds of prompt.
const Clarified = "Was stress behind Friday's heavy bench?"

// heavyBench is the entry the answer to Clarified cites.
const heavyBench = "[[Daily/2026-11-13#18:15]]"

// clarifiedScript is the query flow for Clarified: the first analysis is
// insufficient, so the planner asks; after the reply the analysis suffices
// and the answer cites the entry retrieved before the questions. A declined
// reply gives a partial answer whose gaps are the questions' gap_addressed,
// so those are written as a person should read them.
func clarifiedScript() querytest.Replies {
	bench := querytest.Instr("the heavy session", "2026-11-09", "2026-11-15", "bench")
	found := querytest.Finding("Bench felt heavy on Friday at 185", heavyBench)
	return querytest.Replies{
		"router": {querytest.Route("query", "Strength training")},
		"planner": {
			querytest.Plan("insight", bench),
			querytest.PlanClarify("insight", "How stressed were you on Friday?", "What did you eat before the session?"),
		},
		"analyzer": {
			querytest.Analysis(false, []map[string]any{found}, nil, querytest.Gap("stress on Friday", "subjective", true)),
			querytest.Analysis(true, []map[string]any{found, querytest.Finding("Very stressed on Friday, by the user's account")}, nil),
		},
		"clarifier": {map[string]any{
			"context_explanation": "Your notes do not say how Friday felt.",
			"questions": []any{
				map[string]any{"question": "How stressed were you on Friday?", "gap_addressed": "how stressed you were on Friday", "options": []string{"not at all", "somewhat", "very"}},
				map[string]any{"question": "What did you eat before the session?", "gap_addressed": "what you ate before the session", "options": []string{}},
			},
			"fallback_action": "answer from the notes alone",
		}},
		"synthesizer": {querytest.Draft("Yes: you were very stressed, and Friday's bench felt heavy "+heavyBench+".", "medium", heavyBench)},
		"evaluator":   {querytest.Eval(true)},
		"observer":    {map[string]any{"insights_captured": []string{}, "updates": []any{}, "should_update": false}},
	}
}

// program lets llmtest's fake, written for tests, run in a program: it
// cleans up on exit and a broken expectation ends the program.
type program struct{ testing.TB }

func (program) Helper()                        {}
func (program) Cleanup(func())                 {}
func (program) Errorf(format string, a ...any) { log.Fatalf(format, a...) }

func main() {
	embed := flag.Bool("embed", false, "serve the embedding model too")
	flag.Parse()
	pulled := models
	if *embed {
		pulled = append(pulled, "embeddinggemma")
	}
	fake := llmtest.NewOllama(program{}, pulled...)
	queries := querytest.NewModel(clarifiedScript())
	var mu sync.Mutex
	proposed := map[string]bool{} // guarded by mu: the tasks whose agent proposed its set
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		switch role := querytest.RoleOf(r); {
		case role == "router" && !strings.Contains(querytest.User(r), Clarified):
			// Any other question finds the router's model missing, so it is
			// answered degraded, from the search index, without a script.
			return llmtest.Reply{Status: http.StatusNotFound, Error: fmt.Sprintf("model %q not found, try pulling it first", r.Model)}
		case role != "":
			return queries.Reply(r)
		}
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA and docs left.", "content": "## Left\n- QA\n"}}
		mu.Lock()
		defer mu.Unlock()
		for task, calls := range proposals {
			if !proposed[task] && forTask(r, task) {
				proposed[task] = true
				return llmtest.Reply{ToolCalls: append(calls, report)}
			}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report}}
	})
	fmt.Println(fake.URL)
	io.Copy(io.Discard, os.Stdin)
}

// proposals are what the first wake of each task's agent proposes.
var proposals = map[string][]llmtest.ToolCall{
	"Tasks/Ship invoice export.md": {
		{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h", "human_summary": "Set estimate to 2h"}},
	},
	"Tasks/Renew passport.md": {
		{Name: "set_task_status", Args: map[string]any{"status": "in-progress", "human_summary": "the form is in"}},
		{Name: "update_task_due_date", Args: map[string]any{"due_date": "2026-12-10", "human_summary": "leave time for the post"}},
		{Name: "add_multiple_checklist_items", Args: map[string]any{"items": []map[string]string{{"title": "Book the Seoul flights"}}}},
	},
}

// forTask tells whether a request is a wake of the given task's agent: its
// prompt holds the task note, labelled with its path.
func forTask(r llmtest.OllamaRequest, task string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "the task note "+task+"]") {
			return true
		}
	}
	return false
}
