package task

import (
	"context"
	"log/slog"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault/edit"
)

// Notifier sends a notification to the client (the server implements it).
type Notifier interface {
	Notify(method string, params any)
}

// NotifyFunc adapts a function to Notifier.
type NotifyFunc func(method string, params any)

// Notify implements Notifier.
func (f NotifyFunc) Notify(method string, params any) { f(method, params) }

// TaskHistory is what the agents need of margin's history of its writes
// (history.History implements it).
type TaskHistory interface {
	// MoveTask lists the writes about the task at from under to.
	MoveTask(ctx context.Context, from, to string) error
}

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
	// ProbeInitial and ProbeMax space the probes that look for a model
	// that is away (2s, doubling up to 1m by default); see modelWatch.
	ProbeInitial time.Duration
	ProbeMax     time.Duration
	// DailyTokenBudget caps the model tokens of wakes per day; 0: no
	// limit. Once spent, wakes that need the model wait for the next day.
	DailyTokenBudget int
	// Role is the llm role the task agents use; DefaultRole by default.
	Role     string
	Notifier Notifier
	// Editor edits the notes open in the editor; nil when there is none
	// (the command line), and every apply then writes the file.
	Editor edit.Editor
	Logger *slog.Logger
	// Now is the clock; time.Now by default.
	Now func() time.Time
	// History is margin's history of its writes, which follows a renamed
	// task; nil when it is not kept.
	History TaskHistory

	othersPoll time.Duration // see watchOthers; tests shorten it
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
	if o.ProbeInitial <= 0 {
		o.ProbeInitial = 2 * time.Second
	}
	if o.ProbeMax < o.ProbeInitial {
		o.ProbeMax = max(time.Minute, o.ProbeInitial)
	}
	if o.Role == "" {
		o.Role = DefaultRole
	}
	if o.othersPoll <= 0 {
		o.othersPoll = othersPoll
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

// wakeSlots bounds the wakes running at once. Startup wakes every active
// agent; unbounded, a thousand tasks meant a thousand goroutines in SQLite,
// whose page cache mutex every query then queued behind (vault/status took
// seconds). Two per model call let one wake gather and record while
// another talks to the model, which is what limits them anyway.
func (o *Options) wakeSlots() int { return 2 * o.Concurrency }
