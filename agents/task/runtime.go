// Package task runs margin's task agents (SPEC §4.1): one persistent agent
// per task note that wakes when its task or a linked daily entry changes,
// sees what changed since its last wake, and keeps a report and a private
// journal in the vault.
//
// It owns the agents' tables in the state database (identity, lifecycle,
// last-seen sources, wake runs, messages, tool calls; migration component
// "agents"), the scheduler (coalescing, single flight, wake slots, the
// global model limit, backoff, dormancy), reconciling the agents with the
// vault at startup and on every change, the wake workflow and its
// immediate tools, the prompt, run keys, and the report and journal files
// under the output folder. What an agent proposes to change in its task
// goes to the changes package, which owns change sets; the directives
// come from the templates package.
//
// It must not import the server: it tells the client things through a
// Notifier. It writes into the vault only through vault/edit's Root, and
// into a person's task note only for set_task_language; every other
// change to a task waits in a change set for a person.
package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/internal/kit"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

// Notifier sends a notification to the client (the server implements it).
type Notifier interface {
	Notify(method string, params any)
}

// NotifyFunc adapts a function to Notifier.
type NotifyFunc func(method string, params any)

// Notify implements Notifier.
func (f NotifyFunc) Notify(method string, params any) { f(method, params) }

// DefaultRole is the llm role of task agents' calls unless Options.Role
// names another.
const DefaultRole = "task"

