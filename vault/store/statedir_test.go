package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenDirMakesTheStateDirIgnoreItself(t *testing.T) {
	vault := t.TempDir()
	got, err := OpenDir(vault, "cache/margin")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(vault, "cache", "margin"); got != want {
		t.Errorf("OpenDir = %s, want %s", got, want)
	}
	if data, err := os.ReadFile(filepath.Join(got, ".gitignore")); err != nil || string(data) != "*\n" {
		t.Errorf("state dir .gitignore = %q, %v; want \"*\\n\"", data, err)
	}
	// One the user changed is theirs.
	os.WriteFile(filepath.Join(got, ".gitignore"), []byte("*\n!notes.txt\n"), 0o644)
	if _, err := OpenDir(vault, "cache/margin"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(got, ".gitignore")); string(data) != "*\n!notes.txt\n" {
		t.Errorf("state dir .gitignore rewritten: %q", data)
	}
}

// A cloned vault can carry symlinks where margin keeps its state: every one
// is refused, naming the path, and nothing is created through it.
func TestOpenDirRefusesSymlinks(t *testing.T) {
	for _, tt := range []struct {
		name, stateDir, link, target string // link is vault-relative
	}{
		{"state dir", ".margin", ".margin", "dir"},
		{"a folder above it", "cache/margin", "cache", "dir"},
		{"its database", ".margin", ".margin/state.db", "state.db"},
		{"the index journal", ".margin", ".margin/index.db-journal", "journal"},
		{"the cold build marker", ".margin", ".margin/index.db-cold", "marker"},
		{"its .gitignore", ".margin", ".margin/.gitignore", "gitignore"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vault, elsewhere := t.TempDir(), t.TempDir()
			target := filepath.Join(elsewhere, tt.target)
			if tt.target == "dir" {
				os.Mkdir(target, 0o755)
			} else {
				os.WriteFile(target, []byte("outside"), 0o644)
			}
			link := filepath.Join(vault, filepath.FromSlash(tt.link))
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			_, err := OpenDir(vault, tt.stateDir)
			if err == nil || !strings.Contains(err.Error(), link+" is a symbolic link to "+target) {
				t.Fatalf("OpenDir = %v; want a refusal naming %s", err, link)
			}
			entries, _ := os.ReadDir(elsewhere)
			if len(entries) != 1 {
				t.Errorf("outside the vault: %v, want only %s", entries, tt.target)
			}
			if tt.target == "dir" {
				if inside, _ := os.ReadDir(target); len(inside) != 0 {
					t.Errorf("created outside the vault: %v", inside)
				}
			} else if data, _ := os.ReadFile(target); string(data) != "outside" {
				t.Errorf("outside file now %q", data)
			}
		})
	}
}

func TestOpenDirRefusesAFileForAFolder(t *testing.T) {
	vault := t.TempDir()
	os.WriteFile(filepath.Join(vault, ".margin"), nil, 0o644)
	if _, err := OpenDir(vault, ".margin"); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("OpenDir over a file = %v, want is not a folder", err)
	}
	if _, err := OpenDir(vault, "../x"); err == nil {
		t.Errorf("OpenDir(../x) succeeded")
	}
}
