package vault

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/margin-md/margin/vault/index"
)

// longNotes writes two notes of about size bytes, each made of distinct
// words: headings and tags, and prose.
func longNotes(t *testing.T, dir string, size int) {
	t.Helper()
	var tags, prose strings.Builder
	for i := 0; tags.Len() < size; i++ {
		fmt.Fprintf(&tags, "## h%d\ntext #t%d\n", i, i)
	}
	for i := 0; prose.Len() < size; i++ {
		fmt.Fprintf(&prose, "word%d and then word%dx,", i, i)
		if i%10 == 9 {
			prose.WriteByte('\n')
		}
	}
	for name, text := range map[string]string{"tags.md": tags.String(), "prose.md": prose.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLongNotesIndexWithinMemory scans long notes of distinct words in a
// child process and checks its peak RSS. SQLite's memory is not on the Go
// heap, and FTS5 held every term of a note's search row until the row was
// written: one 5 MB note took some 200 MB. In rows of at most 256 KiB it
// takes a few tens of MB.
func TestLongNotesIndexWithinMemory(t *testing.T) {
	if dir := os.Getenv("MARGIN_TEST_SCAN_DIR"); dir != "" {
		v := open(t, dir)
		if _, err := v.Scan(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the child's peak RSS as Linux reports it")
	}
	if testing.Short() {
		t.Skip("writes and indexes 10 MB")
	}
	dir := t.TempDir()
	longNotes(t, dir, 5_000_000)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLongNotesIndexWithinMemory$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MARGIN_TEST_SCAN_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scanning in a child process: %v\n%s", err, out)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	// The race detector's shadow memory about doubles what is touched.
	limit := int64(120 << 20)
	if raceEnabled {
		limit *= 2
	}
	if peak > limit {
		t.Errorf("indexing two notes of 5 MB of distinct words: peak RSS %d MB, want at most %d MB", peak>>20, limit>>20)
	}
	t.Logf("peak RSS %d MB", peak>>20)
	// The child indexed every word, the last ones too.
	v := open(t, dir)
	for _, w := range []string{"h0", "h208888", "t208888", "word0", "word162685x"} {
		hits, err := v.Index().Search(context.Background(), index.Query{Text: w})
		if err != nil || len(hits) != 1 {
			t.Errorf("search %q = %+v, %v; want one hit", w, hits, err)
		}
	}
}