// Options configure a Runtime; cmd fills them from agents.* in the config.
// Zero values take SPEC defaults.
type Options struct {
	AutoCreate     bool
	QuietPeriod    time.Duration
	MaxWait        time.Duration
	MaxTurns       int
	Concurrency    int
	ContextTokens  int
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	DormantAfter   int
	// MaxItems and ExpireAfter configure change sets; see changes.Options.
	MaxItems    int
	ExpireAfter time.Duration
	// WakeDeadline bounds the model's time in one wake (5m by default);
	// a wake cut there is incomplete and retried.
	WakeDeadline time.Duration
	// Role is the llm role the task agents use; DefaultRole by default.
	Role     string
	Notifier Notifier
	// Editor edits the notes open in the editor; nil when there is none
	// (the command line), and every apply then writes the file.
	Editor changes.Editor
	Logger *slog.Logger
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// ChangesOptions are the options of the vault's change sets.
func (o Options) ChangesOptions() changes.Options {
	return changes.Options{MaxItems: o.MaxItems, ExpireAfter: o.ExpireAfter, Editor: o.Editor, Notifier: o.Notifier, Logger: o.Logger, Now: o.Now}
}

// TemplatesOptions are the options of the template library the agents run from.
func (o Options) TemplatesOptions() templates.Options {
	return templates.Options{Role: o.Role, Notifier: o.Notifier, Logger: o.Logger, Now: o.Now}
}

func (o *Options) setDefaults() {
	if o.QuietPeriod <= 0 {
		o.QuietPeriod = 2 * time.Second
	}
	if o.MaxWait < o.QuietPeriod {
		o.MaxWait = max(30*time.Second, o.QuietPeriod)
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 5
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.ContextTokens <= 0 {
		o.ContextTokens = 8192
	}
	if o.BackoffInitial <= 0 {
		o.BackoffInitial = 30 * time.Second
	}
	if o.BackoffMax < o.BackoffInitial {
		o.BackoffMax = max(time.Hour, o.BackoffInitial)
	}
	if o.DormantAfter <= 0 {
		o.DormantAfter = 5
	}
	if o.Role == "" {
		o.Role = DefaultRole
	}
	if o.WakeDeadline <= 0 {
		o.WakeDeadline = 5 * time.Minute
	}
	if o.Notifier == nil {
		o.Notifier = NotifyFunc(func(string, any) {})
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Runtime runs the task agents of one vault. Create it before the vault
// runs (so no change is missed), then call Run.
type Runtime struct {
	v         *vault.Vault
	store     *Store
	templates *templates.Templates
	changes   *changes.Changes
	model     llm.Model // nil: no model, every wake writes the offline report
	opts      Options
	log       *slog.Logger
	sem       chan struct{} // the global limit on concurrent model calls

	due      chan string   // an agent whose wake is due (timers send here)
	finished chan ended    // a wake ended
	kicks    chan kick     // wakes asked for through the API
	changed  chan struct{} // vault changes or wakes are waiting in batches or wakes
	done     chan struct{} // closed when Run returns

	mu      sync.Mutex // guards the fields below
	batches [][]vault.Change
	wakes   []kick // wakes asked for by Wake (decisions on change sets)
	queues  map[string]*wakeQueue
	skipped map[string]int // wakes skipped because their run key had completed, per agent, since start
	waking  int            // wakes running, at most wakeSlots
	waiting []string       // agents whose wake is due, waiting for a slot, in order
}

// wakeSlots bounds the wakes running at once. Startup wakes every active
// agent; unbounded, a thousand tasks meant a thousand goroutines in SQLite,
// whose page cache mutex every query then queued behind (vault/status took
// seconds). Two per model call let one wake gather and record while
// another talks to the model, which is what limits them anyway.
func (o *Options) wakeSlots() int { return 2 * o.Concurrency }

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

// New opens the agents' store in the vault's state database and subscribes
// to the vault's changes. model may be nil (offline).
func New(ctx context.Context, v *vault.Vault, model llm.Model, opts Options) (*Runtime, error) {
	opts.setDefaults()
	st, err := OpenStore(ctx, v.DB())
	if err != nil {
		return nil, err
	}
	r := &Runtime{
		v: v, store: st, templates: templates.New(v, opts.TemplatesOptions()), model: model, opts: opts, log: opts.Logger,
		sem:      make(chan struct{}, opts.Concurrency),
		due:      make(chan string),
		finished: make(chan ended),
		kicks:    make(chan kick),
		changed:  make(chan struct{}, 1),
		done:     make(chan struct{}),
		queues:   map[string]*wakeQueue{},
		skipped:  map[string]int{},
	}
	st.reportTask = r.reportTask
	if r.changes, err = changes.New(ctx, v, r, opts.ChangesOptions()); err != nil {
		return nil, err
	}
	r.templates.Watch()
	r.changes.Watch()
	v.Subscribe(r.onBatch)
	return r, nil
}

// Store gives read access to the agents' records.
func (r *Runtime) Store() *Store { return r.store }

// Changes is the vault's change sets.
func (r *Runtime) Changes() *changes.Changes { return r.changes }

// Templates is the vault's template library the agents run from.
func (r *Runtime) Templates() *templates.Templates { return r.templates }

func (r *Runtime) now() time.Time       { return r.opts.Now() }
func (r *Runtime) outputFolder() string { return r.v.Options().OutputFolder }

// reportTask is the task the report of outputName says it is about, "" when
// there is no such report.
func (r *Runtime) reportTask(outputName string) string {
	p := ReportPath(r.outputFolder(), outputName)
	snap, err := r.v.Root().Read(p)
	if err != nil {
		return ""
	}
	return ParseReport(p, snap.Content).Task
}
func (r *Runtime) notify(method string, params any) {
	r.opts.Notifier.Notify(method, params)
}

// onBatch hands a batch to Run; it runs on the vault's goroutine, so it
// only queues. Batches before the first scan is done are dropped: Run
// reconciles with the whole index then.
func (r *Runtime) onBatch(changes []vault.Change) {
	select {
	case <-r.v.Ready():
	default:
		return
	}
	r.mu.Lock()
	r.batches = append(r.batches, changes)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Run wakes agents until ctx is done, then waits for the wakes in flight to
// stop. A wake stopped this way stays "started" and is re-run at the next
// start under the same run key, as after a crash.
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
			r.waking--
			r.mu.Unlock()
			r.startWaiting(ctx, &wg)
			if !e.retryAt.IsZero() {
				r.schedule(kick{agent: e.agent, reason: "retry after a failed wake", mode: at, at: e.retryAt})
			}
			if again {
				r.schedule(kick{agent: e.agent, reason: "changes during the last wake", mode: now})
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

// wake runs one wake of the agent: the run-key check, the run record, the
// work, and the bookkeeping of how it ended. retryAt is when to try again
// after a failure; zero for none.
func (r *Runtime) wake(ctx context.Context, id string, req wakeRequest) (retryAt time.Time, err error) {
	a, err := r.store.Agent(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	if a.Lifecycle == Destroyed || a.Lifecycle == Dormant && !req.force {
		return time.Time{}, nil
	}
	w := &wake{rt: r, agent: a}
	found, err := w.gather(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("wake of %s: %w", a.Task, err)
	}
	if !found {
		return time.Time{}, r.taskGone(ctx, a)
	}
	if err := r.store.setTaskFingerprint(ctx, a.ID, string(w.taskSnap.Fingerprint)); err != nil {
		return time.Time{}, err
	}
	if w.decisions, err = r.changes.Store().Decisions(ctx, changes.DecisionFilter{Agent: a.ID, Limit: recentDecisions}); err != nil {
		return time.Time{}, err
	}
	w.key = runKey(a.ID, w.template.ID(), w.sources, decisionKeys(w.decisions))

	prev, interrupted, err := r.store.interrupted(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	seen, err := r.store.sources(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	full := len(seen) == 0
	reason := req.reason
	switch {
	case interrupted:
		// A crash stopped this run: do it again under its own key, so
		// the tool calls it already made are recognised.
		w.key, w.run, reason = RunKey(prev.RunKey), prev.ID, prev.Reason+" (re-run after an interrupted attempt)"
		if err := r.store.restartRun(ctx, w.run, w.template.Label(), full); err != nil {
			return time.Time{}, err
		}
		if err := w.settleStarted(ctx); err != nil {
			return time.Time{}, err
		}
	default:
		if req.force {
			// A wake someone asked for is its own state: the same notes
			// with a new request.
			w.key = runKey(a.ID, w.template.ID(), w.sources, append(decisionKeys(w.decisions), "request@"+kit.Stamp(r.now())))
		} else if done, err := r.store.completedKey(ctx, a.ID, string(w.key)); err != nil {
			return time.Time{}, err
		} else if done {
			r.mu.Lock()
			r.skipped[a.ID]++
			r.mu.Unlock()
			r.log.Debug("wake skipped: this state was processed already", "agent", a.ID, "task", a.Task)
			return time.Time{}, nil
		}
		if w.run, err = r.store.startRun(ctx, a.ID, string(w.key), reason, w.template.Label(), full, r.now()); err != nil {
			return time.Time{}, err
		}
	}
	r.log.Info("agent waking", "agent", a.ID, "task", a.Task, "reason", reason, "full", full)

	end, err := w.execute(ctx, reason, seen)
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, nil
		}
		end = runEnd{status: RunFailed, detail: err.Error()}
	}
	// Proposals reach the person however the wake ended: each was
	// validated and recorded when the model made it.
	owner := changes.Owner{Task: w.agent.Task, OutputName: w.agent.OutputName}
	if err := r.changes.Route(context.WithoutCancel(ctx), a.ID, owner, w.run, w.task); err != nil {
		r.log.Error("routing proposals to a change set", "agent", a.ID, "err", err)
	}
	if end.status == RunCompleted {
		end.settledKey = string(runKey(a.ID, w.template.ID(), w.sources, decisionKeys(w.decisions)))
	}
	finishCtx := context.WithoutCancel(ctx)
	if err := r.store.finishRun(finishCtx, a.ID, w.run, end, w.sources, w.template.Label(), r.now()); err != nil {
		return time.Time{}, err
	}
	if end.status != RunCompleted {
		return r.failed(finishCtx, a, end.detail)
	}
	if a.Failures > 0 {
		r.sendStatus(finishCtx, a.ID)
	}
	return time.Time{}, nil
}

// failed counts a failed wake: a retry after exponential backoff, or, after
// dormant_after failures in a row, dormancy. It returns when to retry.
func (r *Runtime) failed(ctx context.Context, a Agent, detail string) (time.Time, error) {
	n, err := r.store.recordFailure(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	if n >= r.opts.DormantAfter {
		r.log.Warn("agent going dormant after failed wakes", "agent", a.ID, "task", a.Task, "failures", n, "last", detail)
		if err := r.store.setLifecycle(ctx, a.ID, Dormant, fmt.Sprintf("%d failed wakes in a row; last: %s", n, detail)); err != nil {
			return time.Time{}, err
		}
	} else {
		next = r.now().Add(backoff(n, r.opts.BackoffInitial, r.opts.BackoffMax))
		if err := r.store.setNextWake(ctx, a.ID, next); err != nil {
			return time.Time{}, err
		}
		r.log.Warn("wake failed; retrying later", "agent", a.ID, "task", a.Task, "failures", n, "next", next, "why", detail)
	}
	r.sendStatus(ctx, a.ID)
	return next, nil
}

// backoff is the wait before retry n (1-based): initial·2ⁿ⁻¹, at most max.
func backoff(n int, initial, maxWait time.Duration) time.Duration {
	d := initial
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}

// Status is what margin/agentStatus tells the client.
type Status struct {
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
	r.notify("margin/agentStatus", Status{ID: a.ID, Task: a.Task, Lifecycle: a.Lifecycle, Failures: a.Failures, NextWake: a.NextWake, Reason: a.DormantReason})
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

// isOutput reports whether p is under margin's output folder: margin's own
// files never wake an agent, even when a person edits them.
func (r *Runtime) isOutput(p string) bool {
	out := strings.Trim(path.Clean("/"+r.outputFolder()), "/")
	return p == out || strings.HasPrefix(p, out+"/")
}

// onChanges routes a batch of vault changes to the agents it concerns.
func (r *Runtime) onChanges(ctx context.Context, changes []vault.Change) error {
	agents, err := r.store.Agents(ctx, "")
	if err != nil {
		return err
	}
	byTask := make(map[string]*Agent, len(agents))
	for i := range agents {
		byTask[agents[i].Task] = &agents[i]
	}

	// Renames first: a task removed and a task created with the same
	// content is one task that moved (editors and git rename this way).
	for _, c := range changes {
		if c.Removed() || !c.Old.IsZero() || c.Kind != note.KindTask || byTask[c.Path] != nil {
			continue
		}
		for i := range agents {
			a := &agents[i]
			if a.taskFingerprint != string(c.New) || a.Lifecycle == Destroyed || !r.taskMissing(changes, a) {
				continue
			}
			r.log.Info("task renamed; the agent follows it", "agent", a.ID, "from", a.Task, "to", c.Path)
			if err := r.store.moveTask(ctx, a.ID, c.Path, string(c.New)); err != nil {
				return err
			}
			delete(byTask, a.Task)
			a.Task = c.Path
			byTask[c.Path] = a
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
			}
			r.sendStatus(ctx, a.ID)
			break
		}
	}

	wake := map[string]string{} // agent → reason
	for _, c := range changes {
		if r.isOutput(c.Path) {
			// margin's own files never wake an agent; a person's save
			// of a template or a change set file is the template
			// library's and the change sets' (their Watch).
			continue
		}
		if a := byTask[c.Path]; a != nil {
			switch {
			case c.Removed():
				if err := r.taskGone(ctx, *a); err != nil {
					return err
				}
				continue
			case c.Own:
				// margin's own write (set_task_language): remember the
				// content for rename detection, but do not wake.
				if err := r.store.setTaskFingerprint(ctx, a.ID, string(c.New)); err != nil {
					return err
				}
				continue
			}
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
				r.sendStatus(ctx, a.ID)
			}
			if a.Lifecycle == Active {
				wake[a.ID] = "task changed"
			}
			continue
		}
		if c.Own {
			continue
		}
		if c.Kind == note.KindTask && !c.Removed() && r.opts.AutoCreate {
			a, err := r.store.createAgent(ctx, c.Path, string(c.New), r.now())
			if err != nil {
				return err
			}
			r.log.Info("agent created", "agent", a.ID, "task", a.Task)
			byTask[a.Task] = &a
			wake[a.ID] = "created"
			continue
		}
		if c.Kind != note.KindDaily && !c.Removed() {
			continue
		}
		// A daily note: wake the agents whose task one of its entries
		// links now, or linked at their last wake.
		readers, err := r.readersOf(ctx, c.Path)
		if err != nil {
			return err
		}
		for i := range agents {
			a := &agents[i]
			if a.Lifecycle == Active && wake[a.ID] == "" && (readers.agents[a.ID] || readers.tasks[a.Task]) {
				wake[a.ID] = "linked entry changed"
			}
		}
	}
	for id, reason := range wake {
		r.schedule(kick{agent: id, reason: reason, mode: coalesce})
	}
	return nil
}

// taskMissing reports whether the agent's task note was removed in this
// batch or is gone (its agent dormant because of it).
func (r *Runtime) taskMissing(changes []vault.Change, a *Agent) bool {
	if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
		return true
	}
	for _, c := range changes {
		if c.Path == a.Task && c.Removed() {
			return true
		}
	}
	return false
}

// noteReaders are the agents that read entries of one note: by id those
// that read one at their last wake, by task those whose task it links now.
type noteReaders struct {
	agents map[string]bool
	tasks  map[string]bool
}

// readersOf finds who reads the note at p with two queries, however many
// agents there are.
func (r *Runtime) readersOf(ctx context.Context, p string) (noteReaders, error) {
	ids, err := r.store.readersOf(ctx, p)
	if err != nil {
		return noteReaders{}, err
	}
	tasks := map[string]bool{}
	linked, err := r.v.Index().LinkedTasks(ctx, p) // a removed note links nothing
	if err != nil {
		return noteReaders{}, err
	}
	for _, t := range linked {
		tasks[t] = true
	}
	return noteReaders{agents: ids, tasks: tasks}, nil
}

// reconcile brings the agents in line with the vault at startup: renames
// and deletions while margin was not running, agents for new tasks, wakes
// interrupted by a crash, retries still due, and a wake (usually skipped
// by its run key) for every active agent.
func (r *Runtime) reconcile(ctx context.Context) error {
	tasks, err := r.v.Index().Tasks(ctx)
	if err != nil {
		return err
	}
	agents, err := r.store.Agents(ctx, "")
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, a := range agents {
		owned[a.Task] = true
	}
	isTask := map[string]bool{}
	for _, t := range tasks {
		isTask[t.Path] = true
	}
	for i := range agents {
		a := &agents[i]
		if a.Lifecycle == Destroyed || isTask[a.Task] {
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted && isTask[a.Task] {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
			}
			continue
		}
		moved := false
		for _, t := range tasks {
			if owned[t.Path] {
				continue
			}
			m, err := r.v.Index().Note(ctx, t.Path)
			if err != nil || m.Stat.Hash != a.taskFingerprint {
				continue
			}
			r.log.Info("task renamed while margin was not running; the agent follows it", "agent", a.ID, "from", a.Task, "to", t.Path)
			if err := r.store.moveTask(ctx, a.ID, t.Path, m.Stat.Hash); err != nil {
				return err
			}
			owned[t.Path], moved = true, true
			a.Task = t.Path
			break
		}
		if !moved {
			if err := r.taskGone(ctx, *a); err != nil {
				return err
			}
			a.Lifecycle = Dormant
		}
	}
	if r.opts.AutoCreate {
		for _, t := range tasks {
			if owned[t.Path] || r.isOutput(t.Path) {
				continue
			}
			m, err := r.v.Index().Note(ctx, t.Path)
			if err != nil {
				continue
			}
			a, err := r.store.createAgent(ctx, t.Path, m.Stat.Hash, r.now())
			if err != nil {
				return err
			}
			agents = append(agents, a)
		}
	}
	for _, a := range agents {
		if a.Lifecycle != Active {
			continue
		}
		k := kick{agent: a.ID, reason: "startup", mode: now}
		if _, interrupted, err := r.store.interrupted(ctx, a.ID); err != nil {
			return err
		} else if !interrupted && a.Failures > 0 && a.NextWake.After(r.now()) {
			k = kick{agent: a.ID, reason: "retry after a failed wake", mode: at, at: a.NextWake}
		}
		r.schedule(k)
	}
	return nil
}

// Create makes an agent for the task note at path (vault-relative), or
// returns the one it has; a destroyed agent comes back to life. The agent
// wakes at once.
func (r *Runtime) Create(ctx context.Context, taskPath string) (Agent, error) {
	m, err := r.v.Index().Note(ctx, taskPath)
	if err != nil {
		return Agent{}, fmt.Errorf("creating an agent for %s: %w", taskPath, vault.ErrNotFound)
	}
	if m.Kind != note.KindTask {
		return Agent{}, fmt.Errorf("creating an agent for %s: %w", taskPath, ErrNotATask)
	}
	a, err := r.store.AgentForTask(ctx, taskPath)
	switch {
	case errors.Is(err, ErrNotFound):
		a, err = r.store.createAgent(ctx, taskPath, m.Stat.Hash, r.now())
	case err == nil && a.Lifecycle == Destroyed:
		err = r.store.resume(ctx, a.ID)
	}
	if err != nil {
		return Agent{}, err
	}
	if err := r.kick(ctx, kick{agent: a.ID, reason: "created", mode: now}); err != nil {
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
		r.cancelPending(id)
	case "resume":
		if err = r.store.resume(ctx, id); err == nil {
			err = r.kick(ctx, kick{agent: id, reason: "resumed", mode: now})
		}
	case "destroy":
		err = r.store.setLifecycle(ctx, id, Destroyed, "")
		r.cancelPending(id)
	case "wake":
		err = r.kick(ctx, kick{agent: id, reason: "requested", mode: now, force: true})
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

// Counts are the agents by state, for vault/status.
type Counts struct {
	Active  int `json:"active"`
	Dormant int `json:"dormant"`
	Queued  int `json:"queued"`
	Running int `json:"running"`
}

// Counts counts the agents.
func (r *Runtime) Counts(ctx context.Context) (Counts, error) {
	byLifecycle, err := r.store.LifecycleCounts(ctx)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Active: byLifecycle[Active], Dormant: byLifecycle[Dormant]}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.queues {
		if q.running {
			c.Running++
		} else if !q.dueAt.IsZero() {
			c.Queued++
		}
	}
	return c, nil
}

// ReadReport reads the report of agent a from the vault.
func ReadReport(v *vault.Vault, a Agent) (Report, error) {
	p := ReportPath(v.Options().OutputFolder, a.OutputName)
	rep, ok, err := readReport(v.Root(), p)
	if err != nil {
		return rep, fmt.Errorf("reading the report on %s: %w", a.Task, err)
	}
	if !ok {
		return rep, fmt.Errorf("no report on %s yet: %w", a.Task, vault.ErrNotFound)
	}
	if rep.Task == "" {
		rep.Task = a.Task
	}
	return rep, nil
}

// Owner implements changes.Agents: the agent's task and output name.
func (r *Runtime) Owner(ctx context.Context, id string) (changes.Owner, error) {
	return r.store.Owner(ctx, id)
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
