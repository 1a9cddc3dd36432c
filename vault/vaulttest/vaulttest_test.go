package vaulttest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestUserFilesAndChanged(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Daily/2026-11-21.md", "## 07:10\nbench\n")
	write("Tasks/Ship.md", "# Ship\n")
	write("Gone.md", "bye\n")
	write("Margin/Reports/Ship.md", "report\n")
	write(".margin/state.db", "db")
	before := UserFiles(t, dir)
	if got := len(before); got != 3 {
		t.Fatalf("fingerprinted %d files (%v), want the 3 a person keeps", got, before)
	}

	write("Tasks/Ship.md", "# Ship it\n")
	write("Daily/2026-11-22.md", "## 08:00\nrun\n")
	write("New.md", "hi\n")
	write("Margin/Reports/Ship.md", "report v2\n")
	if err := os.Remove(filepath.Join(dir, "Gone.md")); err != nil {
		t.Fatal(err)
	}
	got := Changed(before, UserFiles(t, dir), "Daily/2026-11-22.md")
	if want := []string{"Gone.md", "New.md", "Tasks/Ship.md"}; !slices.Equal(got, want) {
		t.Errorf("Changed = %v, want %v", got, want)
	}
}
