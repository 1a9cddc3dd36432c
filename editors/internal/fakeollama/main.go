// Command fakeollama is the model of the editor plugins' tests: llmtest's
// fake Ollama server, scripted so that the first wake of the agent of
// Tasks/Ship invoice export.md proposes a change set (its estimate, 2h) and
// every other call only writes a report. It prints its URL on the
// first line of stdout and serves until stdin closes, so a test that starts
// it cannot leave it running.
package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
)

// Model is margin's default model for task agents (llm.tiers.medium). The
// query flow's router (tier low) is left unpulled, so margin.ask answers
// degraded, from the search index, without a script for every stage.
const model = "qwen2.5:7b"

// program lets llmtest's fake, written for tests, run in a program: it
// cleans up on exit and a broken expectation ends the program.
type program struct{ testing.TB }

func (program) Helper()                        {}
func (program) Cleanup(func())                 {}
func (program) Errorf(format string, a ...any) { log.Fatalf(format, a...) }

func main() {
	fake := llmtest.NewOllama(program{}, model)
	var mu sync.Mutex
	proposed := false
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA and docs left.", "content": "## Left\n- QA\n"}}
		mu.Lock()
		first := !proposed && forTask(r, "Tasks/Ship invoice export.md")
		proposed = proposed || first
		mu.Unlock()
		if !first {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h", "human_summary": "Set estimate to 2h"}},
			report,
		}}
	})
	fmt.Println(fake.URL)
	io.Copy(io.Discard, os.Stdin)
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
