//go:build marginfaults

package watch

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// Fault injection for end-to-end tests of a running margin (build tag
// marginfaults; release builds have none of it). The kernel's watch limit is
// per user and shared with everything else on the machine, so a test cannot
// safely exhaust it; these hooks make the watcher see what it would.
var faults = struct {
	errs chan error

	mu      sync.Mutex // guards the fields below
	limited bool
	added   map[string]bool // directories whose watch was added, by absolute path
}{errs: make(chan error), added: map[string]bool{}}

// startLimited is the environment variable that starts margin at the watch
// limit (any value): even the vault directory is refused a watch.
const startLimited = "MARGIN_TEST_WATCH_LIMIT"

func init() {
	faults.limited = os.Getenv(startLimited) != ""
	faultOptions = func(o *Options) {
		// This package's own tests set their seams and must keep them when
		// run with the tag.
		if o.errs == nil {
			o.errs = faults.errs
		}
		if o.addWatch == nil {
			o.addWatch = addWatchWithLimit
		}
	}
}

// addWatchWithLimit behaves as inotify_add_watch at its limit while
// LimitWatches is on: a directory already watched can be watched again (the
// kernel only updates its mask), a new one fails with ENOSPC.
func addWatchWithLimit(dir string, add func(string) error) error {
	faults.mu.Lock()
	refuse := faults.limited && !faults.added[dir]
	faults.mu.Unlock()
	if refuse {
		return fmt.Errorf("inotify_add_watch %s: %w", dir, syscall.ENOSPC)
	}
	if err := add(dir); err != nil {
		return err
	}
	faults.mu.Lock()
	faults.added[dir] = true
	faults.mu.Unlock()
	return nil
}

// LimitWatches turns the simulated watch limit on or off.
func LimitWatches(on bool) {
	faults.mu.Lock()
	defer faults.mu.Unlock()
	faults.limited = on
}

// InjectError hands err to the running watcher as if fsnotify had reported
// it, waiting until the watcher takes it or ctx ends.
func InjectError(ctx context.Context, err error) error {
	select {
	case faults.errs <- err:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
