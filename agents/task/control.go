package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

// Create makes an agent for the task note at path (vault-relative), or
// returns the one it has; a destroyed agent comes back to life. The agent
// wakes at once.
func (r *Runtime) Create(ctx context.Context, taskPath string) (Agent, error) {
	m, err := r.v.Index.Note(ctx, taskPath)
	if err != nil {
		return Agent{}, fmt.Errorf("creating an agent for %s: %w", taskPath, vault.ErrNotFound)
	}
	if m.Kind != note.KindTask {
		return Agent{}, fmt.Errorf("creating an agent for %s: %w", taskPath, ErrNotATask)
	}
	a, err := r.store.AgentForTask(ctx, taskPath)
	// A wake queued, running or begun since Create looked the agent up
	// is its first wake: the startup wake of an agent created as margin
	// starts may begin, and even end, before the kick below, which joins
	// it (the scheduler decides under its lock). A wake behind it would
	// find nothing new, and under a spent budget would wait for the next
	// day. Every wake of a new agent began after it was asked for.
	began := 0
	switch {
	case errors.Is(err, ErrNotFound):
		a, err = r.store.createAgent(ctx, taskPath, m.Stat.Hash, r.now())
	case err == nil:
		began = r.sched.began(a.ID)
		if a.Lifecycle == Destroyed {
			err = r.store.resume(ctx, a.ID)
		}
	}
	if err != nil {
		return Agent{}, err
	}
	k := kick{agent: a.ID, reason: "created", mode: kickNow, prio: r.askedFor(ctx, a.Task), join: true, began: began}
	if err := r.kick(k); err != nil {
		return Agent{}, err
	}
	return r.store.Agent(ctx, a.ID)
}

// ErrNotATask refuses an agent for a note that is not a task.
var ErrNotATask = errors.New("not a task note")

// ErrBadAction refuses an unknown control action.
var ErrBadAction = errors.New("unknown action")

// Control pauses, resumes, destroys or wakes an agent.
func (r *Runtime) Control(ctx context.Context, id, action string) (Agent, error) {
	a, err := r.store.Agent(ctx, id)
	if err != nil {
		return a, err
	}
	if a.Lifecycle == Destroyed && action != "destroy" {
		return a, fmt.Errorf("%s agent %s: it was destroyed; agents/create brings it back", action, id)
	}
	switch action {
	case "pause":
		err = r.store.setLifecycle(ctx, id, Dormant, reasonPaused)
		r.sched.cancel(id)
	case "resume":
		if err = r.store.resume(ctx, id); err == nil {
			err = r.kick(kick{agent: id, reason: "resumed", mode: kickNow, prio: r.askedFor(ctx, a.Task)})
		}
	case "destroy":
		err = r.store.setLifecycle(ctx, id, Destroyed, "")
		r.sched.cancel(id)
	case "wake":
		err = r.kick(kick{agent: id, reason: "requested", mode: kickNow, force: true, prio: r.askedFor(ctx, a.Task)})
	default:
		return a, fmt.Errorf("%w %q: want pause, resume, destroy or wake", ErrBadAction, action)
	}
	if err != nil {
		return a, err
	}
	if action != "wake" {
		r.sendStatus(ctx, id)
	}
	return r.store.Agent(ctx, id)
}

// AgentOf implements changes.Agents: the agent of a task.
func (r *Runtime) AgentOf(ctx context.Context, taskPath string) (string, error) {
	return r.store.AgentOf(ctx, taskPath)
}

// RunCause implements changes.Agents: the template version and model a run ran.
func (r *Runtime) RunCause(ctx context.Context, run int64) (template, model string, err error) {
	return r.store.RunCause(ctx, run)
}

// Owner implements changes.Agents: the agent's task and output name.
func (r *Runtime) Owner(ctx context.Context, id string) (changes.Owner, error) {
	return r.store.Owner(ctx, id)
}
