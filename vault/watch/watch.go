// Package watch owns margin's view of changes on disk: it turns fsnotify's
// raw, per-directory events into debounced batches of vault-relative paths
// whose final state may have changed, and says so when it can no longer vouch
// for that view (queue overflow, watcher errors, the inotify watch limit), so
// the consumer rescans instead of going silently stale (SPEC §3.2).
//
// It must not read, parse or index notes, and knows nothing of the index or the
// agents: a Change names a path and whether it is gone, and the consumer stats
// and reads the file itself. It never writes to the vault.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	// DefaultDebounce is how long a path must be quiet before it is delivered
	// (SPEC §3.2): long enough to swallow an editor's whole save sequence
	// (temp write, rename, chmod, backup removal take a few milliseconds) and a
	// burst of appends, short enough that a save still feels immediate.
	DefaultDebounce = 150 * time.Millisecond

	// DefaultMaxBatchWait bounds how long a path that never goes quiet (a log
	// being appended to, a sync client downloading a large note) is held back.
	// One second is several debounces, so ordinary saves never hit it, and
	// still well inside the time a person waits for an agent to notice.
	DefaultMaxBatchWait = time.Second

	// minBatchGap spaces deliveries during a storm (git checkout, a sync
	// client) so it arrives as a few large batches, each applied in one
	// transaction, rather than thousands of one-file ones. 25 ms leaves a save
	// made during a storm within the 50 ms the spec allows above the debounce
	// (SPEC §9).
	minBatchGap = 25 * time.Millisecond
)

// Change is one path whose final state may differ from what was last
// delivered. The event kinds that led to it are deliberately not kept: an
// editor's save is a remove and a create, and only the end state matters.
type Change struct {
	Path    string // vault-relative, forward slashes, e.g. "Tasks/Ship v2.md"
	Removed bool   // the path no longer names a file
}

// Batch is one delivery from the watcher.
type Batch struct {
	// Changes is sorted by Path and names each path once. It is empty when
	// Rescan is set: the rescan covers them.
	Changes []Change

	// Rescan says the watcher may have missed events: the consumer must walk
	// the vault and reconcile everything it knows against the disk.
	Rescan bool
	Reason string // why a rescan is needed, for status and logs
}

// Status is the watcher's health as shown by vault/status.
type Status struct {
	Watching         bool // Run is processing events
	Dirs             int  // directories with a live watch
	LastRescan       time.Time
	LastRescanReason string
	// Degraded is empty when every directory of the vault is watched;
	// otherwise it says what is not, and why.
	Degraded string
}

// Options configures a Watcher. The zero value is usable.
type Options struct {
	// Ignore reports whether a vault-relative path (forward slashes) is to be
	// left alone. An ignored directory is neither watched nor scanned. Nil
	// means DefaultIgnore with no state dir and no globs.
	Ignore func(rel string, isDir bool) bool

	// Debounce is how long a path must be quiet before it is delivered;
	// zero means DefaultDebounce.
	Debounce time.Duration

	// MaxBatchWait is the longest a change waits after its first event, even
	// if events for it keep coming; zero means DefaultMaxBatchWait. It must
	// not be shorter than Debounce.
	MaxBatchWait time.Duration

	// Logger receives warnings about rescans and unwatched directories; nil
	// discards them.
	Logger *slog.Logger

	// Seams for tests, which cannot make the kernel run out of watches or
	// overflow its event queue on demand without root. addWatch wraps the real
	// add of an absolute directory path; errs is read like fsnotify's own
	// error channel.
	addWatch func(dir string, add func(string) error) error
	errs     <-chan error
}

// faultOptions is set only in test builds of margin (faults.go, build tag
// marginfaults): it plugs the seams above into every watcher the binary
// creates, so end-to-end tests can inject faults into a running server.
var faultOptions func(*Options)

// Watcher watches one vault. Create it with New, then call Run.
type Watcher struct {
	root      string // absolute, cleaned
	ignore    func(rel string, isDir bool) bool
	debounce  time.Duration
	maxWait   time.Duration
	gap       time.Duration // minBatchGap, never more than debounce so a new path is never late
	log       *slog.Logger
	fsw       *fsnotify.Watcher
	addWatch  func(dir string) error
	extraErrs <-chan error
	batches   chan Batch
	resyncs   chan chan struct{} // Resync's requests, each closed when done
	stopped   chan struct{}      // closed when Run returns
	started   atomic.Bool

	// The fields below belong to the goroutine running Run (and to New before
	// it); they take no lock.
	dirs     map[string]*dirState // by vault-relative dir; "" is the root
	failed   map[string]error     // dirs scanned but not watched, and why
	watched  int                  // dirs with a live watch
	rootGone bool
	pending  map[string]pendingPath
	outbox   *Batch // the batch waiting for the consumer; later ones merge into it
	timer    *time.Timer
	timerAt  time.Time // when timer fires; zero when it is stopped

	mu     sync.Mutex // guards status
	status Status
}

