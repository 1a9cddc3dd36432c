package edit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// records keeps what a Recorder was asked to record, as "path removed?".
type records struct{ got []string }

func (rs *records) Begin(_ context.Context, rec Record) (func(bool), error) {
	return func(landed bool) {
		if landed {
			s := rec.Path + " written"
			if rec.Removed {
				s = rec.Path + " removed"
			}
			rs.got = append(rs.got, s)
		}
	}, nil
}

func TestMoveContext(t *testing.T) {
	const from, to = "Margin/Reports/Plan.md", "Margin/Reports/Garden.md"
	report := "---\nmargin: report\n---\nThe garden first.\n"
	setup := func(t *testing.T) (*Root, string, *records) {
		r, vault, _ := testVault(t)
		mustWrite(t, filepath.Join(vault, from), report)
		rs := &records{}
		r.SetRecorder(rs)
		return r, vault, rs
	}
	t.Run("moves and records both writes", func(t *testing.T) {
		r, vault, rs := setup(t)
		moved, err := r.MoveContext(t.Context(), from, to)
		if err != nil || !moved {
			t.Fatalf("MoveContext = %v, %v", moved, err)
		}
		if got := readString(t, filepath.Join(vault, to)); got != report {
			t.Errorf("moved file holds %q", got)
		}
		if _, err := os.Stat(filepath.Join(vault, from)); !os.IsNotExist(err) {
			t.Errorf("the old file is still there: %v", err)
		}
		if want := []string{to + " written", from + " removed"}; !slices.Equal(rs.got, want) {
			t.Errorf("history %q, want %q", rs.got, want)
		}
	})
	t.Run("nothing to move", func(t *testing.T) {
		r, _, _ := setup(t)
		if moved, err := r.MoveContext(t.Context(), "Margin/Reports/None.md", to); err != nil || moved {
			t.Errorf("MoveContext = %v, %v; want nothing moved, no error", moved, err)
		}
	})
	t.Run("a file at the new name is never replaced", func(t *testing.T) {
		r, vault, rs := setup(t)
		mustWrite(t, filepath.Join(vault, to), "my own garden note\n")
		if moved, err := r.MoveContext(t.Context(), from, to); !errors.Is(err, ErrConflict) || moved {
			t.Fatalf("MoveContext = %v, %v; want a conflict", moved, err)
		}
		if got := readString(t, filepath.Join(vault, to)); got != "my own garden note\n" {
			t.Errorf("the file at the new name became %q", got)
		}
		if got := readString(t, filepath.Join(vault, from)); got != report {
			t.Errorf("the old file became %q", got)
		}
		if len(rs.got) != 0 {
			t.Errorf("history %q, want nothing", rs.got)
		}
	})
	t.Run("a save to the old file meanwhile keeps it", func(t *testing.T) {
		r, vault, _ := setup(t)
		testHookBeforeCommit = func() error {
			return os.WriteFile(filepath.Join(vault, from), []byte("saved by the person\n"), 0o644)
		}
		defer func() { testHookBeforeCommit = nil }()
		if moved, err := r.MoveContext(t.Context(), from, to); !errors.Is(err, ErrConflict) || moved {
			t.Fatalf("MoveContext = %v, %v; want a conflict", moved, err)
		}
		if got := readString(t, filepath.Join(vault, from)); got != "saved by the person\n" {
			t.Errorf("the old file became %q", got)
		}
		if _, err := os.Stat(filepath.Join(vault, to)); !os.IsNotExist(err) {
			t.Errorf("the copy stayed: %v", err)
		}
		noTempFiles(t, vault)
	})
}

func TestRemoveEmptyFolder(t *testing.T) {
	r, vault, _ := testVault(t)
	mustWrite(t, filepath.Join(vault, "Margin/Changes/Plan/2026-11-22-0930-3f9a1c2e.md"), "- [ ] a ^c1\n")
	if err := os.MkdirAll(filepath.Join(vault, "Margin/Changes/Old"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		removed bool
	}{
		{"Margin/Changes/Old", true},
		{"Margin/Changes/Plan", false},
		{"Margin/Changes/None", false},
	} {
		if removed, err := r.RemoveEmptyFolder(tc.name); err != nil || removed != tc.removed {
			t.Errorf("RemoveEmptyFolder(%s) = %v, %v; want %v", tc.name, removed, err, tc.removed)
		}
		if _, err := os.Stat(filepath.Join(vault, tc.name)); tc.name != "Margin/Changes/None" && os.IsNotExist(err) != tc.removed {
			t.Errorf("%s after RemoveEmptyFolder: %v", tc.name, err)
		}
	}
	if got := readString(t, filepath.Join(vault, "Margin/Changes/Plan/2026-11-22-0930-3f9a1c2e.md")); got != "- [ ] a ^c1\n" {
		t.Errorf("the file in the folder became %q", got)
	}
	if _, err := r.RemoveEmptyFolder("Tasks/Ship.md"); err == nil {
		t.Error("a note was taken for a folder")
	}
}
