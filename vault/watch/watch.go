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
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
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
	files   names // of the non-ignored files directly inside
}

// names is a directory's file names, sorted: a map for each directory
// took 8 MB at 100k notes, the sorted names 2. os.ReadDir lists names in
// order, so a directory's first listing only appends.
type names []string

// add adds name and reports whether it was new.
func (ns *names) add(name string) bool {
	i, found := slices.BinarySearch(*ns, name)
	if !found {
		*ns = slices.Insert(*ns, i, name)
	}
	return !found
}

func (ns *names) remove(name string) {
	if i, found := slices.BinarySearch(*ns, name); found {
		*ns = slices.Delete(*ns, i, i+1)
	}
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
			d.files.remove(name)
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
