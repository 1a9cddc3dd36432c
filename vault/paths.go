package vault

import (
	"slices"
	"sync"
)

// Paths is a queue of vault paths that a Subscribe callback fills and
// the subscriber's own goroutine drains, so that reading and deciding a
// saved file never runs on the vault's goroutine nor on another part's
// loop. A path queued twice before it is taken is handled once.
type Paths struct {
	mu    sync.Mutex
	paths []string
	ready chan struct{}
}

// NewPaths returns an empty queue.
func NewPaths() *Paths { return &Paths{ready: make(chan struct{}, 1)} }

// Add queues p; it never blocks.
func (q *Paths) Add(p string) {
	q.mu.Lock()
	if !slices.Contains(q.paths, p) {
		q.paths = append(q.paths, p)
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled when paths wait.
func (q *Paths) Ready() <-chan struct{} { return q.ready }

// Take returns the waiting paths, oldest first, and empties the queue.
func (q *Paths) Take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.paths
	q.paths = nil
	return out
}
