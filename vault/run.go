package vault

import (
	"context"
	"path/filepath"
	"time"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/store"
	"github.com/margin-md/margin/vault/watch"
)

// IndexEvent is what OnStatus hears after a scan: the first one, or a
// rescan the watcher asked for.
type IndexEvent struct {
	Kind   string     `json:"kind"` // scan | rescan
	Reason string     `json:"reason,omitempty"`
	Result ScanResult `json:"result"`
	Status Status     `json:"status"`
}

// Status is the vault's state as vault/status shows it.
type Status struct {
	Vault string `json:"vault"`
	// Notes are the user's notes; margin's own files (reports, journals,
	// change sets, its templates) are Outputs.
	Notes      int `json:"notes"`
	Outputs    int `json:"outputs"`
	Tasks      int `json:"tasks"`
	DailyNotes int `json:"dailyNotes"`
	// Templates are the notes in Obsidian's templates folders, among Notes.
	Templates int `json:"templates"`
	// ChecklistItems are the `- [ ]` lines in the user's notes.
	ChecklistItems   int       `json:"checklistItems"`
	Indexed          int       `json:"indexed"`
	Skipped          int       `json:"skipped"`
	Failed           int       `json:"failed"`
	Watching         bool      `json:"watching"`
	WatchedDirs      int       `json:"watchedDirs"`
	LastRescan       time.Time `json:"lastRescan,omitzero"` // absent before any rescan
	LastRescanReason string    `json:"lastRescanReason,omitempty"`
	// Degraded is empty when everything is watched; otherwise it says what
	// margin cannot see change, and why.
	Degraded string `json:"degraded,omitempty"`
	// Warnings are settings margin could not read (a daily-note format,
	// an excluded-files filter) and what it does instead.
	Warnings []string `json:"warnings,omitempty"`
}

// optimizeAfter is how many notes a first scan that was not a cold build
// must index before Run merges the search table: fewer leave a segment or
// two, not worth a rewrite of the table (0.15 s for 10,000 notes).
const optimizeAfter = 1000

// Run watches the vault until ctx is done: it starts the watcher, scans,
// closes Ready, then applies each batch of changes to the index and tells
// subscribers. A watcher that may have missed events triggers a rescan.
// The error that stops it is kept for Err and WaitReady, so that no caller
// waits for a first scan that will never come. Call it once.
func (v *Vault) Run(ctx context.Context) (err error) {
	defer func() {
		if ctx.Err() == nil {
			v.mu.Lock()
			v.runErr = err
			v.mu.Unlock()
		}
		close(v.stopped)
	}()
	w, err := watch.New(v.dir, watch.Options{Ignore: v.ignore, Debounce: v.opts.Debounce, Logger: v.logger})
	if err != nil {
		return err // it names the vault directory
	}
	v.mu.Lock()
	v.watcher = w
	v.mu.Unlock()

	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	watchErr := make(chan error, 1)
	go func() { watchErr <- w.Run(watchCtx) }()

	// The watcher is live before the scan starts, so nothing that changes
	// during the scan is missed: its batch is applied after.
	res, err := v.Scan(ctx, nil)
	if err != nil {
		stopWatching()
		<-watchErr
		return err
	}
	v.readyOnce.Do(func() { close(v.ready) })
	// From here the index follows the vault, unless some folder goes
	// unwatched: other processes on it (margin mcp) need not walk it again
	// to see it fresh (Watched).
	var shared *store.Lock
	var shareErr error // once the lock cannot be had, it is not tried again
	defer func() {
		if shared != nil {
			shared.Unlock()
		}
	}()
	follow := func() {
		switch degraded := w.Status().Degraded != ""; {
		case degraded && shared != nil:
			shared.Unlock()
			shared = nil
		case !degraded && shared == nil && shareErr == nil:
			if shared, shareErr = store.Share(filepath.Join(v.state, watchLock)); shareErr != nil {
				v.logger.Warn("telling other margin processes that this one watches the vault", "err", shareErr)
			}
		}
	}
	follow()
	v.announce(ctx, "scan", "", res)
	// A cold index leaves the search table in a dozen segments or more
	// (see index.Bulk), whichever margin built it, and so may a large
	// rescan: that makes searches some 15% slower until later writes
	// merge them. One merge now, before the first edit.
	merged, mergeErr := v.index.MergeCold(ctx)
	if mergeErr == nil && !merged && res.Updated >= optimizeAfter {
		mergeErr = v.index.Optimize(ctx)
	}
	if mergeErr != nil && ctx.Err() == nil {
		v.logger.Warn("merging the search index after the first scan", "err", mergeErr)
	}

	for {
		select {
		case <-ctx.Done():
			<-watchErr
			return nil
		case err := <-watchErr:
			return err
		case b := <-w.Batches():
			if b.Rescan {
				v.logger.Warn("the watcher may have missed changes", "reason", b.Reason)
				// The watcher has just rebuilt its watches, or failed to add
				// one: retrying them here would be a second attempt per rescan.
				if _, err := v.rescan(ctx, b.Reason, nil); err != nil && ctx.Err() == nil {
					v.logger.Error("rescan failed", "reason", b.Reason, "err", err)
				}
				follow()
				continue
			}
			if err := v.apply(ctx, b.Changes); err != nil && ctx.Err() == nil {
				v.logger.Error("applying changes", "err", err)
			}
		}
		follow()
	}
}

