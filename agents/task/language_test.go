package task

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
)

// The task's language is margin's to keep, not the task note's to carry
// (SPEC §1.3, §4.1): a wake whose model calls set_task_language leaves
// the note byte for byte as it was; the language goes to the agent's
// state and the report, and the next wake names it and offers the tool
// no more, even after the state database lost it (the report keeps it).
func TestSetTaskLanguageLeavesTheTaskNoteAlone(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	p := filepath.Join(c.v.Dir(), chaosTask)
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("set_task_language", map[string]any{"language": "de"})}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	if run := c.wake(t); run.Status != RunCompleted {
		t.Fatalf("wake %s (%s)", run.Status, run.Detail)
	}
	if got, _ := os.ReadFile(p); string(got) != string(before) {
		t.Errorf("set_task_language changed the task note:\n%s", got)
	}
	ctx := context.Background()
	a, err := c.rt.store.Agent(ctx, c.id)
	if err != nil || a.Language != "de" {
		t.Errorf("agent language %q (%v), want de kept in the state", a.Language, err)
	}
	r, err := c.report(t)
	if err != nil || r.Language != "de" {
		t.Errorf("report language %q (%v), want de", r.Language, err)
	}

	nextWake := func(name string) {
		t.Helper()
		from := len(c.fake.Requests())
		if run := c.wake(t); run.Status != RunCompleted {
			t.Fatalf("%s: wake %s (%s)", name, run.Status, run.Detail)
		}
		req := c.fake.Requests()[from]
		tools, _ := toolsAndSystem(t, req)
		if slices.Contains(toolNames(t, tools), "set_task_language") {
			t.Errorf("%s: set_task_language offered on a task whose language is known", name)
		}
		if user := req.Messages[len(req.Messages)-1].Content; !strings.Contains(user, "Language of the task's notes (found on an earlier wake): de.") {
			t.Errorf("%s: the prompt does not name the language:\n%s", name, user)
		}
		if r, err := c.report(t); err != nil || r.Language != "de" {
			t.Errorf("%s: report language %q (%v), want de", name, r.Language, err)
		}
	}
	nextWake("state kept")
	// A state database rebuilt from scratch knows no language: the report's holds.
	if err := c.rt.store.setLanguage(ctx, c.id, ""); err != nil {
		t.Fatal(err)
	}
	nextWake("state lost")
	if got, _ := os.ReadFile(p); string(got) != string(before) {
		t.Errorf("a later wake changed the task note:\n%s", got)
	}
}
