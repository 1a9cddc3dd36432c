package watch

// What the watcher can vouch for: watcher errors, resyncs, rescan requests
// and the degradation Status shows.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcherError handles an error from fsnotify. Any of them may mean lost
// events, so the watcher rebuilds its own view and asks for a rescan.
func (w *Watcher) watcherError(err error) {
	reason := "watcher error: " + err.Error()
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		reason = "the kernel's event queue overflowed (fs.inotify.max_queued_events): events were lost"
	}
	now := time.Now()
	if err := w.resync(now); err != nil {
		reason += "; " + failureReason(err)
	}
	w.requestRescan(reason, now)
}

// Resync rebuilds the watcher's view from the disk, as after an overflow,
// without asking for a rescan: it is for a consumer about to rescan on its
// own account (a person asked for one, perhaps after raising
// fs.inotify.max_user_watches), so that directories refused a watch before
// are tried once more, and those that get one stay seen after the rescan.
// Status shows what is still not watched. It returns once the watches are in
// place, or with an error if Run has stopped or ctx ends first.
func (w *Watcher) Resync(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case w.resyncs <- done:
	case <-w.stopped:
		return errors.New("resyncing the vault watcher: it has stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	// Run closes done before it can stop, so this wait needs no other exit.
	<-done
	return nil
}

// resync rebuilds the watcher's view from the disk: it re-adds every watch,
// which picks up directories whose create event was lost and retries those
// refused before, relearns every directory's files, and drops the watches of
// directories that are gone. It returns the first error that left a
// directory unwatched.
func (w *Watcher) resync(now time.Time) error {
	old := w.dirs
	w.dirs = make(map[string]*dirState)
	w.failed = make(map[string]error)
	w.watched = 0
	w.rootGone = false
	failure := w.addDir("", now, false)
	for rel, d := range old {
		if _, still := w.dirs[rel]; d.watched && !still {
			_ = w.fsw.Remove(w.abs(rel)) // as in forgetDir
		}
	}
	if d := w.dirs[""]; d == nil || !d.watched {
		w.rootGone = true
	}
	w.publish()
	return failure
}

// requestRescan asks the consumer to reconcile the whole vault. Pending
// changes are dropped: the rescan happens after them and covers them.
func (w *Watcher) requestRescan(reason string, now time.Time) {
	w.log.Warn("vault needs a rescan", "reason", reason)
	clear(w.pending)
	w.timer.Stop()
	w.timerAt = time.Time{}
	w.enqueue(Batch{Rescan: true, Reason: reason})
	w.mu.Lock()
	w.status.LastRescan = now
	w.status.LastRescanReason = reason
	w.mu.Unlock()
}

// publish copies the directory counts and the degradation into the status.
func (w *Watcher) publish() {
	degraded := w.degraded()
	w.mu.Lock()
	w.status.Dirs = w.watched
	w.status.Degraded = degraded
	w.mu.Unlock()
}

// degraded says what part of the vault is not watched, or "" if all of it is.
func (w *Watcher) degraded() string {
	if w.rootGone {
		return "the vault directory was removed or renamed: nothing is watched"
	}
	if len(w.failed) == 0 {
		return ""
	}
	dirs := make([]string, 0, len(w.failed))
	why := ""
	for rel, err := range w.failed {
		dirs = append(dirs, displayDir(rel))
		if errors.Is(err, syscall.ENOSPC) {
			why = limitReason
		} else if why == "" {
			why = err.Error()
		}
	}
	slices.Sort(dirs)
	const shown = 3 // enough to find the culprit in a status line
	more := ""
	if len(dirs) > shown {
		more = fmt.Sprintf(" and %d more", len(dirs)-shown)
		dirs = dirs[:shown]
	}
	return fmt.Sprintf("%d of %d directories not watched (%s): %s%s; changes there are seen only by a rescan",
		len(w.failed), len(w.dirs), why, strings.Join(dirs, ", "), more)
}

const limitReason = "inotify watch limit reached: raise fs.inotify.max_user_watches"

// failureReason is the rescan reason for a directory that could not be watched.
func failureReason(err error) string {
	if errors.Is(err, syscall.ENOSPC) {
		return limitReason + " (" + err.Error() + ")"
	}
	return "directory not watched: " + err.Error()
}
