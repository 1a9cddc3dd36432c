package task

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// schedule adds a wake request to the agent's queue and sets its timer. It
// runs on Run's goroutine.
func (r *Runtime) schedule(k kick) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[k.agent]
	if q == nil {
		q = &wakeQueue{}
		r.queues[k.agent] = q
	}
	t := r.now()
	var due time.Time
	switch k.mode {
	case kickCoalesce:
		if q.first.IsZero() {
			q.first = t
		}
		q.last = t
		due = coalescedDue(q.first, q.last, r.opts.QuietPeriod, r.opts.MaxWait)
	case kickNow:
		due = t
	case kickAt:
		due = k.at
	}
	if !q.dueAt.IsZero() && q.dueAt.Before(due) && k.mode != kickCoalesce {
		due = q.dueAt // an earlier wake already waits; this request joins it
	}
	q.dueAt = due
	if !contains(q.reasons, k.reason) {
		q.reasons = append(q.reasons, k.reason)
	}
	q.force = q.force || k.force
	if q.timer != nil {
		q.timer.Stop()
	}
	id := k.agent
	q.timer = time.AfterFunc(max(due.Sub(t), 0), func() {
		select {
		case r.due <- id:
		case <-r.done:
		}
	})
}

// coalescedDue is when a coalesced wake fires: once changes have been quiet
// for the quiet period, but no later than max wait after the first one, so
// a steady stream of saves cannot starve the agent.
func coalescedDue(first, last time.Time, quiet, maxWait time.Duration) time.Time {
	due := last.Add(quiet)
	if limit := first.Add(maxWait); limit.Before(due) {
		return limit
	}
	return due
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// start begins the agent's due wake unless one is running; then it wakes
// again when that one ends.
func (r *Runtime) start(ctx context.Context, wg *sync.WaitGroup, id string) {
	r.mu.Lock()
	q := r.queues[id]
	if q == nil || q.dueAt.IsZero() {
		r.mu.Unlock()
		return
	}
	if q.running {
		q.again = true
		r.mu.Unlock()
		return
	}
	if r.inFlight >= r.opts.wakeSlots() {
		if !q.waiting {
			q.waiting = true
			r.waiting = append(r.waiting, id)
		}
		r.mu.Unlock()
		return
	}
	r.inFlight++
	req := wakeRequest{reason: strings.Join(q.reasons, ", "), force: q.force}
	q.first, q.last, q.dueAt, q.reasons, q.force = time.Time{}, time.Time{}, time.Time{}, nil, false
	q.running = true
	r.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		retryAt, err := r.runWake(ctx, id, req)
		if err != nil && ctx.Err() == nil {
			r.log.Error("wake failed", "agent", id, "err", err)
		}
		select {
		case r.finished <- ended{agent: id, retryAt: retryAt}:
		case <-ctx.Done():
		}
	}()
}

// startWaiting starts the wakes waiting for a slot, oldest first, while
// slots are free. It runs on Run's goroutine.
func (r *Runtime) startWaiting(ctx context.Context, wg *sync.WaitGroup) {
	for {
		r.mu.Lock()
		if r.inFlight >= r.opts.wakeSlots() || len(r.waiting) == 0 {
			r.mu.Unlock()
			return
		}
		id := r.waiting[0]
		r.waiting = r.waiting[1:]
		q := r.queues[id]
		q.waiting = false
		// A change since it queued put its wake off (quiet period): its
		// timer starts it then.
		later := q.dueAt.After(r.now())
		r.mu.Unlock()
		if !later {
			r.start(ctx, wg, id)
		}
	}
}

