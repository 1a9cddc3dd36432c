package vectors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// QueueOptions configure a Queue.
type QueueOptions struct {
	// DailyTokens is the estimated tokens the queue may embed in a day, the
	// local day; 0 for no limit. When spent, the queue pauses until
	// midnight and Progress says so.
	DailyTokens int
	// Batch is the most chunks one Embed call takes; 0 for 32.
	Batch int
	// Retry is how long the queue waits after the embedder failed before
	// trying again, doubled on each failure in a row up to 32 times as
	// long; 0 for 30 s.
	Retry time.Duration
	// OnProgress, unless nil, is called with the progress after each change
	// of state and each batch, from the queue's goroutine: for $/progress.
	OnProgress func(Progress)
}

// Progress is what the queue has done and has left, for vault/status,
// $/progress, margin status and doctor.
type Progress struct {
	Model     string  // the embedder's fingerprint; "" before the queue ran
	Embedded  int     // chunks of current notes with a vector of Model
	Left      int     // chunks of current notes with no vector of Model
	Rate      float64 // chunks embedded a second, over the last minute; 0 when idle
	State     State
	Note      string    // why, for Paused and Waiting: "daily budget of 100000 tokens spent", the embedder's error
	LastError string    // the last error of the embedder or the database; "" after a success
	Resumes   time.Time // when a Paused or Waiting queue tries again
	// Reembedding is set from a model change until every chunk has a
	// vector of the new model; ModelBefore names the old one.
	Reembedding bool
	ModelBefore string
	TokensToday int // estimated tokens embedded today
}

// State is what the queue is doing.
type State string

const (
	Idle      State = "idle"      // nothing left to embed
	Embedding State = "embedding" // at work
	Paused    State = "paused"    // the day's budget is spent
	Waiting   State = "waiting"   // the embedder failed (offline?); retries at Resumes
	Stopped   State = "stopped"   // not running
)

// Queue embeds the chunks that have no vector yet, most recently edited
// notes first, in the background. Its state is the database's, so a
// restarted queue resumes where the last one stopped: a kill loses at
// most the batch being embedded.
type Queue struct {
	s   *Store
	src Source
	emb Embedder
	opt QueueOptions

	wake chan struct{} // Changed's signal; holds at most one

	mu      sync.Mutex // guards p and batches
	p       Progress
	batches []batchDone // of the last rateWindow, for Rate
}

// batchDone is one embedded batch, for Rate.
type batchDone struct {
	start, end time.Time
	chunks     int
}

// rateWindow is how far back Rate looks: long enough to smooth out batches
// of a few seconds each, short enough to show a slowdown within a minute.
const rateWindow = time.Minute

// NewQueue returns a queue that embeds src's notes with emb into s.
func NewQueue(s *Store, src Source, emb Embedder, opt QueueOptions) *Queue {
	if opt.Batch <= 0 {
		opt.Batch = 32
	}
	if opt.Retry <= 0 {
		// An offline model server is mostly a stopped laptop app: trying
		// twice a minute at first finds it back soon without a log line or
		// a connection attempt every second.
		opt.Retry = 30 * time.Second
	}
	return &Queue{s: s, src: src, emb: emb, opt: opt, wake: make(chan struct{}, 1), p: Progress{State: Stopped}}
}

// Changed tells the queue that notes changed (the index applied a batch),
// so that it looks for work again, edited notes first.
func (q *Queue) Changed() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Progress returns the queue's progress now, from memory: cheap enough
// for every status poll.
func (q *Queue) Progress() Progress {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.p
	p.Rate = q.rate(time.Now())
	return p
}

// rate is the chunks embedded a second over the rateWindow before now.
func (q *Queue) rate(now time.Time) float64 {
	from := now.Add(-rateWindow)
	var n int
	var first time.Time
	for _, b := range q.batches {
		if b.end.Before(from) {
			continue
		}
		if first.IsZero() || b.start.Before(first) {
			first = b.start
		}
		n += b.chunks
	}
	if n == 0 || q.p.State != Embedding {
		return 0
	}
	return float64(n) / max(now.Sub(first).Seconds(), 1e-3)
}

// update changes the progress with fn, records it in the database when its
// state changed, and tells OnProgress.
func (q *Queue) update(ctx context.Context, fn func(p *Progress)) {
	q.mu.Lock()
	before := q.p
	fn(&q.p)
	p := q.p
	p.Rate = q.rate(time.Now())
	q.mu.Unlock()
	if p.State != before.State || p.Note != before.Note || p.LastError != before.LastError || p.Reembedding != before.Reembedding {
		// Best effort: a database that cannot take this cannot take the
		// vectors either, and that error is reported where it happens.
		q.s.record(context.WithoutCancel(ctx), p)
	}
	if q.opt.OnProgress != nil {
		q.opt.OnProgress(p)
	}
}