// dirState is what the watcher knows about one directory: which of its files
// it has reported, so that when the directory goes (a removal or a rename,
// which inotify reports only for the directory itself) each of them can be
// reported as removed.
type dirState struct {
	watched bool
	files   map[string]struct{} // names of the non-ignored files directly inside
}

// pendingPath is a path with events not yet delivered.
type pendingPath struct {
	first, last time.Time // first and latest event since the last delivery
}

// New watches every directory of the vault at dir that opts.Ignore does not
// exclude. Events are queued by the kernel from here on, so a caller that
// indexes the vault after New and before Run misses nothing. Run must be
// called to deliver them and to release the watches.
func New(dir string, opts Options) (*Watcher, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("watching %s: not a directory", dir)
	}
	if opts.Debounce < 0 || opts.MaxBatchWait < 0 {
		return nil, fmt.Errorf("watching %s: negative debounce or max batch wait", dir)
	}
	if opts.Debounce == 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxBatchWait == 0 {
		opts.MaxBatchWait = max(DefaultMaxBatchWait, opts.Debounce)
	}
	if opts.MaxBatchWait < opts.Debounce {
		return nil, fmt.Errorf("watching %s: max batch wait %v is shorter than debounce %v", dir, opts.MaxBatchWait, opts.Debounce)
	}
	if opts.Ignore == nil {
		opts.Ignore, _ = DefaultIgnore("", nil) // cannot fail without globs
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if faultOptions != nil {
		faultOptions(&opts)
	}

	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", dir, err)
	}
	w := &Watcher{
		root:      root,
		ignore:    opts.Ignore,
		debounce:  opts.Debounce,
		maxWait:   opts.MaxBatchWait,
		gap:       min(minBatchGap, opts.Debounce),
		log:       opts.Logger,
		fsw:       fsw,
		addWatch:  fsw.Add,
		extraErrs: opts.errs,
		batches:   make(chan Batch),
		resyncs:   make(chan chan struct{}),
		stopped:   make(chan struct{}),
		dirs:      make(map[string]*dirState),
		failed:    make(map[string]error),
		pending:   make(map[string]pendingPath),
		timer:     time.NewTimer(time.Hour),
	}
	w.timer.Stop()
	if opts.addWatch != nil {
		w.addWatch = func(dir string) error { return opts.addWatch(dir, fsw.Add) }
	}

	failure := w.addDir("", time.Now(), false)
	if d := w.dirs[""]; d == nil || !d.watched {
		fsw.Close()
		if failure == nil {
			failure = errors.New("vault directory vanished")
		}
		return nil, fmt.Errorf("watching %s: %w", dir, failure)
	}
	if failure != nil {
		w.requestRescan(failureReason(failure), time.Now())
	}
	w.publish()
	return w, nil
}

// Batches delivers the watcher's batches in order. It is closed when Run
// returns. A consumer that falls behind is handed one merged batch.
func (w *Watcher) Batches() <-chan Batch { return w.batches }

// Status reports the watcher's health; it is safe to call at any time.
func (w *Watcher) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}

// Run processes events and delivers batches until ctx is done, then closes
// the fsnotify watcher and the Batches channel. It returns nil when ctx ends
// it, and an error if the event stream dies underneath it.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("watching vault: Run called twice")
	}
	defer func() {
		w.timer.Stop()
		if err := w.fsw.Close(); err != nil {
			w.log.Warn("closing the vault watcher", "err", err)
		}
		close(w.batches)
		close(w.stopped)
		w.mu.Lock()
		w.status.Watching = false
		w.mu.Unlock()
	}()
	w.mu.Lock()
	w.status.Watching = true
	w.mu.Unlock()

	for {
		// A nil channel disables the send until there is something to send.
		var out chan<- Batch
		var next Batch
		if w.outbox != nil {
			out, next = w.batches, *w.outbox
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return errors.New("watching vault: fsnotify closed its event stream")
			}
			w.handle(ev, time.Now())
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return errors.New("watching vault: fsnotify closed its error stream")
			}
			w.watcherError(err)
		case err := <-w.extraErrs:
			w.watcherError(err)
		case done := <-w.resyncs:
			if err := w.resync(time.Now()); err != nil {
				w.log.Warn("directories still not watched", "reason", failureReason(err))
			}
			close(done)
		case <-w.timer.C:
			w.timerAt = time.Time{}
			w.flush(time.Now())
		case out <- next:
			w.outbox = nil
		}
	}
}