// kick asks for a wake of the agent through Run's goroutine.
func (r *Runtime) kick(ctx context.Context, k kick) error {
	select {
	case r.kicks <- k:
		return nil
	case <-r.done:
		return errors.New("the agents are not running")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Runtime) cancelPending(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.queues[id]; q != nil && q.timer != nil {
		q.timer.Stop()
		q.first, q.last, q.dueAt, q.reasons, q.force = time.Time{}, time.Time{}, time.Time{}, nil, false
	}
}

// WakeState is what the runtime knows of an agent beyond its record.
type WakeState struct {
	Queued  bool `json:"queued"`
	Running bool `json:"running"`
	// Skipped counts wakes since margin started that were not run because
	// their run key had completed (no-op saves, reverted edits).
	Skipped int `json:"skipped"`
}

// WakeState returns the agent's queue state.
func (r *Runtime) WakeState(id string) WakeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := WakeState{Skipped: r.skipped[id]}
	if q := r.queues[id]; q != nil {
		ws.Queued, ws.Running = !q.dueAt.IsZero(), q.running
	}
	return ws
}

// Wake implements changes.Agents: a wake of the agent, coalesced like a
// change. It never blocks: Run schedules it, and a decision made before
// Run starts is in the agent's run key, which its startup wake sees.
func (r *Runtime) Wake(id, reason string) {
	r.mu.Lock()
	r.wakes = append(r.wakes, kick{agent: id, reason: reason, mode: kickCoalesce})
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Run wakes agents until ctx is done, then waits for the wakes in flight to
// stop. A wake stopped this way stays "started" and is re-run at the next
// start under the same run key, as after a crash. Its loop only
// schedules: the change sets (decisions in their files, expiry) and the
// template library (hand edits) run on goroutines of their own, which Run
// starts and waits for.
func (r *Runtime) Run(ctx context.Context) error {
	defer close(r.done)
	select {
	case <-r.v.Ready():
	case <-ctx.Done():
		return nil
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if err := r.changes.Restore(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("restoring change set files", "err", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.changes.Run(ctx)
	}()
	if err := r.reconcile(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("reconciling agents with the vault", "err", err)
	}
	// Before the loop starts no wake can run, so every wake sees the
	// seeded templates.
	if err := r.templates.Seed(ctx); err != nil && ctx.Err() == nil {
		r.log.Error("seeding legacy templates", "err", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.templates.Run(ctx)
	}()
	for {
		select {
		case <-ctx.Done():
			r.stopTimers()
			return nil
		case k := <-r.kicks:
			r.schedule(k)
		case <-r.changed:
			r.mu.Lock()
			batches, wakes := r.batches, r.wakes
			r.batches, r.wakes = nil, nil
			r.mu.Unlock()
			for _, b := range batches {
				if err := r.onChanges(ctx, b); err != nil && ctx.Err() == nil {
					r.log.Error("routing vault changes to agents", "err", err)
				}
			}
			for _, k := range wakes {
				r.schedule(k)
			}
		case id := <-r.due:
			r.start(ctx, &wg, id)
		case e := <-r.finished:
			r.mu.Lock()
			q := r.queues[e.agent]
			q.running = false
			again := q.again
			q.again = false
			if !e.retryAt.IsZero() && !q.force {
				// What is asked for when a wake fails (during it, or due but
				// not yet started) waits for the retry, which sees it: waking
				// at once would skip the backoff that spares a failing model.
				// A person's "wake" does not wait.
				q.first, q.last, q.dueAt = time.Time{}, time.Time{}, time.Time{}
				if q.timer != nil {
					q.timer.Stop()
				}
				again = false
			}
			r.inFlight--
			r.mu.Unlock()
			r.startWaiting(ctx, &wg)
			if !e.retryAt.IsZero() {
				r.schedule(kick{agent: e.agent, reason: "retry after a failed wake", mode: kickAt, at: e.retryAt})
			}
			if again {
				r.schedule(kick{agent: e.agent, reason: "changes during the last wake", mode: kickNow})
			}
		}
	}
}

func (r *Runtime) stopTimers() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.queues {
		if q.timer != nil {
			q.timer.Stop()
		}
	}
}
