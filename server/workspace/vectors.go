package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/related"
	"github.com/margin-md/margin/vault/store"
	"github.com/margin-md/margin/vault/vectors"
)

// EmbedOptions configure the notes' vectors (the Embeddings part).
type EmbedOptions struct {
	// DailyTokens is agents.daily_embed_token_budget: the estimated
	// tokens embedded in a day; 0 for no limit.
	DailyTokens int
	// Background is set when Run embeds changed notes (margin serve): the
	// store opens after Run's first scan, which a warm start then has
	// the cores to itself for. Otherwise it opens at once.
	Background bool
	// OnProgress, unless nil, hears the background queue's progress after
	// each batch and change of state, from the queue's goroutine.
	OnProgress func(Embedding)
}

// embedLock is the file in the state dir that the one process embedding
// the vault holds: two queues on one database would embed the same chunks
// twice.
const embedLock = "embed.lock"

// lockRetry is how often a margin serve that found another process
// embedding tries to take over: a margin embed in a terminal mostly ends
// within minutes, and a minute's delay costs nothing but freshness.
const lockRetry = time.Minute

// openGrace is how long after margin serve's first scan the vectors
// wait to open, and the queue with them to look for work (some tens of
// milliseconds of reading at 10,000 notes): an editor's first requests
// (status, the open notes' lenses) come within it and get the cores.
// Related notes asked for in that window wait for it.
const openGrace = 2 * time.Second

// Vectors is the notes' embeddings: the store beside the index, opened in
// the background so that a warm start does not wait for its codes, and the
// queue that embeds what changed, when a model is configured.
type Vectors struct {
	opened chan struct{}      // closed once store or openErr is set
	cancel context.CancelFunc // stops an open that waits for the first scan
	store  *vectors.Store
	// openErr is why the store could not open; search is by keyword.
	openErr error

	src  vectors.Source
	emb  vectors.Embedder // nil without an embedding model
	off  string           // why emb is nil
	opts EmbedOptions
	log  *slog.Logger
	lock string // embedLock's path

	mu    sync.Mutex     // guards queue and first
	queue *vectors.Queue // this process's, while it runs one
	// first is the progress read as the store opened, beside the index's
	// scan: the first Status takes it rather than count the chunks again
	// after the scan (margin status asks once).
	first *vectors.Progress
}

// openVectors starts opening the vectors store of v in the background
// (after Run's first scan when opts.Background) and picks the embedder
// from client's configuration (no call is made).
func openVectors(ctx context.Context, v *vault.Vault, client *llm.Client, opts EmbedOptions, log *slog.Logger) *Vectors {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	vs := &Vectors{
		opened: make(chan struct{}), cancel: cancel, src: vectors.FromIndex(v.Index()), opts: opts, log: log,
		lock: filepath.Join(v.StateDir(), embedLock),
	}
	vs.emb, vs.off = embedderOf(client)
	path := filepath.Join(v.StateDir(), vectors.FileName)
	go func() {
		defer close(vs.opened)
		if opts.Background {
			if vs.openErr = v.WaitReady(ctx); vs.openErr != nil {
				return // closed first, or the vault stopped: it says why
			}
			t := time.NewTimer(openGrace)
			select {
			case <-ctx.Done():
				t.Stop()
				vs.openErr = ctx.Err()
				return
			case <-t.C:
			}
		}
		vs.store, vs.openErr = vectors.Open(ctx, path)
		if vs.openErr != nil {
			log.Error("searching by keyword only", "err", vs.openErr)
			return
		}
		if p, err := vs.store.Progress(ctx); err == nil {
			vs.mu.Lock()
			vs.first = &p
			vs.mu.Unlock()
		}
	}()
	return vs
}

