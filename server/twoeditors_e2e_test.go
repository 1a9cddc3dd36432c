package server_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/store"
)

// Two editors open on one vault (VS Code and Obsidian) start two margin
// processes; one set of wakes runs (SPEC §7). An agent created through the
// second is woken by the first, whose model answers; the second's model is
// never called. Once the first exits, the second runs the agents.
func TestTwoEditorsOneVaultOneSetOfWakes(t *testing.T) {
	dir := editortest.SampleVault(t)
	first, second := llmtest.NewOllama(t, taskModel), llmtest.NewOllama(t, taskModel)
	reportingModel(first)
	reportingModel(second)
	e1 := editortest.Start(t, agentEnv(first.URL))
	e1.Initialize(dir)
	poll(t, "the first margin to take the agents lock", func() bool {
		l, err := store.TryLock(filepath.Join(dir, ".margin", "agents.lock"))
		if err == nil {
			l.Unlock()
		}
		return errors.Is(err, store.ErrLocked)
	})
	e2 := editortest.Start(t, agentEnv(second.URL))
	e2.Initialize(dir)

	a := createAgent(t, e2, shipTask)
	waitWakes(t, e2, a.ID, 1)
	if n := len(second.Requests()); n != 0 {
		t.Errorf("the second margin called its model %d times; the first runs the agents", n)
	}
	if len(first.Requests()) == 0 {
		t.Error("the agent's wake called no model")
	}

	e1.MustCall("shutdown", nil, nil)
	e1.Notify("exit", nil)
	if code := e1.Exit(); code != 0 {
		t.Fatalf("the first margin exited %d", code)
	}
	task := filepath.Join(dir, shipTask)
	b, err := os.ReadFile(task)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(task, append(b, "\n- [ ] Tell Acme the flag is on\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitWakes(t, e2, a.ID, 2)
	if len(second.Requests()) == 0 {
		t.Error("after the first margin exited, the second never woke the agent")
	}
}
