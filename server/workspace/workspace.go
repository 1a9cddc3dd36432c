// Package workspace is margin's composition root: it opens a vault and
// what rests on its state database — the ledger of model calls, the
// template library, the change sets, the task agents, evolution sessions
// and the query engine — in the order they depend on each other, runs the
// vault and the agents, and closes it all with the ledger detached before
// the databases close. The server opens one per vault an editor names;
// each command line command opens one with the parts it uses.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/review"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/retrieve"
)

// Parts name what a workspace opens besides the vault.
type Parts uint

const (
	// Templates is the template library, unseeded: reading it writes
	// nothing (margin doctor).
	Templates Parts = 1 << iota
	// Changes is the change sets without the task runtime: deciding
	// writes the task notes and wakes no agent, whose next wake sees the
	// decision in its run key (margin approve).
	Changes
	// Agents is the task runtime with its change sets and its template
	// library; Run wakes the agents.
	Agents
	// Evolution is evolution sessions on the template library, seeded
	// first when the task runtime does not run (margin evolve).
	Evolution
	// Query is the query and log flow (margin ask, log/append).
	Query
	// Tasks is the agents' records without the runtime (margin agents,
	// resume, doctor); Agents, Changes and Evolution open them too.
	Tasks
	// Reviews is the scheduled reviews; with Agents they run on their
	// schedule in Run, spend the agents' token budget and propose through
	// their change sets.
	Reviews
	// Search is the retriever, by words and by meaning (margin search,
	// vault/search, search_notes); the query flow opens it too, and both
	// open Embeddings for the vectors they search.
	Search
	// Embeddings is the notes' vectors, opened in the background: related
	// notes, and search by meaning once embedded. Run embeds what changed
	// (margin serve); Vectors.Embed embeds in the foreground (margin
	// embed).
	Embeddings
)

// Options say what a workspace opens and how.
type Options struct {
	Vault vault.Options
	Parts Parts
	// Scan brings the index up to date before the parts open (the command
	// line; the server's Run scans instead), telling Progress how far it
	// is when set.
	Scan     bool
	Progress func(done, total int)
	// LLM serves the agents' and the query flow's model calls; nil means
	// no model.
	LLM *llm.Client
	// Ledger, when set, forwards the model calls LLM records to the
	// ledger in the vault's state database, and to Recorders, while the
	// workspace is open.
	Ledger    *ledger.Slot
	Recorders []llm.Recorder
	// Agents configure the task agents, and through them the change sets
	// and the template library.
	Agents task.Options
	Query  query.Options
	// History configures the record of margin's writes into the vault.
	History history.Options
	// Embed configures the Embeddings part.
	Embed  EmbedOptions
	Logger *slog.Logger
}

// Workspace is an open vault and the parts opened on it; a part not asked
// for is nil.
type Workspace struct {
	Vault *vault.Vault
	// History records every write margin makes into the vault, from
	// before any part writes until Close.
	History   *history.History
	Ledger    *ledger.Ledger
	Templates *templates.Templates
	Tasks     *task.Store
	Changes   *changes.Changes
	Agents    *task.Runtime
	Evolution *evolution.Evolution
	Query     *query.Engine
	Reviews   *review.Reviews
	// Vectors are the notes' vectors (Embeddings); Retrieve searches the
	// index and them (Search, Query).
	Vectors  *Vectors
	Retrieve *retrieve.Retriever

	slot      *ledger.Slot
	keep      time.Duration // of the ledger's calls: the history's
	logger    *slog.Logger
	closeOnce sync.Once
	closeErr  error
}

