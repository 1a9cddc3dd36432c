package task

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/margin-md/margin/llm"
)

// A model server that is unreachable, a model that is not pulled or no
// provider at all is not an agent's failure (SPEC §4.1 "Failure"): the
// wake that meets it writes the offline report, ends "offline" without a
// failure counted, and waits here. One probe for the whole runtime,
// backed off, asks the model server whether the model is back; when it
// is, the waiting agents wake. While the model is away, wakes do not
// call it: they keep the offline report current and wait too.

// readier is the cheap check of a model that is away; llm.Client has it.
type readier interface {
	Ready(ctx context.Context, req llm.Request) error
}

// probeTimeout bounds one probe: a model server answers its version and
// model list in milliseconds.
const probeTimeout = 10 * time.Second

// modelWatch holds the agents whose wake waits for the model, and probes,
// backed off from initial to max, until the model is back; then it hands
// the agents to back. It is safe for concurrent use.
type modelWatch struct {
	ready        func(ctx context.Context, req llm.Request) error
	back         func(agents []string)
	initial, max time.Duration
	log          *slog.Logger
	probes       sync.WaitGroup

	mu      sync.Mutex // guards the fields below
	why     string     // why the model is away; "" when it is not known to be
	req     llm.Request
	waiting []string // agents in the order they began to wait
	probing bool
	stopped bool
	// backAt is when the last probe found the model back, after a wait
	// of lastWait. A model found back that is away again at once (listed
	// by the server, but its chat answers 404) resumes the backoff there
	// rather than cycling probe → wake → away at the initial wait.
	backAt   time.Time
	lastWait time.Duration
}

// newModelWatch probes with model's Ready. A model without one (a fake in
// a test) is taken to be back at each probe, so its waiting wakes retry
// at the probe's pace, still without counting a failure.
func newModelWatch(model llm.Model, opts Options, back func([]string)) *modelWatch {
	m := &modelWatch{back: back, initial: opts.ProbeInitial, max: opts.ProbeMax, log: opts.Logger,
		ready: func(context.Context, llm.Request) error { return nil }}
	if r, ok := model.(readier); ok {
		m.ready = r.Ready
	}
	return m
}

// away says why the model is away, "" when it is not known to be.
func (m *modelWatch) away() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.why
}

// count is the number of agents waiting for the model.
func (m *modelWatch) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiting)
}

// wait records that agent's wake waits for the model, which is away for
// why and would serve req; the probe starts unless it runs. It reports
// whether the agent began to wait (it was not waiting already).
func (m *modelWatch) wait(ctx context.Context, agent, why string, req llm.Request) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return false
	}
	m.why, m.req = why, req
	if !m.probing {
		m.probing = true
		first := m.initial
		if !m.backAt.IsZero() && time.Since(m.backAt) < m.max {
			first = min(2*m.lastWait, m.max)
		}
		m.probes.Go(func() { m.probe(ctx, first) })
	}
	if contains(m.waiting, agent) {
		return false
	}
	m.waiting = append(m.waiting, agent)
	return true
}

// probe asks, after each backoff from first, whether the model is back; a
// probe that fails for another reason than the model being away (a 5xx, a
// timeout) lets the wakes run too, whose failures then count.
func (m *modelWatch) probe(ctx context.Context, first time.Duration) {
	for wait := first; ; wait = min(2*wait, m.max) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			// Stopping: what the probe knew ends with it, and the
			// next start wakes every agent anyway.
			t.Stop()
			m.mu.Lock()
			m.why, m.waiting, m.probing = "", nil, false
			m.mu.Unlock()
			return
		case <-t.C:
		}
		m.mu.Lock()
		req := m.req
		m.mu.Unlock()
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := m.ready(pctx, req)
		cancel()
		if ctx.Err() == nil && (err == nil || !llm.Away(err)) {
			m.mu.Lock()
			agents := m.waiting
			m.why, m.waiting, m.probing = "", nil, false
			m.backAt, m.lastWait = time.Now(), wait
			m.mu.Unlock()
			m.log.Info("the model is back; waking the agents that waited", "agents", len(agents), "probe", err)
			m.back(agents)
			return
		}
		if err != nil && ctx.Err() == nil {
			m.log.Debug("the model is still away", "err", err, "next probe", min(2*wait, m.max))
		}
	}
}

// stop ends the probe, which ends with Run's ctx, and starts no other.
func (m *modelWatch) stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.probes.Wait()
}

// modelBack wakes the agents that waited for the model.
func (r *Runtime) modelBack(agents []string) {
	for _, id := range agents {
		if err := r.kick(kick{agent: id, reason: "the model is back", mode: kickNow}); err != nil {
			return // the agents are stopping; the next start wakes them
		}
	}
}

// waitForModel settles a wake that found the model away: no failure is
// counted and no retry timed; the wake waits for the probe. The client
// hears it once, when the agent begins to wait. Without any model
// configured there is nothing to wait for: the offline report is all a
// wake can do until margin restarts with one.
func (r *Runtime) waitForModel(ctx context.Context, a Agent, why string, req llm.Request) {
	if r.model == nil {
		return
	}
	if r.watch.wait(ctx, a.ID, why, req) {
		r.log.Warn("model away; the agent waits for it", "agent", a.ID, "task", a.Task, "why", why)
		r.notify("margin/agentStatus", AgentStatus{ID: a.ID, Task: a.Task, Lifecycle: a.Lifecycle, Failures: a.Failures,
			Reason: waitingReason + why})
	}
}

// processed reports whether the state of run key key needs no wake: a
// run of it completed, or, while there is no model to call, a run of it
// wrote the offline report already (a save that changed nothing does not
// write that report again).
func (r *Runtime) processed(ctx context.Context, agent, key string) (bool, error) {
	done, err := r.store.completedKey(ctx, agent, key)
	if err != nil || done || r.model != nil && r.watch.away() == "" {
		return done, err
	}
	var n int
	err = r.store.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM wake_runs WHERE agent_id = ? AND run_key = ? AND status = ?`,
		agent, key, RunOffline).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("looking up run key %s: %w", key, err)
	}
	return n > 0, nil
}

// waitingReason begins the reason of an agent waiting for the model.
const waitingReason = "waiting for the model: "
