package server_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/vaultgen"
)

// TestColdIndexKilledMidwayStartsAgain SIGKILLs `margin status` while it
// builds a first index, which it writes without syncing under a marker
// file, then runs it again: the run must drop the interrupted build's file
// and its marker and index the vault anew, into an index that counts what
// a whole first run counted and passes SQLite's and FTS5's own checks;
// the last one must equal a fresh index table by table. (What the marker guards
// against, pages lost to a power cut, a kill cannot do; the unit tests of
// vault/index drop such a file.)
func TestColdIndexKilledMidwayStartsAgain(t *testing.T) {
	iterations, notes := 4, 2000
	if soakLong {
		iterations, notes = 30, 5000
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d: %d kills in the first index of %d notes", seed, iterations, notes)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()
	if _, err := vaultgen.Generate(dir, vaultgen.Options{Notes: notes, Seed: int64(seed % 1000)}); err != nil {
		t.Fatal(err)
	}
	bin := editortest.Binary(t)
	state := filepath.Join(dir, ".margin")
	marker := filepath.Join(state, "index.db-cold")
	margin := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--vault", dir)...).Output()
		if err != nil {
			t.Fatalf("margin %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// How long a whole first index takes here, to kill within it, and
	// what it counts.
	start := time.Now()
	want := margin("status", "--json")
	whole := time.Since(start)

	midBuild := 0
	for i := range iterations {
		if err := os.RemoveAll(state); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "status", "--vault", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(float64(whole) * (0.2 + 0.7*rng.Float64())))
		cmd.Process.Kill()
		cmd.Wait()
		if _, err := os.Stat(marker); err == nil {
			midBuild++
		}
		if got := margin("status", "--json"); got != want {
			t.Fatalf("kill %d: the run after it counts\n%s\nwant\n%s", i+1, got, want)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("kill %d: the cold build's marker is still there after a complete run: %v", i+1, err)
		}
		// doctor runs SQLite's quick_check and FTS5's integrity check; its
		// exit status also covers the model server, which is not here.
		if out, _ := exec.Command(bin, "doctor", "--vault", dir).Output(); !strings.Contains(string(out), "ok    index") {
			t.Fatalf("kill %d: doctor after the run:\n%s", i+1, out)
		}
	}
	if midBuild == 0 {
		t.Fatalf("none of %d kills within a %v first index landed while it was being built", iterations, whole)
	}
	t.Logf("%d of %d kills landed while the index was being built (a first index took %v)", midBuild, iterations, whole)
	compareWithFreshIndex(t, dir)
}
