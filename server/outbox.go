package server

import (
	"io"
	"sync"
	"time"
)

// outbox is the write side of the client connection. Writes are queued in
// order and return at once; one goroutine copies them to the client. An
// editor that stops reading stdout (hung, suspended, or busy) fills the
// pipe, and then only that goroutine waits: an agent logging, the indexer
// reporting progress and the shutdown path never block on the client.
//
// The queue itself is unbounded, because replies must not be lost. What
// keeps it small is that log lines and progress reports are dropped while
// it is backlogged (see Backlogged): a client that reads none of them would
// otherwise grow it with every wake.
type outbox struct {
	w io.Writer

	mu      sync.Mutex
	wake    *sync.Cond // signalled when queue grows or closing is set
	queue   [][]byte
	queued  int   // bytes in queue
	err     error // the first write error; later writes return it
	closing bool
	done    chan struct{} // closed when the copying goroutine has returned
}

// backlogLimit is how many bytes may wait for the client before
// notifications that can be dropped are. A few hundred log lines: a client
// that reads at all drains that in milliseconds.
const backlogLimit = 1 << 20

func newOutbox(w io.Writer) *outbox {
	o := &outbox{w: w, done: make(chan struct{})}
	o.wake = sync.NewCond(&o.mu)
	go o.run()
	return o
}

// Write queues a copy of p.
func (o *outbox) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return 0, o.err
	}
	if o.closing {
		return 0, io.ErrClosedPipe
	}
	o.queue = append(o.queue, append([]byte(nil), p...))
	o.queued += len(p)
	o.wake.Signal()
	return len(p), nil
}

// Backlogged reports whether the client has fallen so far behind that
// notifications it can do without should be dropped.
func (o *outbox) Backlogged() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued > backlogLimit
}

func (o *outbox) run() {
	defer close(o.done)
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		for len(o.queue) == 0 && !o.closing {
			o.wake.Wait()
		}
		if len(o.queue) == 0 {
			return
		}
		batch := o.queue
		o.queue = nil
		err := o.err // once the client is gone, the rest is dropped
		o.mu.Unlock()
		n := 0
		for _, p := range batch {
			if err == nil {
				_, err = o.w.Write(p)
			}
			n += len(p)
		}
		o.mu.Lock()
		o.queued -= n
		if err != nil && o.err == nil {
			o.err = err
		}
	}
}

// Close stops taking writes and waits up to grace for what is queued to
// reach the client. A client that is not reading does not hold it up for
// longer: its copying goroutine is left blocked, and the process exits.
func (o *outbox) Close(grace time.Duration) {
	o.mu.Lock()
	o.closing = true
	o.wake.Signal()
	o.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
	}
}
