package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// quietEnv is a server with no model and no agents, so only the watcher
// and the index are at work.
func quietEnv() []string {
	return []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_AGENTS_AUTO_CREATE=false", "MARGIN_WATCH_DEBOUNCE=30ms", "MARGIN_LOG_LEVEL=debug"}
}

// waitRescan waits for the n-th margin/indexStatus of a rescan and returns
// its reason.
func waitRescan(e *editortest.Editor, n int) string {
	p := waitNth(e, "margin/indexStatus of a rescan", "margin/indexStatus", n, func(p json.RawMessage) bool {
		return strings.Contains(string(p), `"kind":"rescan"`)
	})
	var ev struct{ Reason string }
	json.Unmarshal(p, &ev)
	return ev.Reason
}

// maxQueuedEvents is the kernel's inotify queue length for new instances.
func maxQueuedEvents(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Fatalf("reading the inotify queue length: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// allStopped reports whether every thread of process pid is stopped.
func allStopped(t *testing.T, pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) == 0 || (fields[0] != "T" && fields[0] != "t") {
			return false
		}
	}
	return true
}

// TestWatcherOverflowRescansAndReconciles overflows the kernel's real
// inotify queue: margin is stopped (SIGSTOP) so it cannot read events,
// more events than the queue holds are generated, and then notes are
// edited, created and deleted — events the kernel drops. After SIGCONT the
// watcher reads IN_Q_OVERFLOW, and margin must rescan, index what it never
// heard about, and say so.
func TestWatcherOverflowRescansAndReconciles(t *testing.T) {
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, quietEnv())
	e.Initialize(dir)
	e.WaitFor("the first scan", func(m editortest.Message) bool {
		return m.Method == "margin/indexStatus" && strings.Contains(string(m.Params), `"kind":"scan"`)
	})

	proc := e.Process()
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Signal(syscall.SIGCONT) })
	// A thread inside read() when the signal comes still takes a bufferful
	// of events (thousands), so the queue is filled only once every thread
	// has stopped.
	poll(t, "margin stopped", func() bool { return allStopped(t, proc.Pid) })

	// Attribute changes alternating between two files: each one is queued
	// (the kernel merges only identical consecutive events) and margin
	// ignores them, so they fill the queue and nothing else.
	a, b := filepath.Join(dir, "Reference/Acme.md"), filepath.Join(dir, "Reference/Sleep.md")
	at := time.Now()
	for i := range maxQueuedEvents(t) + 1000 {
		at = at.Add(time.Second)
		if err := os.Chtimes([]string{a, b}[i%2], at, at); err != nil {
			t.Fatal(err)
		}
	}
	daily := readFile(t, dir, "Daily/2026-11-20.md")
	writeFile(t, dir, "Daily/2026-11-20.md", daily+"\n## 23:50\nOverflowquux happened while nobody listened.\n")
	if err := os.MkdirAll(filepath.Join(dir, "Inbox/Lost"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "Inbox/Lost/Created unheard.md", "# Created unheard\n\nLostcreatequux.\n")
	if err := os.Remove(filepath.Join(dir, "Reference/Nutrition.md")); err != nil {
		t.Fatal(err)
	}

	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	reason := waitRescan(e, 1)
	if !strings.Contains(reason, "overflowed") {
		t.Errorf("rescan reason = %q, want the queue overflow named", reason)
	}
	if hits := searchHits(e, "overflowquux"); len(hits) != 1 || hits[0].Path != "Daily/2026-11-20.md" {
		t.Errorf("search for the edit made while events were lost = %+v, want Daily/2026-11-20.md", hits)
	}
	if hits := searchHits(e, "lostcreatequux"); len(hits) != 1 || hits[0].Path != "Inbox/Lost/Created unheard.md" {
		t.Errorf("search for the note created while events were lost = %+v", hits)
	}
	var cov protocol.CoverageResult
	e.MustCall("vault/coverage", nil, &cov)
	for _, f := range cov.Files {
		if f.Path == "Reference/Nutrition.md" {
			t.Errorf("the note deleted while events were lost is still indexed: %+v", f)
		}
	}
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if !st.Watching || st.LastRescan.IsZero() || !strings.Contains(st.LastRescanReason, "overflowed") || st.Degraded != "" {
		t.Errorf("vault/status = %+v, want watching, the overflow as the last rescan's reason, not degraded", st)
	}

	// The watcher still works: the directory created while events were
	// lost got its watch back, and a later edit there arrives as an event.
	writeFile(t, dir, "Inbox/Lost/After.md", "# After\n\nAfteroverflowquux.\n")
	poll(t, "the edit after the overflow indexed", func() bool { return len(searchHits(e, "afteroverflowquux")) == 1 })
}

