package task

import (
	"context"
	"errors"
	"sync"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// kick asks for a wake of the agent. It is in the agent's queue when kick
// returns, so what the caller does next (a pause, a wake ending) is
// ordered after it. While another process runs the agents, the wake is
// that process's to run: an agent created or resumed here it finds in the
// state database (watchOthers).
func (r *Runtime) kick(k kick) error {
	if r.following.Load() {
		return nil
	}
	if !r.sched.schedule(k) {
		return errors.New("the agents are not running")
	}
	if r.following.Load() {
		r.sched.cancel(k.agent) // lead began to follow meanwhile, and cleared the rest
	}
	return nil
}

// WakeState is what the runtime knows of an agent beyond its record.
type WakeState struct {
	Queued  bool `json:"queued"`
	Running bool `json:"running"`
	// Skipped counts wakes since margin started that were not run because
	// their run key had completed (no-op saves, reverted edits), or had
	// written the offline report while there is no model to call.
	Skipped int `json:"skipped"`
}

// WakeState returns the agent's queue state.
func (r *Runtime) WakeState(id string) WakeState {
	var ws WakeState
	ws.Queued, ws.Running = r.sched.state(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	ws.Skipped = r.skipped[id]
	return ws
}

// Wake implements changes.Agents: a wake of the agent, coalesced like a
// change. It is in the agent's queue when Wake returns, so that a decision
// is never invisible to vault/status (a client that waits for the agents to
// be idle would otherwise stop waiting before its wake). Once the agents
// have stopped it does nothing: the decision is in the agent's run key,
// which its next startup wake sees.
func (r *Runtime) Wake(ctx context.Context, id, reason string) {
	if r.following.Load() {
		return // the leader's agent sees the decision at its next wake
	}
	k := kick{agent: id, reason: reason, mode: kickCoalesce, prio: askedPriority()}
	if a, err := r.store.Agent(ctx, id); err == nil {
		k.prio = r.askedFor(ctx, a.Task)
	}
	_ = r.kick(k) // an error says only that the agents have stopped
}

// Run wakes agents until ctx is done, then waits for the wakes in flight to
// stop. A wake stopped this way stays "started" and is re-run at the next
// start under the same run key, as after a crash. Its loop only
// schedules: the wakes run on the scheduler's goroutines, and the change
// sets (decisions in their files, expiry) and the template library (hand
// edits) on goroutines of their own, which Run starts and waits for.
func (r *Runtime) Run(ctx context.Context) error {
	var lock *store.Lock
	defer func() {
		// Once Run returns, no wake runs and kick says so. The probe for
		// a model that is away stops first: it wakes agents through
		// kick. The agents lock goes last, once no wake of this process
		// runs.
		r.watch.stop()
		r.sched.stop()
		if lock != nil {
			lock.Unlock()
		}
	}()
	select {
	case <-r.v.Events.Ready():
	case <-ctx.Done():
		return nil
	}
	others, err := r.lookAtOthers(ctx)
	if err != nil {
		r.log.Error("watching for agents other processes create or resume", "err", err)
	} else {
		defer others.conn.Close() // after the wg.Wait below
	}
	if lock, err = r.lead(ctx); err != nil {
		return nil // stopped while another process ran the agents
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if err := r.changes.Restore(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("restoring change set files", "err", err)
	}
	wg.Go(func() { r.changes.Run(ctx) })
	if err := r.reconcile(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("reconciling agents with the vault", "err", err)
	}
	// Before the scheduler begins no wake can run, so every wake sees the
	// seeded templates.
	if err := r.templates.Seed(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("seeding legacy templates", "err", err)
	}
	wg.Go(func() { r.templates.Run(ctx) })
	r.sched.begin(ctx)
	if others != nil {
		wg.Go(func() { r.watchOthers(ctx, others, r.opts.othersPoll) })
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.changed:
			r.mu.Lock()
			batches := r.batches
			r.batches, r.routing = nil, len(batches)
			r.mu.Unlock()
			// Every batch waiting is routed in one pass, in order: a
			// checkout or sync delivers dozens of batches faster than
			// they can be routed one by one, and each pass reads the
			// agents and their readers once.
			var changes []vault.Change
			for _, b := range batches {
				changes = append(changes, b...)
			}
			if err := r.onChanges(ctx, changes); err != nil && ctx.Err() == nil {
				r.log.Error("routing vault changes to agents", "err", err)
			}
			r.mu.Lock()
			r.routing = 0
			r.mu.Unlock()
		}
	}
}
