package task

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// wakeRequest is why a wake runs.
type wakeRequest struct {
	reason string
	// force runs even when the state was processed already (a person
	// asked) and even when the agent is dormant.
	force bool
}

// wakeFunc runs one wake of the agent. retryAt is when to try again after
// a failure; zero for none.
type wakeFunc func(ctx context.Context, id string, req wakeRequest) (retryAt time.Time, err error)

// scheduler decides when each agent wakes: changes coalesce until a quiet
// period passes (or the max wait runs out), a request or a retry is due at
// its time, at most one wake of an agent runs at once, and at most slots
// wakes run together, the rest waiting in line by priority (priority.go),
// and wakes that need the model wait for the next day once the day's
// token budget is spent (budget.go). It knows
// nothing of the vault, the store or the model: it runs each wake through
// the function it was given and reads the clock through Options.Now and
// time.AfterFunc. Timers and ending wakes call back into it, so it is safe
// for concurrent use.
type scheduler struct {
	wake    wakeFunc
	quiet   time.Duration
	maxWait time.Duration
	slots   int
	now     func() time.Time
	log     *slog.Logger
	budget  *tokenBudget
	running sync.WaitGroup // the wakes' goroutines

	mu       sync.Mutex // guards the fields below
	ctx      context.Context
	begun    bool // wakes may start; before, due ones wait in line
	stopped  bool
	queues   map[string]*wakeQueue
	inFlight int         // wakes running, at most slots
	waiting  []string    // agents whose wake is due, waiting for a slot, in order of arrival
	dayTimer *time.Timer // frees the wakes a spent budget holds, at midnight
}

// wakeQueue is one agent's pending wake: changes coalesce in it until the
// quiet period passes (or the max wait runs out), and it makes sure only
// one wake of the agent runs at a time.
type wakeQueue struct {
	first, last time.Time // first and last change waiting; zero when nothing waits
	dueAt       time.Time
	reasons     []string
	force       bool
	prio        wakePriority
	timer       *time.Timer
	timerSeq    int  // which timer is current: a timer stopped too late fires with an older one
	waiting     bool // due, in scheduler.waiting for a slot
	running     bool
	again       bool // something arrived while running: wake again after
	began       int  // wakes begun since margin started
}

type kickMode int

const (
	kickCoalesce kickMode = iota // a change: wait for quiet
	kickNow                      // a request or startup: at once
	kickAt                       // a retry: at a given time
)

type kick struct {
	agent  string
	reason string
	mode   kickMode
	at     time.Time
	force  bool
	prio   wakePriority
	// join drops the request when a wake of the agent is queued or
	// running, or one began after its began-th: that wake sees what this
	// one would, and a wake behind it would find nothing new (and wait
	// for the next day under a spent budget).
	join  bool
	began int
}

// newScheduler makes a scheduler that runs wakes through wake, timed by
// opts (with their defaults set). No wake runs before begin.
func newScheduler(opts Options, wake wakeFunc) *scheduler {
	return &scheduler{
		wake: wake, quiet: opts.QuietPeriod, maxWait: opts.MaxWait, slots: opts.wakeSlots(),
		now: opts.Now, log: opts.Logger, budget: newTokenBudget(opts.DailyTokenBudget),
		queues: map[string]*wakeQueue{},
	}
}

// begin lets wakes run, under ctx, first those that came due before: the
// runtime schedules the startup wakes before its templates are seeded, and
// no wake may run before they are.
func (s *scheduler) begin(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun || s.stopped {
		return
	}
	s.ctx, s.begun = ctx, true
	s.lineUpDue()
	s.startWaiting()
}

// stop cancels every timer, starts no more wakes and waits for the running
// ones, which end when begin's ctx is done.
func (s *scheduler) stop() {
	s.mu.Lock()
	s.stopped = true
	for _, q := range s.queues {
		s.stopTimer(q)
	}
	if s.dayTimer != nil {
		s.dayTimer.Stop()
	}
	s.mu.Unlock()
	s.running.Wait()
}

// schedule adds a wake request to the agent's queue and sets its timer;
// false when the scheduler has stopped.
func (s *scheduler) schedule(k kick) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.scheduleLocked(k)
	return true
}

