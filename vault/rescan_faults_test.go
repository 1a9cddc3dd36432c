//go:build marginfaults

package vault

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/watch"
)

// TestRescanRetriesWatchesRefusedAtTheLimit: a directory refused a watch at
// the inotify watch limit is watched after the limit is lifted and Rescan is
// called, with no watcher error or restart in between. Meanwhile the vault
// is not Watched: margin mcp walks it itself.
func TestRescanRetriesWatchesRefusedAtTheLimit(t *testing.T) {
	ctx := context.Background()
	dir := sampleVault(t)
	rescans := make(chan IndexEvent, 8) // more than the three scans this test causes
	v, err := Open(ctx, Options{Dir: dir, Debounce: 20 * time.Millisecond, OnStatus: func(ev IndexEvent) {
		if ev.Kind == "rescan" {
			rescans <- ev
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	changes := watchChanges(t, v)

	watch.LimitWatches(true)
	t.Cleanup(func() { watch.LimitWatches(false) })
	outside := filepath.Join(t.TempDir(), "Limited")
	if err := os.MkdirAll(filepath.Join(outside, "Deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(outside, filepath.Join(dir, "Projects", "Limited")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-rescans:
		if !strings.Contains(ev.Status.Degraded, "Projects/Limited") {
			t.Fatalf("status after the watch limit = %+v, want Projects/Limited not watched", ev.Status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no rescan after the watch limit was hit")
	}
	waitWatched(t, v, false)

	watch.LimitWatches(false)
	if _, err := v.Rescan(ctx, "requested", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := v.Status(ctx); err != nil || st.Degraded != "" {
		t.Fatalf("status after the rescan = %+v, %v; want every directory watched", st, err)
	}
	note := "Projects/Limited/Deep/New.md"
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(note)), []byte("# New\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next(t, changes, note)
	waitWatched(t, v, true)
}

// waitWatched waits until v.Watched reports want.
func waitWatched(t *testing.T, v *Vault, want bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := v.Watched()
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watched() = %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
