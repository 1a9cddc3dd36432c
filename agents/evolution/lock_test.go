package evolution

import (
	"context"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
)

// A session's lock is dropped when no step of it runs or waits: the map
// of locks does not grow with every session ever started or asked about.
func TestSessionLocksAreDroppedWhenUnused(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	f.model.replies = []llm.Message{{Role: llm.RoleAssistant, Content: "What should change?"}}
	turn, err := f.evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.evo.Reject(ctx, turn.SessionID, "not now"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e00000001", "e00000002", "e00000003"} {
		f.evo.Reject(ctx, id, "no such session") // fails, after taking the lock
	}
	f.evo.mu.Lock()
	n := len(f.evo.sessions)
	f.evo.mu.Unlock()
	if n != 0 {
		t.Errorf("%d session locks kept after every step ended, want 0", n)
	}

	// Two steps of one session still take turns.
	unlock := f.evo.lock("e1")
	second := make(chan func())
	go func() { second <- f.evo.lock("e1") }()
	select {
	case <-second:
		t.Fatal("a second step of the session ran while the first held it")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	(<-second)()
	f.evo.mu.Lock()
	n = len(f.evo.sessions)
	f.evo.mu.Unlock()
	if n != 0 {
		t.Errorf("%d session locks kept after both steps, want 0", n)
	}
}
