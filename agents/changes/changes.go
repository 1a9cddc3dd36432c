// Package changes owns change sets (SPEC §3.3, §4.2): what a task agent
// proposes to change in a person's task note waits here for the person.
// It owns the tables proposals, change_sets, change_items and decisions
// (migration component "changes"); the deferred tools' argument schemas
// and the checks of their values; routing a wake's proposals into sets
// and writing their files under <output>/Changes; every way of deciding
// (Decide, ConfirmAll, the file a person ticks, read by its own vault
// subscription); applying confirmed items to the task note; expiry on its
// own ticker; and restoring set files a crash left unwritten.
//
// It does not know how agents run: what it needs of them is the Agents
// interface (whose task an agent has, and a wake after a decision), which
// the task runtime implements, and the command line with no runtime at all.
package changes

import (
	"context"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// Owner is what a change set needs to know of the agent that proposed it.
type Owner struct {
	Task       string // the task note's path now (it follows renames)
	OutputName string // names the agent's folder under <output>/Changes
}

// Agents is what change sets need of the task agents.
type Agents interface {
	// Owner returns the agent's task path and output name.
	Owner(ctx context.Context, agentID string) (Owner, error)
	// AgentOf returns the id of the agent of the task note at taskPath,
	// "" when it has none: listing a task's sets finds those proposed
	// before the task was renamed through it.
	AgentOf(ctx context.Context, taskPath string) (string, error)
	// Wake asks for a wake of the agent after a decision, coalesced like
	// a change; it must not block.
	Wake(ctx context.Context, agentID, reason string)
	// RunCause returns the template (name@version) and the model of the
	// wake run that proposed a set, which margin's history names with
	// each write of its items; "" for what is not known.
	RunCause(ctx context.Context, run int64) (template, model string, err error)
}

// Notifier sends a notification to the client (the server implements it).
type Notifier interface {
	Notify(method string, params any)
}

// Options configure change sets. Zero values take SPEC defaults.
type Options struct {
	// MaxItems caps the items of one change set (10 by default); more
	// go into a further set.
	MaxItems int
	// ExpireAfter is how long a change set stays open (7 days by default).
	ExpireAfter time.Duration
	// Editor edits the notes open in the editor; nil when there is none
	// (the command line), and every apply then writes the file.
	Editor   edit.Editor
	Notifier Notifier
	Logger   *slog.Logger
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

type notifyNothing struct{}

func (notifyNothing) Notify(string, any) {}

// Changes is the change sets of one vault.
type Changes struct {
	v      Vault
	store  *Store
	agents Agents
	opts   Options
	log    *slog.Logger

	// mu serialises decisions, routing and expiry, so a decision racing
	// another (or a new wake's change set) never applies an item twice
	// or decides a superseded one.
	mu sync.Mutex

	files *vault.Paths // change set files a person saved, waiting for Run
}

// New returns the change sets of v, kept in st.
func New(v Vault, st *Store, agents Agents, opts Options) *Changes {
	if opts.MaxItems <= 0 {
		opts.MaxItems = 10
	}
	if opts.ExpireAfter <= 0 {
		opts.ExpireAfter = 7 * 24 * time.Hour
	}
	if opts.Notifier == nil {
		opts.Notifier = notifyNothing{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Changes{v: v, store: st, agents: agents, opts: opts, log: opts.Logger, files: vault.NewPaths()}
}

// Store gives read access to the change sets and decisions.
func (c *Changes) Store() *Store { return c.store }

func (c *Changes) now() time.Time       { return c.opts.Now() }
func (c *Changes) outputFolder() string { return c.v.OutputFolder }

// SetCreated is margin/changeSetCreated: a change set waits for a person.
type SetCreated struct {
	ID    string       `json:"id"`
	Task  string       `json:"task"`
	Path  string       `json:"path"`
	Items []ChangeItem `json:"items"`
}

// ItemDecided is margin/changeApplied: an item was decided, and a
// confirmed one applied (or found stale); Status says which.
type ItemDecided struct {
	ID     string `json:"id"`
	Item   string `json:"item"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

func (c *Changes) notify(method string, params any) {
	c.opts.Notifier.Notify(method, params)
}

// Watch subscribes to the vault's changes: a person's save of a change set
// file is queued for Run, which decides what they ticked. Call it before
// the vault runs. Saves before the first scan is done are not queued.
func (c *Changes) Watch() {
	c.v.Events.Subscribe(func(changes []vault.Change) {
		select {
		case <-c.v.Events.Ready():
		default:
			return
		}
		for _, ch := range changes {
			if c.isChangeSetFile(ch.Path) && !ch.Own && !ch.Removed() {
				c.files.Add(ch.Path)
			}
		}
	})
}

// Run decides the change set files Watch queues and expires the sets
// whose time is up, until ctx is done. It runs on its own goroutine: a
// decision that waits on the editor delays no wake and no request.
func (c *Changes) Run(ctx context.Context) {
	if err := c.queueOpenSetFiles(ctx); err != nil && ctx.Err() == nil {
		c.log.Error("reading change set files saved while margin was not running", "err", err)
	}
	expiry := time.NewTicker(expiryCheck(c.opts.ExpireAfter))
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-expiry.C:
			if err := c.expireDue(ctx); err != nil && ctx.Err() == nil {
				c.log.Error("expiring change sets", "err", err)
			}
		case <-c.files.Ready():
			for _, p := range c.files.Take() {
				if err := c.DecideFile(ctx, p); err != nil && ctx.Err() == nil {
					c.log.Error("reading decisions from a change set file", "path", p, "err", err)
				}
			}
		}
	}
}

// queueOpenSetFiles queues every open set's file for Run to decide: the
// watcher reports only the saves made while margin runs, and a box ticked
// in another editor while it was not running would otherwise wait for the
// next save. DecideFile reads nothing from a file that is as margin left it.
func (c *Changes) queueOpenSetFiles(ctx context.Context) error {
	sets, err := c.store.ChangeSets(ctx, ChangeSetFilter{})
	if err != nil {
		return err
	}
	for _, cs := range sets {
		c.files.Add(cs.Path)
	}
	return nil
}

// isChangeSetFile reports whether p is a change set file.
func (c *Changes) isChangeSetFile(p string) bool {
	dir := path.Join(strings.Trim(path.Clean("/"+c.outputFolder()), "/"), "Changes") + "/"
	return strings.HasPrefix(p, dir) && path.Ext(p) == ".md"
}
