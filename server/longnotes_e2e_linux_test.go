package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// TestHostileVaultIndexesWithinRSS indexes the pathological notes at
// 5 MB each, with a note of 5 MB of distinct words, by `margin status`,
// and checks the process's peak RSS: SQLite's memory is not on the Go heap,
// and FTS5 held every term of a note's search row until the row was
// written (one such note took some 200 MB; the vault peaked at 300 MB).
// The words at the notes' ends are found.
func TestHostileVaultIndexesWithinRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and indexes 230 MB")
	}
	const size = 5_000_000 // under the 5 MiB cap
	dir := t.TempDir()
	vaulttest.WriteHostile(t, dir, size)
	var prose strings.Builder
	i := 0
	for ; prose.Len() < size; i++ {
		fmt.Fprintf(&prose, "word%d and then word%dx,", i, i)
		if i%10 == 9 {
			prose.WriteByte('\n')
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prose.md"), []byte(prose.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := editortest.Binary(t)
	var out strings.Builder
	cmd := exec.Command(bin, "status", "--vault", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	peak, err := editortest.PeakRSS(cmd)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	peak >>= 10
	if limit := int64(200); peak > limit {
		t.Errorf("margin status on %d MB notes of distinct words and pathological shapes: peak RSS %d MiB, want at most %d MiB",
			size/1_000_000, peak, limit)
	}
	t.Logf("peak RSS %d MiB", peak)
	last := fmt.Sprintf("word%dx", i-1)
	for _, w := range []string{"word0", last} {
		out, err := exec.Command(bin, "search", "--vault", dir, w).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "prose.md") || strings.Count(string(out), "prose.md") != 1 {
			t.Errorf("margin search %s: %v\n%s\nwant prose.md once", w, err, out)
		}
	}
}
