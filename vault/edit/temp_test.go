package edit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// A kill -9 between writing a temp file and renaming it leaves the temp
// file behind (found by the crash suite, server/crash_e2e_test.go).
// RemoveStaleTemp removes those of dead writers and only those.
func TestRemoveStaleTempOnlyOfDeadWriters(t *testing.T) {
	r, vault, _ := testVault(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{ // name → removed
		".margin-" + strconv.Itoa(dead.Process.Pid) + "-00112233aabbccdd.tmp": true,
		".margin-00112233aabbccdd.tmp":                                        true, // an older margin's: no pid
		".margin-" + strconv.Itoa(os.Getpid()) + "-00112233aabbccdd.tmp":      false,
		".margin-1-00112233aabbccdd.tmp":                                      false, // init lives
	}
	for name := range files {
		mustWrite(t, filepath.Join(vault, "Tasks", name), "half a note")
	}
	for name, want := range files {
		got, err := r.RemoveStaleTemp("Tasks/" + name)
		if err != nil || got != want {
			t.Errorf("RemoveStaleTemp(%s) = %v, %v; want %v", name, got, err, want)
		}
		if _, err := os.Stat(filepath.Join(vault, "Tasks", name)); os.IsNotExist(err) != want {
			t.Errorf("%s: exists %v after RemoveStaleTemp, want removed %v", name, err == nil, want)
		}
	}
	if got, err := r.RemoveStaleTemp("Tasks/Ship.md"); got || err != nil {
		t.Errorf("RemoveStaleTemp of a note = %v, %v; want it left alone", got, err)
	}
	if _, err := os.Stat(filepath.Join(vault, "Tasks/Ship.md")); err != nil {
		t.Error(err)
	}
}

func TestTempNameNamesTheWriter(t *testing.T) {
	if !writerAlive(tempName()) {
		t.Errorf("a temp name of this process (%s) is not recognised as its", tempName())
	}
}
