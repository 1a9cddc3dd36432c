package task

import (
	"context"
	"fmt"
)

// Resume brings a dormant agent back: active, with a clean failure count.
// It only changes the record; a running runtime's Control("resume") also
// wakes the agent at once, and a runtime that starts wakes every active
// agent. An active agent is returned as it is; a destroyed one is refused
// (agents/create brings it back).
func (s *Store) Resume(ctx context.Context, id string) (Agent, error) {
	a, err := s.Agent(ctx, id)
	if err != nil {
		return a, err
	}
	switch a.Lifecycle {
	case Destroyed:
		return a, fmt.Errorf("resume agent %s: it was destroyed; agents/create brings it back", id)
	case Active:
		return a, nil
	}
	if err := s.resume(ctx, id); err != nil {
		return a, err
	}
	return s.Agent(ctx, id)
}

// TaskDeleted reports whether the agent is dormant because its task note
// is gone: it wakes by itself when the task comes back, and resuming it
// would only see the task missing again.
func (a Agent) TaskDeleted() bool {
	return a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted
}
