package task

import (
	"context"
	"errors"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// One margin process per vault runs the agents (SPEC §7): two editors on
// one vault (VS Code and Obsidian, say) would otherwise wake every agent
// twice and pay the model twice. The process that holds the agents lock in
// the state dir runs the wakes, the change sets' files and the templates;
// any other follows: it answers its client from the shared state, routes
// no change and runs no wake. Agents it creates or resumes are the
// leader's to wake (watchOthers), and when the leader stops, a follower
// takes the lock within a poll and starts as margin does.

// AgentsLock is the lock's file in the vault's state dir.
const AgentsLock = "agents.lock"

// lead waits until this process holds the agents lock, or ctx is done. A
// state dir whose file system has no locks leads without one.
func (r *Runtime) lead(ctx context.Context) (*store.Lock, error) {
	for {
		l, err := r.v.Lock()
		switch {
		case err == nil:
			if r.following.Swap(false) {
				r.log.Info("the margin process that ran the agents stopped; this one runs them now")
			}
			return l, nil
		case !errors.Is(err, store.ErrLocked):
			r.log.Warn("running the agents without the lock that keeps other margin processes from running them too", "err", err)
			r.following.Store(false)
			return nil, nil
		}
		if !r.following.Swap(true) {
			r.log.Info("another margin process runs the agents of this vault; this one takes over when it stops")
			// Wakes asked for before this process knew are the leader's
			// too: it sees the agents created or resumed here
			// (watchOthers), and the taking over reconciles anyway.
			r.sched.cancelAll()
		}
		t := time.NewTimer(r.opts.othersPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
