package vault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vaulttest"
)

// peakHeap samples the heap in use while f runs and returns the most seen.
func peakHeap(f func()) uint64 {
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	return peak
}

// TestHostileVaultIndexesWithinMemory scans a vault of pathological notes
// (before the parse budget, 1 MiB of `[` alone took 500 MB) and checks the
// heap stays bounded, every note is accounted for, and those kept as plain
// text say so in coverage.
func TestHostileVaultIndexesWithinMemory(t *testing.T) {
	dir := t.TempDir()
	paths := vaulttest.WriteHostile(t, dir, 1<<20)
	v := open(t, dir)
	runtime.GC()
	var res ScanResult
	peak := peakHeap(func() {
		var err error
		if res, err = v.Scan(context.Background(), nil); err != nil {
			t.Error(err)
		}
	})
	const limit = 150 << 20
	if peak > limit {
		t.Errorf("indexing %d hostile notes of 1 MiB: heap peaked at %d MB, want at most %d MB", len(paths), peak>>20, limit>>20)
	}
	t.Logf("scan %+v, heap peak %d MB", res, peak>>20)
	cov, err := v.Index().Coverage(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, f := range cov {
		reasons[f.Path] = f.State + ": " + f.Reason
	}
	if len(cov) != len(paths) {
		t.Errorf("coverage has %d files, want %d", len(cov), len(paths))
	}
	for _, p := range []string{"Hostile/blockquotes-one-line.md", "Hostile/open-brackets.md", "Hostile/wikilinks.md", "Hostile/list-stairs.md"} {
		if r := reasons[p]; !strings.HasPrefix(r, index.StateFailed) || !strings.Contains(r, "plain text") {
			t.Errorf("%s: coverage says %q, want it indexed as plain text, and why", p, r)
		}
	}
}

// TestScanHoldsBoundedContent scans 80 MiB of big notes and checks the scan
// does not hold them all at once (each is held twice, as read and as
// parsed): reading waits while the notes in flight reach scanBytes.
func TestScanHoldsBoundedContent(t *testing.T) {
	dir := t.TempDir()
	text := []byte(strings.Repeat("wombat numbat\n", (4<<20)/14))
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("big%02d.md", i)), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := open(t, dir)
	runtime.GC()
	peak := peakHeap(func() {
		if _, err := v.Scan(context.Background(), nil); err != nil {
			t.Error(err)
		}
	})
	if limit := uint64(100 << 20); peak > limit {
		t.Errorf("scanning 20 notes of 4 MiB: heap peaked at %d MB, want at most %d MB", peak>>20, limit>>20)
	}
	t.Logf("heap peak %d MB", peak>>20)
	st, err := v.Status(context.Background())
	if err != nil || st.Notes != 20 {
		t.Errorf("status %+v, %v: want the 20 notes indexed", st, err)
	}
}