// Store waits for the store to open and returns it; an error when it
// could not (callers search by keyword).
func (vs *Vectors) Store(ctx context.Context) (*vectors.Store, error) {
	select {
	case <-vs.opened:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return vs.store, vs.openErr
}

// close waits for the store to open, then closes it. No queue may run.
func (vs *Vectors) close() error {
	vs.cancel()
	<-vs.opened
	if vs.store == nil {
		return nil
	}
	return vs.store.Close()
}

// changed tells a running queue that notes changed.
func (vs *Vectors) changed() {
	vs.mu.Lock()
	q := vs.queue
	vs.mu.Unlock()
	if q != nil {
		q.Changed()
	}
}

// errElsewhere says another process embeds the vault.
var errElsewhere = errors.New("another margin process (margin serve or margin embed) is embedding this vault; margin status shows how far it is")

// start makes the queue this process runs, once the store is open, and
// takes embedLock until release: errElsewhere when another process holds
// it, an error saying why when there is no model.
func (vs *Vectors) start(ctx context.Context, onProgress func(vectors.Progress)) (q *vectors.Queue, release func(), err error) {
	if vs.emb == nil {
		return nil, nil, errors.New(vs.off)
	}
	s, err := vs.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	l, err := store.TryLock(vs.lock)
	if errors.Is(err, store.ErrLocked) {
		return nil, nil, errElsewhere
	}
	if err != nil {
		return nil, nil, err
	}
	q = vectors.NewQueue(s, vs.src, vs.emb, vectors.QueueOptions{DailyTokens: vs.opts.DailyTokens, OnProgress: onProgress})
	vs.mu.Lock()
	vs.queue = q
	vs.mu.Unlock()
	return q, func() {
		vs.mu.Lock()
		vs.queue = nil
		vs.mu.Unlock()
		l.Unlock()
	}, nil
}

// run embeds in the background until ctx is done (margin serve), after
// any other process embedding the vault has stopped.
func (vs *Vectors) run(ctx context.Context) {
	if !vs.opts.Background {
		return
	}
	for {
		q, release, err := vs.start(ctx, func(p vectors.Progress) {
			if vs.opts.OnProgress != nil {
				vs.opts.OnProgress(vs.embedding(p))
			}
		})
		switch {
		case err == nil:
			q.Run(ctx)
			release()
			return
		case errors.Is(err, errElsewhere):
			t := time.NewTimer(lockRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		default:
			if ctx.Err() == nil {
				vs.log.Info("not embedding notes: searching by keyword", "why", err)
			}
			return
		}
	}
}

// Embed runs the queue in the foreground until nothing is left to embed,
// the day's budget is spent or the embedder fails (margin embed), telling
// progress after each batch. It returns the progress it stopped at.
func (vs *Vectors) Embed(ctx context.Context, progress func(Embedding)) (Embedding, error) {
	var (
		mu   sync.Mutex // guards last and stop
		last Embedding
		stop = make(chan struct{})
	)
	q, release, err := vs.start(ctx, func(p vectors.Progress) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-stop:
			return // the queue is stopping: its last word is not news
		default:
		}
		last = vs.embedding(p)
		progress(last)
		switch p.State {
		case vectors.Idle, vectors.Paused, vectors.Waiting:
			close(stop)
		}
	})
	if err != nil {
		return Embedding{}, err
	}
	defer release()
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		q.Run(runCtx)
	}()
	select {
	case <-stop:
	case <-ctx.Done():
	}
	cancel()
	<-ran
	mu.Lock()
	defer mu.Unlock()
	return last, ctx.Err()
}

// The embedding's states beyond the queue's (vectors.State).
const (
	// Off: no embedding model is configured (or the store cannot open):
	// nothing is embedded and search is by keyword. It wins over Opening.
	Off vectors.State = "off"
	// Opening: margin serve has yet to open the store (see openGrace),
	// so the progress is not known yet.
	Opening vectors.State = "opening"
)

// Embedding is how far the notes' vectors are, for vault/status, margin
// status and doctor. Its State is the queue's, Off or Opening.
type Embedding struct {
	vectors.Progress
	// KeywordOnly is set while a question cannot be searched by meaning:
	// Off, the model unreachable, or nothing embedded yet. Why says why.
	KeywordOnly bool
	Why         string
	// Elsewhere is set when another process embeds the vault; Progress
	// is then what it last recorded.
	Elsewhere   bool
	DailyTokens int
}

// Status reports the embedding: this process's queue when it runs one,
// else what the database holds. In margin serve it does not wait for the
// store to open: until then it says so.
func (vs *Vectors) Status(ctx context.Context) (Embedding, error) {
	if vs.opts.Background {
		select {
		case <-vs.opened:
		default:
			e := vs.embedding(vectors.Progress{State: Opening})
			if e.State != Off {
				e.Why = "the notes' vectors open a moment after margin starts"
			}
			return e, nil
		}
	}
	s, err := vs.Store(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return Embedding{}, err
		}
		return Embedding{Progress: vectors.Progress{State: Off}, KeywordOnly: true, Why: "the vectors database cannot be read (" + err.Error() + "): searching by keyword", DailyTokens: vs.opts.DailyTokens}, nil
	}
	vs.mu.Lock()
	q, first := vs.queue, vs.first
	vs.first = nil
	vs.mu.Unlock()
	if q != nil {
		return vs.embedding(q.Progress()), nil
	}
	var p vectors.Progress
	if first != nil {
		p = *first
	} else if p, err = s.Progress(ctx); err != nil {
		return Embedding{}, fmt.Errorf("reading the embedding's progress: %w", err)
	}
	held, err := store.Held(vs.lock)
	if err != nil {
		return Embedding{}, err
	}
	e := vs.embedding(p)
	e.Elsewhere = held
	if !held {
		// Whatever the last queue recorded, none runs now: a killed one
		// leaves "embedding" behind.
		e.Rate, e.Note, e.Resumes = 0, "", time.Time{}
		if e.State != Off {
			e.State = vectors.Stopped
		}
	}
	return e, nil
}