// watchLimit puts margin at the inotify watch limit: the kernel's own,
// where user namespaces work — margin runs in one whose
// max_inotify_watches is the number of directories it watches at start, so
// the next inotify_add_watch fails with ENOSPC, and nothing else on the
// machine feels it (the limit is per user namespace) — or a test hook that
// makes new watches fail the same way.
type watchLimit struct {
	t    *testing.T
	real bool
	e    *editortest.Editor
}

func startAtWatchLimit(t *testing.T, dir string, real bool) *watchLimit {
	l := &watchLimit{t: t, real: real}
	if !real {
		l.e = editortest.Start(t, quietEnv())
		return l
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		t.Skipf("no user namespace here (%v: %s); the injected limit covers the fault", err, out)
	}
	dirs := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			dirs++
		}
		return nil
	})
	l.e = editortest.StartWrapped(t, []string{"unshare", "--user", "--map-root-user", "sh", "-c",
		`echo ` + strconv.Itoa(dirs) + ` > /proc/sys/user/max_inotify_watches && exec "$0" "$@"`}, quietEnv())
	return l
}

// set turns the limit on (for new watches) or lifts it.
func (l *watchLimit) set(on bool) {
	switch {
	case !l.real:
		l.e.MustCall("margin/test.watchLimit", map[string]any{"on": on}, nil)
	case !on:
		pid := strconv.Itoa(l.e.Process().Pid)
		if out, err := exec.Command("nsenter", "--user", "--target", pid, "sh", "-c", "echo 1000000 > /proc/sys/user/max_inotify_watches").CombinedOutput(); err != nil {
			l.t.Fatalf("raising the watch limit: %v: %s", err, out)
		}
	}
	// On, the real limit is already reached: every directory took a watch.
}

// TestWatcherLimitDegradesAndRecovers makes the watch of a new directory
// fail as inotify_add_watch does at the watch limit (ENOSPC). margin must
// rescan so the new directory's notes are indexed, show the degradation
// in vault/status and margin/indexStatus, and, once a watcher error makes
// it rebuild its watches after the limit is lifted, watch the directory
// again.
func TestWatcherLimitDegradesAndRecovers(t *testing.T) {
	t.Run("kernel", func(t *testing.T) { testWatcherLimit(t, true) })
	t.Run("injected", func(t *testing.T) { testWatcherLimit(t, false) })
}

