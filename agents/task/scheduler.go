package task

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// wakeQueue is one agent's pending wake: changes coalesce in it until the
// quiet period passes (or the max wait runs out), and it makes sure only
// one wake of the agent runs at a time.
type wakeQueue struct {
	first, last time.Time // first and last change waiting; zero when nothing waits
	dueAt       time.Time
	reasons     []string
	force       bool
	timer       *time.Timer
	waiting     bool // due, in Runtime.waiting for a slot
	running     bool
	again       bool // something arrived while running: wake again after
}

type kickMode int

const (
	coalesce kickMode = iota // a change: wait for quiet
	now                      // a request or startup: at once
	at                       // a retry: at a given time
)

// ended is a wake that ended; retryAt is set when it failed and is to be retried.
type ended struct {
	agent   string
	retryAt time.Time
}

type kick struct {
	agent  string
	reason string
	mode   kickMode
	at     time.Time
	force  bool
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
	case coalesce:
		if q.first.IsZero() {
			q.first = t
		}
		q.last = t
		due = coalescedDue(q.first, q.last, r.opts.QuietPeriod, r.opts.MaxWait)
	case now:
		due = t
	case at:
		due = k.at
	}
	if !q.dueAt.IsZero() && q.dueAt.Before(due) && k.mode != coalesce {
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
	if r.waking >= r.opts.wakeSlots() {
		if !q.waiting {
			q.waiting = true
			r.waiting = append(r.waiting, id)
		}
		r.mu.Unlock()
		return
	}
	r.waking++
	req := wakeRequest{reason: strings.Join(q.reasons, ", "), force: q.force}
	q.first, q.last, q.dueAt, q.reasons, q.force = time.Time{}, time.Time{}, time.Time{}, nil, false
	q.running = true
	r.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		retryAt, err := r.wake(ctx, id, req)
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
		if r.waking >= r.opts.wakeSlots() || len(r.waiting) == 0 {
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
	r.wakes = append(r.wakes, kick{agent: id, reason: reason, mode: coalesce})
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}