// Open opens the vault of opts and the parts it names. On an error it
// closes what it opened: nothing stays attached to a closed database.
func Open(ctx context.Context, opts Options) (*Workspace, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Vault.Logger, opts.Agents.Logger, opts.Query.Logger = opts.Logger, opts.Logger, opts.Logger
	v, err := vault.Open(ctx, opts.Vault)
	if err != nil {
		return nil, err
	}
	w := &Workspace{Vault: v, logger: opts.Logger, keep: opts.History.Keep}
	opts.History.Logger = opts.Logger
	if w.History, err = history.Open(ctx, v.DB(), v.Root(), opts.History); err != nil {
		return nil, errors.Join(err, v.Close())
	}
	v.Root().SetRecorder(w.History)
	if err := w.open(ctx, opts); err != nil {
		return nil, errors.Join(err, w.Close())
	}
	return w, nil
}

func (w *Workspace) open(ctx context.Context, opts Options) error {
	v := w.Vault
	if opts.Parts&(Search|Query) != 0 {
		opts.Parts |= Embeddings
	}
	if opts.Parts&Embeddings != 0 {
		// A command's scan comes next, which the vectors do not depend
		// on: their database opens meanwhile.
		w.Vectors = openVectors(ctx, v, opts.LLM, opts.Embed, opts.Logger)
		v.Subscribe(func([]vault.Change) { w.Vectors.changed() })
	}
	if opts.Scan {
		if _, err := v.Scan(ctx, opts.Progress); err != nil {
			return err
		}
	}
	if opts.Ledger != nil {
		l, err := ledger.Open(ctx, v.DB(), opts.Logger)
		if err != nil {
			return err
		}
		w.Ledger, w.slot = l, opts.Ledger
		w.slot.Attach(append(recorders{l}, opts.Recorders...))
	}
	var model llm.Model // a nil *llm.Client must stay a nil interface: no model at all
	if opts.LLM != nil {
		model = opts.LLM
	}
	var stores task.Stores
	if opts.Parts&(Tasks|Changes|Agents|Evolution) != 0 {
		var err error
		if stores, err = TaskStores(ctx, v); err != nil {
			return fmt.Errorf("opening agents: %w", err)
		}
		w.Tasks = stores.Agents
	}
	switch {
	case opts.Parts&Agents != 0:
		// The agents subscribe to the vault here, before it runs, so they
		// miss no change.
		opts.Agents.History = w.History
		var related task.Related
		if w.Vectors != nil {
			related = w
		}
		rt, err := task.New(ctx, TaskVault(v, related), stores, model, opts.Agents)
		if err != nil {
			return fmt.Errorf("opening agents: %w", err)
		}
		w.Agents, w.Changes, w.Templates = rt, rt.Changes(), rt.Templates()
	case opts.Parts&Changes != 0:
		w.Changes = changes.New(ChangesVault(v), stores.Changes, task.Offline{Store: stores.Agents}, opts.Agents.ChangesOptions())
	}
	if w.Templates == nil && opts.Parts&(Templates|Evolution) != 0 {
		w.Templates = templates.New(TemplatesVault(v), opts.Agents.TemplatesOptions())
		// The task runtime seeds the library as it starts; evolution
		// without it seeds the library here.
		if opts.Parts&Evolution != 0 {
			if err := w.Templates.Seed(ctx); err != nil {
				return err
			}
		}
	}
	if opts.Parts&Evolution != 0 {
		evo, err := EvolutionStores(ctx, v, stores, opts.Logger)
		if err != nil {
			return fmt.Errorf("opening evolution sessions: %w", err)
		}
		w.Evolution = evolution.New(EvolutionVault(v), w.Templates, evo, model, evolution.Options{Logger: opts.Logger, Now: opts.Agents.Now})
	}
	if opts.Parts&Reviews != 0 {
		if err := w.openReviews(ctx, opts, model); err != nil {
			return err
		}
	}
	if opts.Parts&(Search|Query) != 0 {
		w.openRetriever(opts)
		opts.Query.Meaning = w.Retrieve
	}
	if opts.Parts&Query != 0 {
		st, err := query.OpenStore(ctx, v.DB())
		if err != nil {
			return fmt.Errorf("opening the query engine: %w", err)
		}
		w.Query = query.New(QueryVault(v), st, opts.LLM, opts.Query)
	}
	return nil
}

