package server

import (
	"context"
	"testing"
	"time"

	"github.com/margin-md/margin/server/editortest"
)

// TestCommandsAreOrderedAsTheMethodTheyReach: margin.confirm reaches
// changes/decide, a write, so a read sent after it waits until it has been
// applied, as after changes/decide itself; margin.ask reaches query/ask, a
// read, and holds nothing up.
func TestCommandsAreOrderedAsTheMethodTheyReach(t *testing.T) {
	seen := make(chan uint64, 4)
	methods["test/applied"] = reader(func(s *Server, ctx context.Context, _ *empty) (any, error) {
		s.mu.Lock()
		n := s.applied
		s.mu.Unlock()
		seen <- n
		return n, nil
	})
	t.Cleanup(func() { delete(methods, "test/applied") })

	s := New(Options{})
	s.state = stateRunning // no vault: the commands fail, but in their order
	send, replies := inProcess(t, s)
	wait := func(n int) {
		for range n {
			select {
			case <-replies:
			case <-time.After(editortest.Timeout):
				t.Fatal("no reply")
			}
		}
	}

	send(1, "workspace/executeCommand", map[string]any{"command": "margin.confirm", "arguments": []string{"cs", "i1"}})
	send(2, "test/applied")
	wait(2)
	afterConfirm := <-seen
	if afterConfirm != 1 {
		t.Errorf("a read after margin.confirm saw %d state changes applied, want the confirm's", afterConfirm)
	}
	send(3, "workspace/executeCommand", map[string]any{"command": "margin.ask", "arguments": []string{"why?"}})
	send(4, "test/applied")
	wait(2)
	if n := <-seen; n != afterConfirm {
		t.Errorf("margin.ask was ordered as a write: %d state changes applied, then %d", afterConfirm, n)
	}
}

// TestEveryCommandReachesAMethod: each command margin announces names the
// method it is ordered as, and that method exists.
func TestEveryCommandReachesAMethod(t *testing.T) {
	for _, c := range editorCommands {
		if _, ok := methods[commandMethods[c]]; !ok {
			t.Errorf("%s reaches %q, not a method", c, commandMethods[c])
		}
	}
	if len(commandMethods) != len(editorCommands) {
		t.Errorf("%d commands have a method, %d are announced", len(commandMethods), len(editorCommands))
	}
}
