// Package vaulttest helps tests check that margin left a person's notes
// alone: it fingerprints the files a person keeps in a vault and says which
// of them changed.
package vaulttest

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// OutputFolder is where margin writes by default; its files are margin's.
const OutputFolder = "Margin"

// UserFiles fingerprints every file of the vault at dir but margin's output
// folder and hidden folders (margin's state, .git, .obsidian), keyed by
// slash-separated path.
func UserFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (rel == OutputFolder || strings.HasPrefix(d.Name(), ".")) {
				return fs.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Changed lists, sorted, the paths that changed, appeared or went away
// between two fingerprints, but those allowed to.
func Changed(before, after map[string]string, allowed ...string) []string {
	var out []string
	for p, h := range before {
		if g, ok := after[p]; (!ok || g != h) && !slices.Contains(allowed, p) {
			out = append(out, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !slices.Contains(allowed, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Unchanged fails t unless dir holds exactly the files of want, keyed by
// slash-separated path, with those contents: what a test put outside a
// vault, which margin must leave as it was.
func Unchanged(t testing.TB, dir string, want map[string]string) {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		found = append(found, rel)
		if data, err := os.ReadFile(p); err != nil || string(data) != want[rel] {
			t.Errorf("%s outside the vault changed: %d bytes, %.40q (%v)", rel, len(data), data, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != len(want) {
		t.Errorf("outside the vault: %v, want only %d files", found, len(want))
	}
}

// Read returns the text of the file at rel in the vault at dir.
func Read(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Write writes the file at rel in the vault at dir, as a person saving it
// would, making its folder when there is none.
func Write(t testing.TB, dir, rel, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