// openReviews hands the reviews what they need of the other parts.
func (w *Workspace) openReviews(ctx context.Context, opts Options, model llm.Model) error {
	v := w.Vault
	st, err := review.OpenStore(ctx, v.DB())
	if err != nil {
		return err
	}
	if w.Templates == nil {
		w.Templates = templates.New(TemplatesVault(v), opts.Agents.TemplatesOptions())
	}
	ro := review.Options{Index: v.Index(), Files: v.Root(), Directives: w.Templates, Model: model, Role: opts.Agents.Role,
		OutputFolder: v.Options().OutputFolder, ContextTokens: opts.Agents.ContextTokens, Logger: opts.Logger,
		Clock: review.SystemClock(opts.Agents.Now), LockFile: filepath.Join(v.StateDir(), "reviews.lock")}
	if w.Agents != nil {
		ro.Budget = w.Agents
		// Today's budget counts the reviews before a restart too.
		now := time.Now()
		if opts.Agents.Now != nil {
			now = opts.Agents.Now()
		}
		spent, err := st.TokensToday(ctx, now)
		if err != nil {
			return err
		}
		w.Agents.SpendTokens(now, spent)
	}
	if w.Changes != nil {
		ro.Proposer = w.Changes
	}
	w.Reviews = review.New(st, ro)
	return nil
}

// ledgerPrune is how often a long-running process prunes the ledger.
const ledgerPrune = 6 * time.Hour

// KeepLedger forgets the ledger's calls older than the history keeps
// margin's writes (history.keep), now and every few hours, until ctx is
// done; without a ledger it returns at once. margin serve runs it in Run,
// margin mcp beside its calls.
func (w *Workspace) KeepLedger(ctx context.Context) {
	if w.Ledger != nil {
		w.Ledger.KeepFor(ctx, w.keep, ledgerPrune)
	}
}

// Run watches the vault, runs the agents, when they were opened, embeds
// changed notes, when Embed.Background, and keeps the ledger until ctx is
// done and all have stopped.
func (w *Workspace) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { w.KeepLedger(ctx) })
	if w.Agents != nil {
		wg.Go(func() {
			if err := w.Agents.Run(ctx); err != nil && ctx.Err() == nil {
				w.logger.Error("agents stopped", "err", err)
			}
		})
	}
	if w.Agents != nil && w.Reviews != nil {
		wg.Go(func() {
			if w.Vault.WaitReady(ctx) != nil {
				return
			}
			if err := w.Reviews.Run(ctx); err != nil && ctx.Err() == nil {
				w.logger.Error("reviews stopped", "err", err)
			}
		})
	}
	if w.Vectors != nil {
		wg.Go(func() { w.Vectors.run(ctx) })
	}
	if err := w.Vault.Run(ctx); err != nil && ctx.Err() == nil {
		w.logger.Error("vault stopped", "err", err)
	}
	wg.Wait() // the agents' wakes write through the vault
}

// Close detaches the ledger, then closes the vault and its databases. Run
// must have returned. Later calls return the first one's error.
func (w *Workspace) Close() error {
	w.closeOnce.Do(func() {
		if w.slot != nil {
			w.slot.Attach(nil)
		}
		// The last writes' commits go to git before the database closes.
		w.Vault.Root().SetRecorder(nil)
		var vecErr error
		if w.Vectors != nil {
			vecErr = w.Vectors.close()
		}
		w.closeErr = errors.Join(w.History.Close(), vecErr, w.Vault.Close())
	})
	return w.closeErr
}

// recorders hands each model-call record to all of them.
type recorders []llm.Recorder

// Record implements llm.Recorder.
func (rs recorders) Record(ctx context.Context, r llm.Record) {
	for _, rec := range rs {
		rec.Record(ctx, r)
	}
}
