package vault

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A margin killed between writing a temp file and renaming it leaves the
// temp file in the vault; the next scan removes it (found by the crash
// suite, server/crash_e2e_test.go) and keeps the note it was to replace.
func TestScanRemovesTempFilesOfDeadWriters(t *testing.T) {
	dir := sampleVault(t)
	stale := filepath.Join(dir, "Tasks", ".margin-00112233aabbccdd.tmp") // no live writer's pid
	if err := os.WriteFile(stale, []byte("---\nstatus: do"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, "Tasks/Renew passport.md"))
	if err != nil {
		t.Fatal(err)
	}
	v := open(t, dir)
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temp file is still there (err %v)", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "Tasks/Renew passport.md"))
	if string(after) != string(before) {
		t.Error("a note changed")
	}
}