// handle folds one fsnotify event into the watcher's state.
func (w *Watcher) handle(ev fsnotify.Event, now time.Time) {
	if ev.Op == fsnotify.Chmod {
		return // attributes only: the content a consumer reads is unchanged
	}
	rel, ok := w.rel(ev.Name)
	if !ok {
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		// A rename's new name arrives as its own Create, so the old name is
		// simply gone; for an editor's rename-save the Create of the same path
		// follows and the flush sees the file.
		if _, isDir := w.dirs[rel]; isDir {
			w.dirGone(rel, now)
			return
		}
		if w.ignore(rel, false) {
			return
		}
		dir, name := splitRel(rel)
		if d := w.dirs[dir]; d != nil {
			delete(d.files, name)
		}
		w.touch(rel, now)
		return
	}
	if !ev.Has(fsnotify.Create) {
		// A write: inotify reports those for files only, and a file being
		// written exists, so the stat a create needs is saved here, where a
		// large copy sends thousands.
		if !w.ignore(rel, false) {
			w.know(rel)
			w.touch(rel, now)
		}
		return
	}
	// Lstat, not Stat: a symlinked directory is not walked, as
	// filepath.WalkDir would not, which also keeps link cycles out.
	fi, err := os.Lstat(ev.Name)
	if err == nil && fi.IsDir() {
		if w.ignore(rel, true) {
			return
		}
		if failure := w.addDir(rel, now, true); failure != nil {
			w.requestRescan(failureReason(failure), now)
		}
		w.publish()
		return
	}
	if w.ignore(rel, false) {
		return
	}
	if err == nil {
		w.know(rel)
	}
	w.touch(rel, now)
}

// know records that the file rel exists, so that its directory's removal
// reports it.
func (w *Watcher) know(rel string) {
	dir, name := splitRel(rel)
	if d := w.dirs[dir]; d != nil {
		d.files[name] = struct{}{}
	}
}

// addDir watches the directory rel and everything under it that is not
// ignored, and learns the files there. With report set, files it did not know
// are marked changed: a directory that appears while margin runs (mkdir -p
// a/b/c, a directory moved in) may hold files created before its watch was
// added, and no event will ever name them. It returns the first error that
// left a directory unwatched that was not already so.
func (w *Watcher) addDir(rel string, now time.Time, report bool) error {
	abs := w.abs(rel)
	d := w.dirs[rel]
	if d == nil {
		d = &dirState{files: make(map[string]struct{})}
		w.dirs[rel] = d
	}
	var failure error
	// Adding is repeated even for a watched directory: it is idempotent and
	// cheap, and after an overflow it is what puts back a lost watch.
	if err := w.addWatch(abs); err != nil {
		if isGone(err) {
			// It went again before we got to it; its removal event is queued
			// behind the create that brought us here.
			w.forgetDir(rel)
			return nil
		}
		if !d.watched {
			if _, known := w.failed[rel]; !known {
				failure = fmt.Errorf("%s: %w", displayDir(rel), err)
			}
			w.failed[rel] = err
		}
	} else if !d.watched {
		d.watched = true
		w.watched++
		delete(w.failed, rel)
	}

	entries, err := os.ReadDir(abs)
	if err != nil {
		if !isGone(err) {
			w.log.Warn("scanning directory", "dir", displayDir(rel), "err", err)
		}
		return failure
	}
	for _, e := range entries {
		child := joinRel(rel, e.Name())
		if e.IsDir() {
			if w.ignore(child, true) {
				continue
			}
			if err := w.addDir(child, now, report); failure == nil {
				failure = err
			}
			continue
		}
		if w.ignore(child, false) {
			continue
		}
		if _, known := d.files[e.Name()]; !known {
			d.files[e.Name()] = struct{}{}
			if report {
				w.touch(child, now)
			}
		}
	}
	return failure
}

// dirGone handles the removal or renaming away of the directory rel: every
// file known under it is reported, and its watches and those of its
// subdirectories are dropped. Dropping them matters for a rename: inotify
// keeps watching the moved directory under its old name, and would otherwise
// report the files of its new place under the old path.
func (w *Watcher) dirGone(rel string, now time.Time) {
	for r, d := range w.dirs {
		if !isUnder(r, rel) {
			continue
		}
		for name := range d.files {
			w.touch(joinRel(r, name), now)
		}
		w.forgetDir(r)
	}
	if rel == "" {
		w.rootGone = true
		w.log.Warn("the vault directory was removed or renamed", "dir", w.root)
	}
	w.publish()
}

// forgetDir drops what is known about the single directory rel.
func (w *Watcher) forgetDir(rel string) {
	d := w.dirs[rel]
	if d == nil {
		return
	}
	if d.watched {
		w.watched--
		// The kernel has already dropped the watch of a deleted directory, so
		// an error here only says there was nothing left to remove.
		_ = w.fsw.Remove(w.abs(rel))
	}
	delete(w.dirs, rel)
	delete(w.failed, rel)
}

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

// rel turns an absolute event path into a vault-relative one.
func (w *Watcher) rel(name string) (string, bool) {
	r, err := filepath.Rel(w.root, name)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

func (w *Watcher) abs(rel string) string {
	return filepath.Join(w.root, filepath.FromSlash(rel))
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func splitRel(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return "", rel
	}
	return rel[:i], rel[i+1:]
}

// isUnder reports whether rel is dir or inside it.
func isUnder(rel, dir string) bool {
	return dir == "" || rel == dir || strings.HasPrefix(rel, dir+"/")
}

func displayDir(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// isGone reports whether err says a path does not exist, including when a
// directory on the way to it was replaced by a file.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}