// reachWatchLimit starts margin on a sample vault and moves a tree of two
// directories into it once margin is at the watch limit. It checks that
// margin rescans, indexes the tree and reports it degraded, and returns the
// status from before the limit.
func reachWatchLimit(t *testing.T, real bool) (*editortest.Editor, string, *watchLimit, protocol.StatusResult) {
	t.Helper()
	dir := editortest.SampleVault(t)
	limit := startAtWatchLimit(t, dir, real)
	e := limit.e
	e.Initialize(dir)
	e.WaitFor("the first scan", func(m editortest.Message) bool {
		return m.Method == "margin/indexStatus" && strings.Contains(string(m.Params), `"kind":"scan"`)
	})
	var before protocol.StatusResult
	e.MustCall("vault/status", nil, &before)
	if before.Degraded != "" {
		t.Fatalf("degraded before the limit was reached: %+v", before)
	}

	limit.set(true)
	// The tree arrives whole, as a move or a sync client brings it: a note
	// written into a directory margin could not watch after its rescan is
	// seen only by the next one, which the degraded status says.
	outside := filepath.Join(t.TempDir(), "Limited")
	if err := os.MkdirAll(filepath.Join(outside, "Deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, "Deep/Hidden.md", "# Hidden\n\nLimitquux.\n")
	if err := os.Rename(outside, filepath.Join(dir, "Projects/Limited")); err != nil {
		t.Fatal(err)
	}

	reason := waitRescan(e, 1)
	if !strings.Contains(reason, "max_user_watches") {
		t.Errorf("rescan reason = %q, want the watch limit named", reason)
	}
	p := waitNth(e, "indexStatus of the rescan", "margin/indexStatus", 2, nil)
	if !strings.Contains(string(p), `"degraded":"`) || !strings.Contains(string(p), "not watched") {
		t.Errorf("margin/indexStatus = %s, want the degradation in its status", p)
	}
	poll(t, "the note in the unwatched directory indexed by the rescan", func() bool { return len(searchHits(e, "limitquux")) == 1 })
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if !st.Watching || !strings.Contains(st.Degraded, "Projects/Limited") || !strings.Contains(st.Degraded, "max_user_watches") ||
		!strings.Contains(st.LastRescanReason, "max_user_watches") || st.WatchedDirs != before.WatchedDirs {
		t.Errorf("vault/status = %+v, want the unwatched directories and the limit named (watched before: %d)", st, before.WatchedDirs)
	}
	return e, dir, limit, before
}

func testWatcherLimit(t *testing.T, real bool) {
	e, dir, limit, before := reachWatchLimit(t, real)

	// The limit is lifted; a watcher error makes margin rebuild its watches
	// and rescan, which finds what was written meanwhile.
	limit.set(false)
	writeFile(t, dir, "Projects/Limited/Deep/Meanwhile.md", "# Meanwhile\n\nMeanwhilequux.\n")
	e.MustCall("margin/test.watchError", map[string]any{"message": "inotify read: input/output error"}, nil)
	if reason := waitRescan(e, 2); !strings.Contains(reason, "input/output error") {
		t.Errorf("second rescan reason = %q, want the watcher error", reason)
	}
	poll(t, "the note written while unwatched indexed", func() bool { return len(searchHits(e, "meanwhilequux")) == 1 })
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if st.Degraded != "" || st.WatchedDirs != before.WatchedDirs+2 {
		t.Errorf("vault/status = %+v, want every directory watched again: %d and the two new ones", st, before.WatchedDirs)
	}
	writeFile(t, dir, "Projects/Limited/Deep/Watched.md", "# Watched\n\nWatchedagainquux.\n")
	poll(t, "an edit in the directory watched again", func() bool { return len(searchHits(e, "watchedagainquux")) == 1 })
}

// TestRescanRetriesWatchesAfterTheLimitIsLifted is the person's way out of
// the watch limit: raise fs.inotify.max_user_watches, then run a rescan from
// the editor. vault/rescan must try the unwatched directories again — once,
// and to no effect but an up-to-date status while the limit holds — and,
// once it is lifted, watch them, so notes written there later are indexed
// without another rescan.
func TestRescanRetriesWatchesAfterTheLimitIsLifted(t *testing.T) {
	t.Run("kernel", func(t *testing.T) { testRescanAfterWatchLimit(t, true) })
	t.Run("injected", func(t *testing.T) { testRescanAfterWatchLimit(t, false) })
}

func testRescanAfterWatchLimit(t *testing.T, real bool) {
	e, dir, limit, before := reachWatchLimit(t, real)

	// No event reports a directory made inside an unwatched one; the retry
	// finds it, fails on it too, and counts it.
	if err := os.Mkdir(filepath.Join(dir, "Projects/Limited/Deep/More"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.MustCall("vault/rescan", nil, nil)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if !strings.HasPrefix(st.Degraded, "3 of ") || !strings.Contains(st.Degraded, "Projects/Limited/Deep/More") || st.WatchedDirs != before.WatchedDirs {
		t.Errorf("vault/status after a rescan at the limit = %+v, want the three unwatched directories counted", st)
	}

	limit.set(false)
	writeFile(t, dir, "Projects/Limited/Deep/Meanwhile.md", "# Meanwhile\n\nMeanwhilequux.\n")
	e.MustCall("vault/rescan", nil, nil)
	if hits := searchHits(e, "meanwhilequux"); len(hits) != 1 {
		t.Errorf("search for the note written while unwatched = %+v, want it indexed by the rescan", hits)
	}
	st = protocol.StatusResult{} // degraded is omitted when empty
	e.MustCall("vault/status", nil, &st)
	if st.Degraded != "" || st.WatchedDirs != before.WatchedDirs+3 {
		t.Errorf("vault/status after the rescan = %+v, want every directory watched: %d and the three new ones", st, before.WatchedDirs)
	}
	writeFile(t, dir, "Projects/Limited/Deep/More/Watched.md", "# Watched\n\nRewatchedquux.\n")
	poll(t, "a note written in the directory watched again", func() bool { return len(searchHits(e, "rewatchedquux")) == 1 })
	var after protocol.StatusResult
	e.MustCall("vault/status", nil, &after)
	if !after.LastRescan.Equal(st.LastRescan) {
		t.Errorf("last rescan moved from %v to %v: the note was found by a rescan, not by the watch", st.LastRescan, after.LastRescan)
	}
}
