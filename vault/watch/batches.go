package watch

// Debouncing: pending paths, the timer, and the batch waiting for the
// consumer.

import (
	"os"
	"slices"
	"strings"
	"time"
)

// touch records an event for the path rel at now.
func (w *Watcher) touch(rel string, now time.Time) {
	p, ok := w.pending[rel]
	if !ok {
		p.first = now
	}
	p.last = now
	w.pending[rel] = p
	// A running timer fires at most a debounce after it was armed (every
	// pending path was touched by then, and the gap is no longer), so never
	// after this path is due; the flush re-arms for paths not yet due. The
	// timer therefore needs setting only when stopped.
	if w.timerAt.IsZero() {
		w.arm(now.Add(w.debounce))
	}
}

// flush delivers every pending path that is due at now, each with its state on
// disk at this moment, and re-arms the timer for the rest. A path is due once
// it has been quiet for the debounce, or once it has waited MaxBatchWait since
// its first event, whichever comes first.
func (w *Watcher) flush(now time.Time) {
	var changes []Change
	var nextQuiet, nextForced time.Time
	for rel, p := range w.pending {
		quiet, forced := p.last.Add(w.debounce), p.first.Add(w.maxWait)
		if quiet.After(now) && forced.After(now) {
			nextQuiet, nextForced = earliest(nextQuiet, quiet), earliest(nextForced, forced)
			continue
		}
		changes = append(changes, Change{Path: rel, Removed: w.absent(rel)})
		delete(w.pending, rel)
	}
	if len(changes) > 0 {
		slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
		w.enqueue(Batch{Changes: changes})
		// The gap holds back only quiet paths: MaxBatchWait is a promise.
		if gapEnd := now.Add(w.gap); !nextQuiet.IsZero() && nextQuiet.Before(gapEnd) {
			nextQuiet = gapEnd
		}
	}
	if next := earliest(nextQuiet, nextForced); !next.IsZero() {
		w.arm(next)
	}
}

// earliest returns the earlier of a and b, a zero time standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// absent reports whether rel no longer names a file.
func (w *Watcher) absent(rel string) bool {
	fi, err := os.Stat(w.abs(rel))
	if err != nil {
		return isGone(err)
	}
	return fi.IsDir()
}

func (w *Watcher) arm(at time.Time) {
	w.timerAt = at
	w.timer.Reset(time.Until(at))
}

// enqueue hands b to the consumer, merging it into the batch still waiting
// there, if any, so a slow consumer never makes the watcher block and lose
// kernel events.
func (w *Watcher) enqueue(b Batch) {
	if w.outbox == nil {
		w.outbox = &b
		return
	}
	o := w.outbox
	if b.Rescan && !strings.Contains(o.Reason, b.Reason) {
		o.Reason = strings.TrimPrefix(o.Reason+"; "+b.Reason, "; ")
	}
	o.Rescan = o.Rescan || b.Rescan
	if o.Rescan {
		o.Changes = nil
		return
	}
	for _, c := range b.Changes {
		i, found := slices.BinarySearchFunc(o.Changes, c.Path, func(c Change, p string) int { return strings.Compare(c.Path, p) })
		if found {
			o.Changes[i] = c
		} else {
			o.Changes = slices.Insert(o.Changes, i, c)
		}
	}
}
