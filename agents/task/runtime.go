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
// never into a person's task note: every change to a task waits in a
// change set for a person (the task's language, set_task_language, is
// kept in the state database and the report).
package task

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
)

// Runtime runs the task agents of one vault. Create it before the vault
// runs (so no change is missed), then call Run.
type Runtime struct {
	v         Vault
	store     *Store
	templates *templates.Templates
	changes   *changes.Changes
	model     llm.Model // nil: no model, every wake writes the offline report
	opts      Options
	log       *slog.Logger
	sem       chan struct{} // the global limit on concurrent model calls
	sched     *scheduler    // when each agent wakes; it runs runWake
	watch     *modelWatch   // the wakes waiting for a model that is away, and the probe

	changed chan struct{} // vault changes are waiting in batches
	// following is set while another margin process runs the agents of
	// the vault (see lead): this one then routes no change and wakes no
	// agent.
	following atomic.Bool

	mu      sync.Mutex // guards the fields below
	batches [][]vault.Change
	routing int            // batches Run has taken and not yet routed
	skipped map[string]int // wakes skipped because their run key had completed, per agent, since start
}

// New runs the agents of v from its stores and subscribes to the vault's
// changes. model may be nil (offline).
func New(ctx context.Context, v Vault, stores Stores, model llm.Model, opts Options) (*Runtime, error) {
	opts.setDefaults()
	st := stores.Agents
	r := &Runtime{
		v: v, store: st, templates: templates.New(v.templates(), opts.TemplatesOptions()), model: model, opts: opts, log: opts.Logger,
		sem:     make(chan struct{}, opts.Concurrency),
		changed: make(chan struct{}, 1),
		skipped: map[string]int{},
	}
	r.sched = newScheduler(opts, r.runWake)
	r.watch = newModelWatch(model, opts, r.modelBack)
	// Today's budget counts the wakes before a restart too.
	now := r.now()
	spent, err := st.TokensToday(ctx, now)
	if err != nil {
		return nil, err
	}
	r.sched.budget.add(now, spent)
	st.reportTask = r.reportTask
	r.changes = changes.New(v.changes(), stores.Changes, r, opts.ChangesOptions())
	r.templates.Watch()
	r.changes.Watch()
	v.Events.Subscribe(r.onBatch)
	return r, nil
}

// Store gives read access to the agents' records.
func (r *Runtime) Store() *Store { return r.store }

// Changes is the vault's change sets.
func (r *Runtime) Changes() *changes.Changes { return r.changes }

// Templates is the vault's template library the agents run from.
func (r *Runtime) Templates() *templates.Templates { return r.templates }

func (r *Runtime) now() time.Time       { return r.opts.Now() }
func (r *Runtime) outputFolder() string { return r.v.OutputFolder }

// reportTask is the task the report of outputName says it is about, "" when
// there is no such report.
func (r *Runtime) reportTask(outputName string) string {
	p := ReportPath(r.outputFolder(), outputName)
	snap, err := r.v.Files.Read(p)
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
	case <-r.v.Events.Ready():
	default:
		return
	}
	if r.following.Load() {
		return // the leader routes it; a takeover reconciles with the vault
	}
	r.mu.Lock()
	r.batches = append(r.batches, changes)
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}