// embedding is p with what search can do meanwhile, and why.
func (vs *Vectors) embedding(p vectors.Progress) Embedding {
	e := Embedding{Progress: p, DailyTokens: vs.opts.DailyTokens}
	if e.Model == "" && vs.emb != nil {
		// Before the first queue ran the store names no model: the
		// configured one is what will embed.
		e.Model = vs.emb.Fingerprint()
	}
	switch {
	case vs.emb == nil:
		e.State, e.KeywordOnly, e.Why = Off, true, vs.off
	case p.State == vectors.Waiting:
		e.KeywordOnly, e.Why = true, "waiting to retry ("+p.Note+")"
	case p.Embedded == 0:
		e.KeywordOnly, e.Why = true, "no note is embedded yet"
	}
	return e
}

// RelatedNotes are the notes related to one, or why there are none.
type RelatedNotes struct {
	Notes []related.Note
	// Why says why Notes is empty when that is not for want of other
	// notes: no model, nothing embedded yet.
	Why string
}

// Related finds up to limit notes near the note at path by meaning that
// it neither links to nor is linked from. Without vectors it returns no
// notes and says why; the error wraps index.ErrNotFound for a path that is
// not an indexed note.
func (w *Workspace) Related(ctx context.Context, path string, limit int) (RelatedNotes, error) {
	if _, err := w.Vault.Index().Note(ctx, path); err != nil {
		return RelatedNotes{}, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	if w.Vectors == nil {
		return RelatedNotes{Notes: []related.Note{}, Why: "notes' vectors are not open in this command"}, nil
	}
	s, err := w.Vectors.Store(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return RelatedNotes{}, err
		}
		return RelatedNotes{Notes: []related.Note{}, Why: "the vectors database cannot be read: " + err.Error()}, nil
	}
	notes, err := related.Find(ctx, w.Vault.Index(), s, path, limit)
	switch {
	case errors.Is(err, vectors.ErrNoVectors), errors.Is(err, vectors.ErrNotFound):
		why := "this note is not embedded yet"
		if errors.Is(err, vectors.ErrNoVectors) {
			why = "no note is embedded yet"
		}
		if w.Vectors.emb == nil {
			why += " (" + w.Vectors.off + ")"
		} else if e, err := w.Vectors.Status(ctx); err == nil && e.Left > 0 {
			why += fmt.Sprintf(" (%d chunks left to embed)", e.Left)
		}
		return RelatedNotes{Notes: []related.Note{}, Why: why}, nil
	case err != nil:
		return RelatedNotes{}, err
	}
	return RelatedNotes{Notes: notes}, nil
}

// RelatedNow is Related for a code lens, a hover or a task agent's wake
// (it implements task.Related), which must not wait or fail for want of
// vectors: no notes, at once, while the vectors are still opening, when
// they cannot be read or when none is embedded, and then no query is made.
func (w *Workspace) RelatedNow(ctx context.Context, path string, limit int) ([]related.Note, error) {
	if w.Vectors == nil {
		return nil, nil
	}
	select {
	case <-w.Vectors.opened:
	default:
		return nil, nil
	}
	s := w.Vectors.store
	if s == nil {
		return nil, nil
	}
	if _, n, err := s.Model(ctx); err != nil || n == 0 {
		return nil, err
	}
	notes, err := related.Find(ctx, w.Vault.Index(), s, path, limit)
	if errors.Is(err, vectors.ErrNotFound) || errors.Is(err, vectors.ErrNoVectors) || errors.Is(err, index.ErrNotFound) {
		return nil, nil // the note is not embedded or not indexed yet
	}
	return notes, err
}

// embedderOf is client's embed role as an Embedder, or nil and why not.
func embedderOf(client *llm.Client) (vectors.Embedder, string) {
	if client == nil {
		return nil, "no model is configured"
	}
	if _, err := client.EmbedModel(); err != nil {
		return nil, "no embedding model (" + err.Error() + ")"
	}
	return Embedder{client}, ""
}

// cutTitle splits a chunk's one-line title paragraph from its body.
func cutTitle(text string) (title, body string, ok bool) {
	for i := 0; i+1 < len(text); i++ {
		switch {
		case text[i] == '\n' && text[i+1] == '\n':
			return text[:i], text[i+2:], i > 0 && i+2 < len(text)
		case text[i] == '\n':
			return "", "", false
		}
	}
	return "", "", false
}

// Model implements retrieve.Vectors: it waits for the store to open.
func (vs *Vectors) Model(ctx context.Context) (string, int, error) {
	st, err := vs.Store(ctx)
	if err != nil {
		return "", 0, err
	}
	return st.Model(ctx)
}

// Nearest implements retrieve.Vectors.
func (vs *Vectors) Nearest(ctx context.Context, q []float32, k int, allow []string) ([]vectors.Match, error) {
	st, err := vs.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.Nearest(ctx, q, k, allow)
}

// NearestExcept implements retrieve.Vectors.
func (vs *Vectors) NearestExcept(ctx context.Context, q []float32, k int, except []string) ([]vectors.Match, error) {
	st, err := vs.Store(ctx)
	if err != nil {
		return nil, err
	}
	return st.NearestExcept(ctx, q, k, except)
}