// errBudget stops a round when the day's budget is spent.
var errBudget = errors.New("daily budget spent")

// embedError is the embedder's failure, which the queue waits out.
type embedError struct{ err error }

func (e *embedError) Error() string { return "embedding: " + e.err.Error() }
func (e *embedError) Unwrap() error { return e.err }

// Run embeds until ctx is done, then returns ctx's error. After the
// last chunk it waits for Changed. An embedder that fails (offline, say)
// is tried again after QueueOptions.Retry, then twice that, up to 32
// times, with the error in Progress, never returned: the vault stays
// searchable by keyword meanwhile.
func (q *Queue) Run(ctx context.Context) error {
	defer q.update(ctx, func(p *Progress) { p.State = Stopped })
	failures := 0
	for {
		idle, err := q.round(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var wait time.Duration
		var ee *embedError
		switch {
		case errors.Is(err, errBudget):
			now := time.Now()
			resumes := nextDay(now)
			q.update(ctx, func(p *Progress) {
				p.State, p.Resumes = Paused, resumes
				p.Note = fmt.Sprintf("daily budget of %d tokens spent; resumes at midnight", q.opt.DailyTokens)
			})
			wait = resumes.Sub(now)
		case err != nil:
			failures++
			wait = q.opt.Retry << min(failures-1, 5)
			state, note := Waiting, "the embedder failed; retrying later"
			if !errors.As(err, &ee) {
				note = "reading notes or writing vectors failed; retrying later"
			}
			q.update(ctx, func(p *Progress) {
				p.State, p.Note, p.LastError, p.Resumes = state, note, err.Error(), time.Now().Add(wait)
			})
		case idle:
			failures = 0
			q.update(ctx, func(p *Progress) { p.State, p.Note, p.Resumes = Idle, "", time.Time{} })
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-q.wake:
			}
			continue
		default: // woken mid-way: look at the changed notes first
			failures = 0
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// round brings the chunks up to date with the source and embeds what is
// missing until nothing is (idle), Changed is called, or something fails.
func (q *Queue) round(ctx context.Context) (idle bool, err error) {
	before, err := q.s.useModel(ctx, q.emb.Fingerprint())
	if err != nil {
		return false, err
	}
	// Drain a pending signal: this round sees every change made until now.
	select {
	case <-q.wake:
	default:
	}
	q.update(ctx, func(p *Progress) {
		p.Model, p.State, p.Note, p.Resumes = q.emb.Fingerprint(), Embedding, "chunking changed notes", time.Time{}
		p.Reembedding, p.ModelBefore = before != "", before
	})
	if err := q.sync(ctx); err != nil {
		return false, err
	}
	if err := q.recount(ctx); err != nil {
		return false, err
	}
	q.update(ctx, func(p *Progress) { p.Note = "" })
	for {
		select {
		case <-q.wake:
			return false, nil
		default:
		}
		done, err := q.step(ctx)
		if err != nil {
			return false, err
		}
		if done {
			break
		}
	}
	if err := q.s.sweep(ctx); err != nil {
		return false, err
	}
	q.update(ctx, func(p *Progress) { p.Reembedding, p.ModelBefore, p.LastError = false, "", "" })
	return true, q.recount(ctx)
}

// recount sets Embedded, Left and TokensToday from the database.
func (q *Queue) recount(ctx context.Context) error {
	embedded, left, err := q.s.counts(ctx)
	if err != nil {
		return err
	}
	spent, err := q.s.spentOn(ctx, dayOf(time.Now()))
	if err != nil {
		return err
	}
	q.update(ctx, func(p *Progress) { p.Embedded, p.Left, p.TokensToday = embedded, left, spent })
	return nil
}

// syncBatch is how many notes sync chunks a transaction: enough to make
// the commits' cost small, few enough that a kill loses little.
const syncBatch = 100

// sync chunks the notes whose version the database does not hold, most
// recently edited first, and forgets the notes the source no longer has.
func (q *Queue) sync(ctx context.Context) error {
	stamps, err := q.src.Notes(ctx)
	if err != nil {
		return fmt.Errorf("listing notes: %w", err)
	}
	slices.SortFunc(stamps, func(a, b NoteStamp) int { return strings.Compare(a.Path, b.Path) })
	todo, gone, err := q.s.stale(ctx, stamps)
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		if err := q.s.removeNotes(ctx, gone); err != nil {
			return err
		}
	}
	slices.SortFunc(todo, func(a, b NoteStamp) int { return b.Mtime.Compare(a.Mtime) })
	var batch []chunkedNote
	flush := func() error {
		if len(batch) > 0 {
			if err := q.s.writeNotes(ctx, batch); err != nil {
				return err
			}
		}
		batch = batch[:0]
		return nil
	}
	for _, st := range todo {
		n, err := q.src.Note(ctx, st.Path)
		if errors.Is(err, ErrGone) {
			continue // the next sync's listing will not have it
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", st.Path, err)
		}
		batch = append(batch, chunkedNote{st, chunksOf(n, q.emb.MaxTokens())})
		if len(batch) == syncBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// step embeds one batch of missing chunks, from the most recently edited
// pending notes; done when there are none.
func (q *Queue) step(ctx context.Context) (done bool, err error) {
	notes, err := q.s.pendingNotes(ctx, q.opt.Batch)
	if err != nil {
		return false, err
	}
	if len(notes) == 0 {
		return true, nil
	}
	now := time.Now()
	room := -1 // tokens left in today's budget; -1 without a limit
	if q.opt.DailyTokens > 0 {
		spent, err := q.s.spentOn(ctx, dayOf(now))
		if err != nil {
			return false, err
		}
		room = max(q.opt.DailyTokens-spent, 0)
	}
	b := embedded{at: now}
	var texts []string
	seen := make(map[hash]bool)
	full := false
	for _, n := range notes {
		missing, err := q.s.missing(ctx, n.id)
		if err != nil {
			return false, err
		}
		if len(missing) > 0 {
			note, err := q.src.Note(ctx, n.path)
			if errors.Is(err, ErrGone) {
				if err := q.s.removeNotes(ctx, []int64{n.id}); err != nil {
					return false, err
				}
				continue
			}
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", n.path, err)
			}
			chunks := chunksOf(note, q.emb.MaxTokens())
			if !holdsAll(chunks, missing) {
				// Edited since it was chunked: chunk it again now; the
				// next sync records its version.
				if err := q.s.writeNotes(ctx, []chunkedNote{{NoteStamp{Path: n.path, Mtime: now}, chunks}}); err != nil {
					return false, err
				}
				if missing, err = q.s.missing(ctx, n.id); err != nil {
					return false, err
				}
			}
			for _, c := range chunks {
				if !missing[c.hash] || seen[c.hash] {
					continue
				}
				if len(texts) == q.opt.Batch || room >= 0 && b.tokens+c.tokens > room {
					full = true
					break
				}
				seen[c.hash] = true
				delete(missing, c.hash)
				texts = append(texts, c.text)
				b.hashes = append(b.hashes, c.hash)
				b.tokens += c.tokens
			}
		}
		b.notes = append(b.notes, n.id)
		if full {
			break
		}
	}
	if len(texts) == 0 {
		if full {
			return false, errBudget
		}
		// Only notes whose chunks all have vectors (shared with notes
		// embedded before, or left by an older run): settle them.
		_, _, err := q.s.addVectors(ctx, b)
		return false, err
	}
	vecs, err := q.emb.Embed(ctx, texts)
	if err != nil {
		return false, &embedError{err}
	}
	if len(vecs) != len(texts) {
		return false, &embedError{fmt.Errorf("asked for %d vectors, got %d", len(texts), len(vecs))}
	}
	b.vectors = vecs
	have, left, err := q.s.addVectors(ctx, b)
	if err != nil {
		return false, err
	}
	end := time.Now()
	q.mu.Lock()
	q.batches = append(q.batches, batchDone{now, end, len(texts)})
	for len(q.batches) > 0 && q.batches[0].end.Before(end.Add(-rateWindow)) {
		q.batches = q.batches[1:]
	}
	q.mu.Unlock()
	q.update(ctx, func(p *Progress) {
		p.Embedded, p.Left = have, left
		p.TokensToday += b.tokens
		p.LastError = ""
	})
	return false, nil
}

// holdsAll reports whether chunks hold every hash of want.
func holdsAll(chunks []chunk, want map[hash]bool) bool {
	n := 0
	for _, c := range chunks {
		if want[c.hash] {
			n++
		}
	}
	return n >= len(want)
}
