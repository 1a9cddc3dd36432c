package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// deadline is how long a test waits for a batch before failing: far above
// the debounce, for a loaded machine running -race.
const deadline = 5 * time.Second

// vault is a real temporary vault with a running Watcher.
type vault struct {
	tb        testing.TB
	dir       string
	w         *Watcher
	sentinels int
}

// startVault writes files (a key ending in "/" is an empty directory), then
// starts a watcher on them. opts.Ignore defaults to the spec's rules with
// state dir .margin and the glob Archive/**.
func startVault(tb testing.TB, files map[string]string, opts Options) *vault {
	tb.Helper()
	v := &vault{tb: tb, dir: tb.TempDir()}
	for rel, content := range files {
		if strings.HasSuffix(rel, "/") {
			v.mkdir(rel)
			continue
		}
		v.write(rel, content)
	}
	if opts.Ignore == nil {
		ignore, err := DefaultIgnore(".margin", []string{"Archive/**"})
		if err != nil {
			tb.Fatal(err)
		}
		opts.Ignore = ignore
	}
	w, err := New(v.dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	v.w = w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(deadline):
			tb.Errorf("Run did not return within %v of cancel", deadline)
		}
	})
	return v
}

func (v *vault) abs(rel string) string { return filepath.Join(v.dir, filepath.FromSlash(rel)) }

func (v *vault) must(err error) {
	v.tb.Helper()
	if err != nil {
		v.tb.Fatal(err)
	}
}

func (v *vault) mkdir(rel string) {
	v.tb.Helper()
	v.must(os.MkdirAll(v.abs(rel), 0o755))
}

func (v *vault) write(rel, content string) {
	v.tb.Helper()
	v.must(os.MkdirAll(filepath.Dir(v.abs(rel)), 0o755))
	v.must(os.WriteFile(v.abs(rel), []byte(content), 0o644))
}

func (v *vault) appendTo(rel, content string) {
	v.tb.Helper()
	f, err := os.OpenFile(v.abs(rel), os.O_APPEND|os.O_WRONLY, 0)
	v.must(err)
	_, err = f.WriteString(content)
	v.must(err)
	v.must(f.Close())
}

func (v *vault) rename(from, to string) {
	v.tb.Helper()
	v.must(os.Rename(v.abs(from), v.abs(to)))
}

func (v *vault) remove(rel string) {
	v.tb.Helper()
	v.must(os.RemoveAll(v.abs(rel)))
}

// next waits for the next batch.
func (v *vault) next() Batch {
	v.tb.Helper()
	select {
	case b, ok := <-v.w.Batches():
		if !ok {
			v.tb.Fatal("Batches closed while the vault was being watched")
		}
		return b
	case <-time.After(deadline):
		v.tb.Fatalf("no batch within %v", deadline)
	}
	panic("unreachable")
}

