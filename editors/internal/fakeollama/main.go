// Command fakeollama is the model of the editor plugins' tests: llmtest's
// fake Ollama server, scripted so that the first task wake proposes a change
// set and every later call only writes a report. It prints its URL on the
// first line of stdout and serves until stdin closes, so a test that starts
// it cannot leave it running.
package main

import (
	"fmt"
	"io"
	"log"
	"os"
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
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA and docs left.", "content": "## Left\n- QA\n"}}
		mu.Lock()
		first := !proposed
		proposed = true
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
