package vectors

import (
	"context"
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
	// trying again, doubled on each failure up to 32 times; 0 for 30 s.
	Retry time.Duration
}

// Progress is what the queue has done and has left, for vault/status,
// $/progress, margin status and doctor.
type Progress struct {
	Model     string  // the embedder's fingerprint; "" before the queue ran
	Embedded  int     // chunks of current notes with a vector of Model
	Left      int     // chunks (or, for notes not yet chunked, sections) still to embed
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
// restarted queue resumes where the last one stopped.
type Queue struct {
	s   *Store
	src Source
	emb Embedder
	opt QueueOptions
}

// NewQueue returns a queue that embeds src's notes with emb into s.
func NewQueue(s *Store, src Source, emb Embedder, opt QueueOptions) *Queue {
	return &Queue{s: s, src: src, emb: emb, opt: opt}
}

// Run embeds until ctx is done, then returns ctx's error. After the
// last chunk it waits for Changed.
func (q *Queue) Run(ctx context.Context) error { panic("unimplemented") }

// Changed tells the queue that notes changed (the index applied a batch),
// so that it looks for work again.
func (q *Queue) Changed() { panic("unimplemented") }

// Progress returns the queue's progress now, from memory: cheap enough
// for every status poll.
func (q *Queue) Progress() Progress { panic("unimplemented") }
