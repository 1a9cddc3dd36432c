package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// recheck bounds every wait of the scheduler: a timer does not count the
// time a machine sleeps, so after a suspend the wall clock is read again
// within this long, and a definition added or edited is picked up too.
const recheck = time.Minute

// Run finishes the runs a crash cut, then runs each review when its
// schedule says, until ctx is done. A review whose scheduled time passed
// while margin was not running (or the machine slept) runs once for the
// latest time it missed, not once per missed time.
func (r *Reviews) Run(ctx context.Context) error {
	if r.opts.LockFile != "" {
		l, err := r.lead(ctx)
		if err != nil || l == nil {
			return err
		}
		defer l.Unlock()
	}
	if err := r.Resume(ctx); err != nil {
		return err
	}
	for {
		next := r.tick(ctx)
		if ctx.Err() != nil {
			return nil
		}
		wait := recheck
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(r.now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.opts.Clock.After(wait):
		}
	}
}

// lead waits until this process holds the reviews' lock; nil when ctx
// ended first. Resume must not redo the run another process is doing.
func (r *Reviews) lead(ctx context.Context) (*store.Lock, error) {
	for {
		l, err := store.TryLock(r.opts.LockFile)
		if !errors.Is(err, store.ErrLocked) {
			if err != nil {
				return nil, fmt.Errorf("taking the reviews' lock: %w", err)
			}
			return l, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-r.opts.Clock.After(recheck):
		}
	}
}

// tick runs every review that is due and returns the next scheduled time
// of any review (zero for none).
func (r *Reviews) tick(ctx context.Context) time.Time {
	defs, err := r.Definitions()
	if err != nil {
		r.log.Warn("the reviews could not be listed", "err", err)
		return time.Time{}
	}
	var next time.Time
	for _, def := range defs {
		now := r.now()
		if due, ok := def.Schedule.Prev(now); ok {
			last, err := r.store.lastDue(ctx, def.Name)
			if err != nil {
				r.log.Warn("a review's runs could not be read", "review", def.Name, "err", err)
				continue
			}
			if due.After(last) {
				if _, err := r.runDue(ctx, def, due); err != nil && ctx.Err() == nil {
					r.log.Warn("a review run failed", "review", def.Name, "due", due, "err", err)
				}
				if ctx.Err() != nil {
					return time.Time{}
				}
			}
		}
		if n, ok := def.Schedule.Next(r.now()); ok && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}
