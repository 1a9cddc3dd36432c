package watch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestObsidianFilters(t *testing.T) {
	ignore, bad := ObsidianFilters([]string{"Archive/", "Inbox/tmp", `/\.excalidraw\.md$/`, "/(/"})
	if len(bad) != 1 || bad[0] != "/(/" {
		t.Errorf("bad = %q, want the unbalanced expression", bad)
	}
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"Archive", true, true},
		{"Archive/2019/a.md", false, true},
		{"Archived.md", false, false},
		{"Inbox/tmp-1.md", false, true}, // Obsidian compares the start of the path
		{"Inbox/keep.md", false, false},
		{"x/y.excalidraw.md", false, true},
		{"x/y.md", false, false},
	}
	for _, tt := range tests {
		if got := ignore(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("ignore(%q, %v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

// gitHome gives git a home of its own, with no system config and the
// global config file it returns (empty until written), so that the user's
// excludes file stays out of a test.
func gitHome(t *testing.T) (home, globalConfig string) {
	home = t.TempDir()
	globalConfig = filepath.Join(home, "gitconfig")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", globalConfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return home, globalConfig
}

func TestGitIgnore(t *testing.T) {
	gitHome(t)
	repo := t.TempDir()
	vault := filepath.Join(repo, "notes", "vault")
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(repo, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(vault, 0o755)
	if _, ok := GitIgnore(vault); ok {
		t.Fatal("a folder outside any work tree has no git rules")
	}
	os.MkdirAll(filepath.Join(repo, ".git", "info"), 0o755)
	write(".git/info/exclude", "# local\n*.local.md\n")
	write(".gitignore", "node_modules/\n/notes/vault/Private/\n*.log\n")
	write("notes/.gitignore", "vault/build\n")
	write("notes/vault/.gitignore", "\\#hash.md\n*.gen.md\n!keep.gen.md\nTrailing.md   \n[!a]x.md\n{draft,old}.md\n")
	write("notes/vault/Sub/.gitignore", "!again.gen.md\nlocal-only.md\n")

	ignore, ok := GitIgnore(vault)
	if !ok {
		t.Fatal("the vault is in a work tree")
	}
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"note.md", false, false},
		{"node_modules", true, true},
		{"a/node_modules/x/README.md", false, true},
		{"Private/secret.md", false, true}, // anchored in the repository root's file
		{"x/Private/ok.md", false, false},
		{"build/out.md", false, true}, // from the file between the root and the vault
		{"me.local.md", false, true},  // .git/info/exclude
		{"#hash.md", false, true},
		{"a.gen.md", false, true},
		{"keep.gen.md", false, false},
		{"Sub/again.gen.md", false, false}, // a deeper file overrides
		{"Sub/other.gen.md", false, true},
		{"Sub/local-only.md", false, true},
		{"local-only.md", false, false}, // Sub's rules stay in Sub
		{"Trailing.md", false, true},
		{"bx.md", false, true},
		{"ax.md", false, false},
		{"{draft,old}.md", false, true}, // git has no alternatives
		{"draft.md", false, false},
	}
	for _, tt := range tests {
		if got := ignore(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("ignore(%q, %v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

// The user's excludes file is read as git finds it: core.excludesFile in
// the global config (with ~ for the home folder), else git's default in
// ~/.config/git; it gives way to the repository's own files.
func TestGitIgnoreExcludesFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home, config := gitHome(t)
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".git", "info"), 0o755)
	os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte("!keep.secret.md\n"), 0o644)
	os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755)
	os.WriteFile(filepath.Join(home, ".config", "git", "ignore"), []byte("*.default.md\n"), 0o644)

	ignore, _ := GitIgnore(repo)
	if !ignore("a.default.md", false) {
		t.Error("without core.excludesFile, git's default file is not read")
	}

	os.WriteFile(config, []byte("[core]\n\texcludesFile = ~/global-ignore\n"), 0o644)
	os.WriteFile(filepath.Join(home, "global-ignore"), []byte("*.secret.md\nDrafts/\n"), 0o644)
	ignore, _ = GitIgnore(repo)
	for _, tt := range []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"a.secret.md", false, true},
		{"Notes/Drafts/x.md", false, true},
		{"keep.secret.md", false, false}, // .git/info/exclude overrides it
		{"a.default.md", false, false},   // the default gives way to the key
		{"a.md", false, false},
	} {
		if got := ignore(tt.rel, tt.isDir); got != tt.want {
			t.Errorf("ignore(%q, %v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
		}
	}
}

// BenchmarkGitIgnore asks about 10,000 note paths in 20 folders, each
// with a .gitignore, under a repository root with its own: the cost the
// rule adds to a scan of a 10,000-note vault.
func BenchmarkGitIgnore(b *testing.B) {
	repo := b.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("node_modules/\n*.log\n/build/\n.DS_Store\n*.tmp.md\n!keep.tmp.md\n"), 0o644)
	var paths []string
	for d := range 20 {
		dir := filepath.Join(repo, "Folder"+strconv.Itoa(d), "Sub")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(repo, "Folder"+strconv.Itoa(d), ".gitignore"), []byte("*.draft.md\ndrafts/\n"), 0o644)
		for n := range 500 {
			paths = append(paths, "Folder"+strconv.Itoa(d)+"/Sub/note "+strconv.Itoa(n)+".md")
		}
	}
	ignore, _ := GitIgnore(repo)
	b.ResetTimer()
	for b.Loop() {
		for _, p := range paths {
			ignore(p, false)
		}
	}
}