// watchLock is the file in the state dir on which each Run that watches
// the vault holds a shared lock.
const watchLock = "watch.lock"

// Watched reports whether a margin process watches the vault (its Run is
// past the first scan, and watches every folder), so that the index
// follows the vault within that process's debounce. A process that does not watch (margin mcp) then
// need not walk the vault to see it fresh. Run in this process counts.
func (v *Vault) Watched() (bool, error) {
	return store.Held(filepath.Join(v.state, watchLock))
}

// Rescan walks the vault again and reconciles the index by size, mtime and
// content hash, and records why, so status never hides a stale moment.
// While Run watches, the watcher first retries the directories it could not
// watch (at the inotify watch limit, which the person may have raised since)
// and picks up new ones, so that what the rescan finds there stays seen.
func (v *Vault) Rescan(ctx context.Context, reason string, progress func(done, total int)) (ScanResult, error) {
	v.mu.Lock()
	w := v.watcher
	v.mu.Unlock()
	if w != nil {
		if err := w.Resync(ctx); err != nil {
			v.logger.Warn("rescanning without retrying the watches", "err", err)
		}
	}
	return v.rescan(ctx, reason, progress)
}

// rescan is Rescan without the retry of the watches.
func (v *Vault) rescan(ctx context.Context, reason string, progress func(done, total int)) (ScanResult, error) {
	v.logger.Info("rescanning the vault", "reason", reason)
	res, err := v.Scan(ctx, progress)
	if err != nil {
		return res, err
	}
	v.mu.Lock()
	v.lastRescan, v.rescanWhy = time.Now(), reason
	v.mu.Unlock()
	v.announce(ctx, "rescan", reason, res)
	return res, nil
}

func (v *Vault) announce(ctx context.Context, kind, reason string, res ScanResult) {
	if v.opts.OnStatus == nil {
		return
	}
	st, err := v.Status(ctx)
	if err != nil {
		v.logger.Warn("reading status", "err", err)
	}
	v.opts.OnStatus(IndexEvent{Kind: kind, Reason: reason, Result: res, Status: st})
}

// apply brings the index in line with one watcher batch.
func (v *Vault) apply(ctx context.Context, changes []watch.Change) error {
	paths := make([]string, 0, len(changes))
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	known, err := v.index.StatPaths(ctx, paths)
	if err != nil {
		return err
	}
	updates := make([]index.Update, 0, len(paths))
	var out []Change
	for _, p := range paths {
		if !v.isContent(p) {
			continue
		}
		u, c := v.examine(p, known[p])
		if u.Remove {
			if _, ok := known[p]; !ok {
				continue
			}
		}
		updates = append(updates, u)
		if c != nil {
			out = append(out, *c)
		}
	}
	if err := v.index.Apply(ctx, updates); err != nil {
		return err
	}
	v.publish(out)
	return nil
}

// Subscribe registers fn to hear every batch of changed notes, after the
// index has them. fn runs on the vault's goroutine: it must hand work off,
// not do it.
func (v *Vault) Subscribe(fn func([]Change)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.subscribers = append(v.subscribers, fn)
}

func (v *Vault) publish(changes []Change) {
	if len(changes) == 0 {
		return
	}
	v.mu.Lock()
	subs := append([]func([]Change){}, v.subscribers...)
	v.mu.Unlock()
	for _, fn := range subs {
		fn(changes)
	}
}

// Status reports what the index holds and how the watcher is doing.
func (v *Vault) Status(ctx context.Context) (Status, error) {
	c, err := v.index.Counts(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{
		Vault: v.dir, Notes: c.Notes - c.Outputs, Outputs: c.Outputs, Tasks: c.Tasks, DailyNotes: c.DailyNotes,
		Templates: c.Templates, ChecklistItems: c.ChecklistItems,
		Indexed: c.Indexed, Skipped: c.Skipped, Failed: c.Failed,
		Warnings: v.rules.Warnings,
	}
	v.mu.Lock()
	w, runErr := v.watcher, v.runErr
	st.LastRescan, st.LastRescanReason = v.lastRescan, v.rescanWhy
	v.mu.Unlock()
	if w != nil {
		ws := w.Status()
		st.Watching, st.WatchedDirs, st.Degraded = ws.Watching, ws.Dirs, ws.Degraded
	}
	if runErr != nil {
		// The index still answers, as it was when Run stopped.
		st.Watching = false
		st.Degraded = "margin stopped watching the vault (" + runErr.Error() + "): changes are seen only after a restart"
	}
	return st, nil
}