// settle runs op, then writes a sentinel note and returns, sorted, every
// change delivered up to the sentinel's, the sentinel left out. That is all op
// caused: the sentinel's events are queued behind op's, and a path is never
// due later than one touched after it, so a batch that holds the sentinel
// holds or follows everything before it.
func (v *vault) settle(op func()) []Change {
	v.tb.Helper()
	op()
	v.sentinels++
	sentinel := fmt.Sprintf("zz-sentinel-%d.md", v.sentinels)
	v.write(sentinel, "")
	var got []Change
	for {
		b := v.next()
		if b.Rescan {
			v.tb.Fatalf("unexpected rescan: %s", b.Reason)
		}
		seen := false
		for _, c := range b.Changes {
			if c.Path == sentinel {
				seen = true
				continue
			}
			got = append(got, c)
		}
		if seen {
			slices.SortFunc(got, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
			return got
		}
	}
}

// vimSave saves rel the way vim does by default on Linux: probe the directory
// with 4913, move the original to a backup, write the new file, set its mode,
// drop the backup; all while its swap file is being written.
func (v *vault) vimSave(rel, content string) {
	v.tb.Helper()
	dir, name := filepath.Split(rel)
	swap := dir + "." + name + ".swp"
	v.write(swap, "swap 1")
	v.write(dir+"4913", "")
	v.remove(dir + "4913")
	v.rename(rel, rel+"~")
	v.write(rel, content)
	v.must(os.Chmod(v.abs(rel), 0o644))
	v.remove(rel + "~")
	v.write(swap, "swap 2")
	v.remove(swap)
}

func changed(paths ...string) []Change {
	cs := make([]Change, len(paths))
	for i, p := range paths {
		cs[i] = Change{Path: p}
	}
	return cs
}

func removed(paths ...string) []Change {
	cs := changed(paths...)
	for i := range cs {
		cs[i].Removed = true
	}
	return cs
}

func both(a, b []Change) []Change {
	all := append(slices.Clone(a), b...)
	slices.SortFunc(all, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return all
}

// deepNotes is a note at each level of a 12-deep directory chain.
var deepNotes = func() []string {
	var notes []string
	dir := "x"
	for i := range 12 {
		dir += fmt.Sprintf("/d%d", i)
		notes = append(notes, dir+"/f.md")
	}
	return notes
}()

func TestChanges(t *testing.T) {
	type step struct {
		op    func(v *vault)
		want  []Change
		check func(v *vault) // optional, after the step's changes arrived
	}
	tests := []struct {
		name  string
		files map[string]string
		steps []step
	}{
		{
			name:  "create",
			steps: []step{{op: func(v *vault) { v.write("new.md", "# new") }, want: changed("new.md")}},
		},
		{
			name:  "write",
			files: map[string]string{"note.md": "a"},
			steps: []step{{op: func(v *vault) { v.appendTo("note.md", "b") }, want: changed("note.md")}},
		},
		{
			name:  "many writes coalesce into one change",
			files: map[string]string{"note.md": ""},
			steps: []step{{op: func(v *vault) {
				for i := range 100 {
					v.appendTo("note.md", fmt.Sprintf("line %d\n", i))
				}
			}, want: changed("note.md")}},
		},
		{
			name:  "chmod is ignored",
			files: map[string]string{"note.md": "a"},
			steps: []step{{op: func(v *vault) { v.must(os.Chmod(v.abs("note.md"), 0o600)) }, want: nil}},
		},
		{
			name:  "rename-save is one change, not a removal",
			files: map[string]string{"Tasks/note.md": "old"},
			steps: []step{{op: func(v *vault) {
				v.write("Tasks/note.md.tmp", "new")
				v.rename("Tasks/note.md.tmp", "Tasks/note.md")
			}, want: changed("Tasks/note.md")}},
		},
		{
			name:  "margin's own atomic write",
			files: map[string]string{"note.md": "old"},
			steps: []step{{op: func(v *vault) {
				v.write(".margin-8f3a.tmp", "new")
				v.rename(".margin-8f3a.tmp", "note.md")
			}, want: changed("note.md")}},
		},
		{
			name:  "vim save reports only the note",
			files: map[string]string{"Daily/2026-03-01.md": "old"},
			steps: []step{{op: func(v *vault) { v.vimSave("Daily/2026-03-01.md", "new") }, want: changed("Daily/2026-03-01.md")}},
		},
		{
			name:  "delete",
			files: map[string]string{"note.md": "a", "keep.md": "b"},
			steps: []step{{op: func(v *vault) { v.remove("note.md") }, want: removed("note.md")}},
		},
		{
			name:  "create then delete reports the final state",
			steps: []step{{op: func(v *vault) { v.write("brief.md", "x"); v.remove("brief.md") }, want: removed("brief.md")}},
		},
		{
			name:  "rename a note",
			files: map[string]string{"a.md": "a"},
			steps: []step{{op: func(v *vault) { v.rename("a.md", "b.md") }, want: both(removed("a.md"), changed("b.md"))}},
		},
		{
			name: "new nested directories with files created at once",
			steps: []step{{op: func(v *vault) {
				v.mkdir("a/b/c")
				v.write("a/b/c/n.md", "deep")
				v.write("a/top.md", "")
				for _, p := range deepNotes {
					v.write(p, "")
				}
			}, want: both(changed("a/b/c/n.md", "a/top.md"), changed(deepNotes...))}},
		},
		{
			name: "a directory moved in is scanned",
			steps: []step{{op: func(v *vault) {
				outside := t.TempDir()
				v.must(os.MkdirAll(filepath.Join(outside, "Proj", "sub"), 0o755))
				v.must(os.WriteFile(filepath.Join(outside, "Proj", "p.md"), nil, 0o644))
				v.must(os.WriteFile(filepath.Join(outside, "Proj", "sub", "q.md"), nil, 0o644))
				v.must(os.WriteFile(filepath.Join(outside, "Proj", "logo.png"), nil, 0o644))
				v.must(os.Rename(filepath.Join(outside, "Proj"), v.abs("Proj")))
			}, want: changed("Proj/p.md", "Proj/sub/q.md")}, {
				op:   func(v *vault) { v.write("Proj/sub/r.md", "") },
				want: changed("Proj/sub/r.md"),
			}},
		},
		{
			name:  "directory removal reports its notes and drops its watches",
			files: map[string]string{"a/x.md": "", "a/b/y.md": "", "a/pic.png": "", "other.md": ""},
			steps: []step{{
				op:   func(v *vault) { v.remove("a") },
				want: removed("a/b/y.md", "a/x.md"),
				check: func(v *vault) {
					if got := v.w.Status().Dirs; got != 1 {
						t.Errorf("Status().Dirs = %d after removing a and a/b, want 1", got)
					}
				},
			}},
		},
		{
			name:  "directory rename",
			files: map[string]string{"a/x.md": "", "a/b/y.md": ""},
			steps: []step{{
				op:   func(v *vault) { v.rename("a", "c") },
				want: both(removed("a/b/y.md", "a/x.md"), changed("c/b/y.md", "c/x.md")),
			}, {
				// The moved directory's watches must report its new path.
				op:   func(v *vault) { v.write("c/b/z.md", "") },
				want: changed("c/b/z.md"),
				check: func(v *vault) {
					if got := v.w.Status().Dirs; got != 3 {
						t.Errorf("Status().Dirs = %d, want 3 (root, c, c/b)", got)
					}
				},
			}},
		},
		{
			name:  "directory moved out of the vault",
			files: map[string]string{"a/x.md": "", "keep.md": ""},
			steps: []step{{
				op:   func(v *vault) { v.must(os.Rename(v.abs("a"), filepath.Join(t.TempDir(), "a"))) },
				want: removed("a/x.md"),
			}},
		},
		{
			name: "ignored paths",
			files: map[string]string{
				".obsidian/app.json": "{}", ".git/HEAD": "", ".margin/": "", "Archive/2019/old.md": "", "note.md": "",
			},
			steps: []step{{
				op: func(v *vault) {
					v.write(".obsidian/workspace.md", "")
					v.write(".git/x.md", "")
					v.write(".margin/state.md", "")
					v.write("Archive/2019/old.md", "edited")
					v.write("Archive/new/x.md", "")
					v.write(".trash/gone.md", "")
					v.write("picture.png", "")
					v.write("note.md~", "")
					v.write(".#note.md", "")
					v.write(".note.md.swx", "")
					v.write("4913", "")
					v.write(".margin-1.tmp", "")
				},
				want: nil,
				check: func(v *vault) {
					if got := v.w.Status().Dirs; got != 1 {
						t.Errorf("Status().Dirs = %d, want 1: ignored directories must not be watched", got)
					}
				},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := startVault(t, tt.files, Options{})
			for i, s := range tt.steps {
				got := v.settle(func() { s.op(v) })
				if !slices.Equal(got, s.want) {
					t.Fatalf("step %d: changes\n got %v\nwant %v", i, got, s.want)
				}
				if s.check != nil {
					s.check(v)
				}
			}
		})
	}
}

func TestMaxBatchWait(t *testing.T) {
	v := startVault(t, map[string]string{"log.md": ""}, Options{Debounce: 100 * time.Millisecond, MaxBatchWait: 300 * time.Millisecond})
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		// Append faster than the debounce so the note never goes quiet; only
		// MaxBatchWait can get it delivered while this runs.
		defer close(stopped)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				f, err := os.OpenFile(v.abs("log.md"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString("x\n")
				f.Close()
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	b := v.next()
	if want := changed("log.md"); !slices.Equal(b.Changes, want) || b.Rescan {
		t.Fatalf("batch = %+v, want changes %v", b, want)
	}
}

func TestOverflowRescans(t *testing.T) {
	errs := make(chan error)
	var lost atomic.Bool
	opts := Options{
		errs: errs,
		// Pretend the watch on "late" was added, as if its create event had
		// been lost in the overflow; the resync must put it back.
		addWatch: func(dir string, add func(string) error) error {
			if filepath.Base(dir) == "late" && lost.CompareAndSwap(false, true) {
				return nil
			}
			return add(dir)
		},
	}
	v := startVault(t, map[string]string{"late/a.md": "", "b.md": ""}, opts)
	send(t, errs, fmt.Errorf("reading events: %w", fsnotify.ErrEventOverflow))
	b := v.next()
	if !b.Rescan || !strings.Contains(b.Reason, "overflow") || len(b.Changes) != 0 {
		t.Fatalf("batch = %+v, want a rescan for the overflow", b)
	}
	st := v.w.Status()
	if st.LastRescan.IsZero() || st.LastRescanReason != b.Reason {
		t.Errorf("status = %+v, want the rescan recorded", st)
	}
	if got, want := v.settle(func() { v.write("late/new.md", "") }), changed("late/new.md"); !slices.Equal(got, want) {
		t.Errorf("after the resync, changes = %v, want %v", got, want)
	}
}

func TestWatcherErrorRescans(t *testing.T) {
	errs := make(chan error)
	v := startVault(t, nil, Options{errs: errs})
	send(t, errs, errors.New("inotify read: input/output error"))
	if b := v.next(); !b.Rescan || !strings.Contains(b.Reason, "input/output error") {
		t.Fatalf("batch = %+v, want a rescan naming the error", b)
	}
	if got, want := v.settle(func() { v.write("n.md", "") }), changed("n.md"); !slices.Equal(got, want) {
		t.Errorf("after the error, changes = %v, want %v", got, want)
	}
}

func send(t *testing.T, errs chan<- error, err error) {
	t.Helper()
	select {
	case errs <- err:
	case <-time.After(deadline):
		t.Fatal("the watcher did not take the injected error")
	}
}

// failFull makes every directory named "full" hit the inotify watch limit,
// as inotify_add_watch does when fs.inotify.max_user_watches is exhausted.
func failFull(dir string, add func(string) error) error {
	if filepath.Base(dir) == "full" {
		return syscall.ENOSPC
	}
	return add(dir)
}

func TestWatchLimitAtStart(t *testing.T) {
	v := startVault(t, map[string]string{"a/x.md": "", "full/y.md": "", "full/sub/z.md": ""}, Options{addWatch: failFull})
	b := v.next()
	if !b.Rescan || !strings.Contains(b.Reason, "max_user_watches") {
		t.Fatalf("first batch = %+v, want a rescan for the watch limit", b)
	}
	st := v.w.Status()
	if !strings.Contains(st.Degraded, "max_user_watches") || !strings.Contains(st.Degraded, "full") {
		t.Errorf("Status().Degraded = %q, want it to name the limit and the directory", st.Degraded)
	}
	if st.Dirs != 3 {
		t.Errorf("Status().Dirs = %d, want 3 (root, a, full/sub)", st.Dirs)
	}
	// What could be watched still is.
	got := v.settle(func() { v.write("a/new.md", ""); v.write("full/sub/new.md", "") })
	if want := changed("a/new.md", "full/sub/new.md"); !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
}

func TestWatchLimitOnNewDirectory(t *testing.T) {
	v := startVault(t, nil, Options{addWatch: failFull})
	if st := v.w.Status(); st.Degraded != "" {
		t.Fatalf("Status().Degraded = %q before any failure", st.Degraded)
	}
	outside := t.TempDir()
	v.must(os.MkdirAll(filepath.Join(outside, "full"), 0o755))
	v.must(os.WriteFile(filepath.Join(outside, "full", "n.md"), nil, 0o644))
	v.must(os.Rename(filepath.Join(outside, "full"), v.abs("full")))
	for {
		b := v.next()
		if b.Rescan {
			if !strings.Contains(b.Reason, "max_user_watches") {
				t.Errorf("rescan reason = %q, want the watch limit", b.Reason)
			}
			break
		}
	}
	if st := v.w.Status(); !strings.Contains(st.Degraded, "full") {
		t.Errorf("Status().Degraded = %q, want it to name full", st.Degraded)
	}
	// Once the unwatched directory is gone, nothing is degraded any more.
	got := v.settle(func() { v.remove("full") })
	if want := removed("full/n.md"); !slices.Equal(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
	if st := v.w.Status(); st.Degraded != "" {
		t.Errorf("Status().Degraded = %q after full was removed, want empty", st.Degraded)
	}
}

// TestResyncRetriesTheWatchLimit is a consumer's own rescan after the
// person raises fs.inotify.max_user_watches: Resync must try the refused
// directories once each, without asking for another rescan, and watch them
// once the limit allows.
func TestResyncRetriesTheWatchLimit(t *testing.T) {
	var limited atomic.Bool
	var attempts atomic.Int32 // adds tried for "full"
	limited.Store(true)
	opts := Options{addWatch: func(dir string, add func(string) error) error {
		if filepath.Base(dir) == "full" {
			attempts.Add(1)
		}
		if limited.Load() && strings.Contains(dir, "full") {
			return syscall.ENOSPC
		}
		return add(dir)
	}}
	v := startVault(t, map[string]string{"a/x.md": "", "full/y.md": ""}, opts)
	if b := v.next(); !b.Rescan || !strings.Contains(b.Reason, "max_user_watches") {
		t.Fatalf("first batch = %+v, want a rescan for the watch limit", b)
	}
	resync := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		before := attempts.Load()
		if err := v.w.Resync(ctx); err != nil {
			t.Fatalf("Resync: %v", err)
		}
		if n := attempts.Load() - before; n != 1 {
			t.Errorf("Resync tried to watch full %d times, want once", n)
		}
	}

	// Still at the limit: a directory made where no watch sees it is counted,
	// and nothing asks for a rescan (settle fails on one).
	v.mkdir("full/sub")
	resync()
	if st := v.w.Status(); !strings.HasPrefix(st.Degraded, "2 of 4 directories not watched") || !strings.Contains(st.Degraded, "full/sub") || st.Dirs != 2 {
		t.Errorf("status at the limit = %+v, want full and full/sub not watched of 4", st)
	}
	v.settle(func() {})

	limited.Store(false)
	resync()
	if st := v.w.Status(); st.Degraded != "" || st.Dirs != 4 {
		t.Errorf("status after the limit was lifted = %+v, want all 4 directories watched", st)
	}
	if got, want := v.settle(func() { v.write("full/sub/new.md", "") }), changed("full/sub/new.md"); !slices.Equal(got, want) {
		t.Errorf("changes in the directory watched again = %v, want %v", got, want)
	}
}

func TestResyncAfterRunStopped(t *testing.T) {
	w, err := New(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Resync(context.Background()); err == nil {
		t.Error("Resync of a stopped watcher succeeded")
	}
}

func TestRunLifecycle(t *testing.T) {
	dir := t.TempDir()
	w, err := New(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	v := &vault{tb: t, dir: dir, w: w}
	v.settle(func() {})
	if st := w.Status(); !st.Watching || st.Dirs != 1 || st.Degraded != "" {
		t.Errorf("running status = %+v", st)
	}
	if err := w.Run(ctx); err == nil {
		t.Error("a second Run was accepted")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(deadline):
		t.Fatal("Run did not return after cancel")
	}
	if _, ok := <-w.Batches(); ok {
		t.Error("Batches still open after Run returned")
	}
	if w.Status().Watching {
		t.Error("Status().Watching after Run returned")
	}
}

func TestNewRejects(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f.md")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
		opts Options
	}{
		{"missing directory", filepath.Join(t.TempDir(), "nope"), Options{}},
		{"a file", file, Options{}},
		{"max wait below debounce", t.TempDir(), Options{Debounce: time.Second, MaxBatchWait: time.Millisecond}},
		{"root over the watch limit", t.TempDir(), Options{addWatch: func(string, func(string) error) error { return syscall.ENOSPC }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.dir, tt.opts); err == nil {
				t.Error("New accepted it")
			}
		})
	}
}

// BenchmarkWriteToBatch measures the time from writing a note to receiving
// its batch, less the debounce: the watcher's own latency.
func BenchmarkWriteToBatch(b *testing.B) {
	const debounce = 20 * time.Millisecond // short, for samples; it is subtracted
	v := startVault(b, map[string]string{"note.md": ""}, Options{Debounce: debounce})
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		v.write("note.md", fmt.Sprint(i))
		for b := v.next(); !slices.Contains(b.Changes, Change{Path: "note.md"}); b = v.next() {
		}
		lat = append(lat, time.Since(start)-debounce)
	}
	slices.Sort(lat)
	us := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(us(0.50), "p50-µs")
	b.ReportMetric(us(0.99), "p99-µs")
}

// TestNamesStaySorted: a directory's names, added in any order and some
// twice, stay sorted and unique, so a lookup finds each.
func TestNamesStaySorted(t *testing.T) {
	var ns names
	for _, n := range []string{"b.md", "d.md", "a.md", "c.md", "b.md", "e.md"} {
		ns.add(n)
	}
	if ns.add("c.md") {
		t.Error("add of a known name says it was new")
	}
	ns.remove("d.md")
	ns.remove("x.md")
	if want := (names{"a.md", "b.md", "c.md", "e.md"}); !slices.Equal(ns, want) {
		t.Errorf("names = %q, want %q", ns, want)
	}
	if !ns.add("d.md") {
		t.Error("add of a removed name says it was known")
	}
}
