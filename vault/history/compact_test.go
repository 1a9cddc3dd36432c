package history

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/store"
)

// A journal margin appends to at every wake costs the history the bytes
// of each entry once the writes are committed, not the whole journal
// again at every wake (which grew with the square of the wakes).
func TestJournalAppendsCostTheirNewBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const journal = "Margin/Journals/Ship.md"
	if err := os.MkdirAll(filepath.Join(dir, "Margin", "Journals"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, journal), []byte("# Journal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root, err := edit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h, err := Open(ctx, db, root, Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	root.SetRecorder(h)
	entry := "## 2026-11-24 09:00\n" + strings.Repeat("observed ", 20) + "\n"
	const wakes = 100
	for range wakes {
		if _, err := root.Change(ctx, nil, journal, func(cur edit.Current) ([]byte, error) {
			return append(cur.Content, entry...), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	root.SetRecorder(nil)
	h.Close() // commits (here: marks committed) and compacts what is left

	var rows, stored int
	if err := db.QueryRow(`SELECT COUNT(*), SUM(length(after)) + SUM(COALESCE(length(before), 0)) FROM history WHERE path = ?`, journal).Scan(&rows, &stored); err != nil {
		t.Fatal(err)
	}
	if rows != wakes {
		t.Fatalf("%d writes recorded, want %d", rows, wakes)
	}
	if appended := wakes * len(entry); stored > 2*appended {
		t.Errorf("the history stores %d bytes for %d bytes appended", stored, appended)
	}
}
