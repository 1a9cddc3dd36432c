package task

import (
	"context"
	"time"
)

// AgentStatus is what margin/agentStatus tells the client.
type AgentStatus struct {
	ID        string    `json:"id"`
	Task      string    `json:"task"`
	Lifecycle Lifecycle `json:"lifecycle"`
	Failures  int       `json:"failures"`
	NextWake  time.Time `json:"nextWake"`
	Reason    string    `json:"reason,omitempty"`
}

func (r *Runtime) sendStatus(ctx context.Context, id string) {
	a, err := r.store.Agent(ctx, id)
	if err != nil {
		r.log.Warn("reading agent status", "agent", id, "err", err)
		return
	}
	r.notify("margin/agentStatus", AgentStatus{ID: a.ID, Task: a.Task, Lifecycle: a.Lifecycle, Failures: a.Failures, NextWake: a.NextWake, Reason: a.DormantReason})
}

// taskGone makes an agent whose task note is gone dormant (SPEC §4.1: not
// destroyed; it wakes again if the task comes back or turns up renamed).
func (r *Runtime) taskGone(ctx context.Context, a Agent) error {
	if a.Lifecycle != Active {
		return nil
	}
	if err := r.store.setLifecycle(ctx, a.ID, Dormant, reasonTaskDeleted); err != nil {
		return err
	}
	r.sendStatus(ctx, a.ID)
	return nil
}

const (
	reasonTaskDeleted = "task deleted"
	reasonPaused      = "paused"
)