func (s *scheduler) scheduleLocked(k kick) {
	q := s.queues[k.agent]
	if q == nil {
		q = &wakeQueue{}
		s.queues[k.agent] = q
	}
	if k.join && (!q.dueAt.IsZero() || q.running || q.began > k.began) {
		return
	}
	t := s.now()
	var due time.Time
	switch k.mode {
	case kickCoalesce:
		if q.first.IsZero() {
			q.first = t
		}
		q.last = t
		due = coalescedDue(q.first, q.last, s.quiet, s.maxWait)
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
	q.prio = q.prio.merge(k.prio)
	s.stopTimer(q)
	id, seq := k.agent, q.timerSeq
	q.timer = time.AfterFunc(max(due.Sub(t), 0), func() { s.fire(id, seq) })
}

// stopTimer stops the queue's timer; should it be firing already, it finds
// itself stale.
func (s *scheduler) stopTimer(q *wakeQueue) {
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	q.timerSeq++
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

// fire is the agent's timer going off.
func (s *scheduler) fire(id string, seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[id]; q == nil || q.timerSeq != seq || s.stopped {
		return
	}
	s.startLocked(id)
}

// startLocked begins the agent's due wake unless one is running; then it
// wakes again when that one ends. Without a free slot it waits in line.
func (s *scheduler) startLocked(id string) {
	q := s.queues[id]
	if q == nil || q.dueAt.IsZero() || s.stopped {
		return
	}
	if q.running {
		q.again = true
		return
	}
	if !s.begun || s.inFlight >= s.slots || s.holdForBudget(q) {
		if !q.waiting {
			q.waiting = true
			s.waiting = append(s.waiting, id)
		}
		return
	}
	s.inFlight++
	req := wakeRequest{reason: strings.Join(q.reasons, ", "), force: q.force}
	q.first, q.last, q.dueAt, q.reasons, q.force = time.Time{}, time.Time{}, time.Time{}, nil, false
	q.prio.asked = false
	q.running = true
	q.began++
	ctx := s.ctx
	s.running.Go(func() {
		retryAt, err := s.wake(ctx, id, req)
		if err != nil && ctx.Err() == nil {
			s.log.Error("wake failed", "agent", id, "err", err)
		}
		s.ended(id, retryAt)
	})
}

// ended settles a wake that ended: the slot goes to the next in line, and
// the agent wakes again for what arrived meanwhile, or retries at retryAt
// when it failed.
func (s *scheduler) ended(id string, retryAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	q := s.queues[id]
	q.running = false
	again := q.again
	q.again = false
	if s.stopped || s.ctx.Err() != nil {
		return // stopping: the next start sees what is left
	}
	if !retryAt.IsZero() && !q.force {
		// What is asked for when a wake fails (during it, or due but
		// not yet started) waits for the retry, which sees it: waking
		// at once would skip the backoff that spares a failing model.
		// A person's "wake" does not wait. The retry below replaces
		// the pending one's timer.
		q.first, q.last, q.dueAt = time.Time{}, time.Time{}, time.Time{}
		again = false
	}
	s.startWaiting()
	if !retryAt.IsZero() {
		s.scheduleLocked(kick{agent: id, reason: "retry after a failed wake", mode: kickAt, at: retryAt})
	}
	if again {
		s.scheduleLocked(kick{agent: id, reason: "changes during the last wake", mode: kickNow})
	}
}

// startWaiting starts the wakes waiting for a slot, highest priority
// first, while slots are free.
func (s *scheduler) startWaiting() {
	for s.begun && s.inFlight < s.slots {
		i := s.nextWaiting()
		if i < 0 {
			return
		}
		id := s.waiting[i]
		s.waiting = slices.Delete(s.waiting, i, i+1)
		q := s.queues[id]
		q.waiting = false
		// A change since it queued put its wake off (quiet period): its
		// timer starts it then.
		if !q.dueAt.After(s.now()) {
			s.startLocked(id)
		}
	}
}

// cancel drops the agent's pending wake; one running goes on.
func (s *scheduler) cancel(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[id]; q != nil {
		s.stopTimer(q)
		q.first, q.last, q.dueAt, q.reasons, q.force = time.Time{}, time.Time{}, time.Time{}, nil, false
	}
}

// cancelAll cancels every agent's pending wake: a runtime that finds
// another process running the agents leaves them to it.
func (s *scheduler) cancelAll() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.queues))
	for id := range s.queues {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.cancel(id)
	}
}

// state says whether the agent has a wake pending and one running.
func (s *scheduler) state(id string) (queued, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[id]; q != nil {
		return !q.dueAt.IsZero(), q.running
	}
	return false, false
}

// began is how many wakes of the agent have begun since margin started.
func (s *scheduler) began(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[id]; q != nil {
		return q.began
	}
	return 0
}

// counts counts the agents running a wake, and the others with one pending.
func (s *scheduler) counts() (queued, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.queues {
		if q.running {
			running++
		} else if !q.dueAt.IsZero() {
			queued++
		}
	}
	return queued, running
}
