package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// Without --vault, margin takes the nearest folder upward that Obsidian or
// margin marked, and refuses to guess past that.
func TestVaultFoundUpward(t *testing.T) {
	nowhere := t.TempDir()
	for d := nowhere; ; d = filepath.Dir(d) {
		for _, mark := range []string{".obsidian", ".margin"} {
			if _, err := os.Stat(filepath.Join(d, mark)); err == nil {
				t.Skipf("%s holds %s: no folder here is outside every vault", d, mark)
			}
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	_, stderr, code := runMarginIn(t, nowhere, nil, "status")
	if code != exitUsage || !strings.Contains(stderr, "not a vault: pass --vault DIR") {
		t.Errorf("status outside any vault: exit %d, stderr %q; want %d, not a vault", code, stderr, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(nowhere, ".margin")); err == nil {
		t.Errorf("status outside any vault made a state dir in %s", nowhere)
	}

	obsidian := editortest.SampleVault(t) // has .obsidian/
	deep := filepath.Join(obsidian, "Projects", "deep")
	os.MkdirAll(deep, 0o755)
	plain := filepath.Join(t.TempDir(), "notes")
	os.MkdirAll(filepath.Join(plain, ".margin"), 0o755) // a vault margin has opened before
	os.MkdirAll(filepath.Join(plain, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(plain, "a", "note.md"), []byte("# Note\n"), 0o644)
	for _, tt := range []struct{ cwd, vault string }{
		{obsidian, obsidian},
		{deep, obsidian},
		{filepath.Join(plain, "a", "b"), plain},
	} {
		out, stderr, code := runMarginIn(t, tt.cwd, nil, "status", "--json")
		var st struct{ Vault string }
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Vault != tt.vault {
			t.Errorf("status in %s: exit %d, vault %q (%s); want %s", tt.cwd, code, st.Vault, stderr, tt.vault)
		}
	}
	if _, err := os.Stat(filepath.Join(deep, ".margin")); err == nil {
		t.Errorf("status in a vault's subfolder made a state dir there")
	}
}

// A cloned vault whose .gitignore and state dir are symlinks out of it
// (issue 18.2): status refuses, naming the link, and nothing outside changes.
func TestStatusRefusesASymlinkedStateDir(t *testing.T) {
	vault, elsewhere := editortest.SampleVault(t), t.TempDir()
	os.Mkdir(filepath.Join(vault, ".git"), 0o755)
	outside := map[string]string{"gitignore": "*.log\n", "dir/index.db": "not a database"}
	for name, content := range outside {
		os.MkdirAll(filepath.Join(elsewhere, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(elsewhere, name), []byte(content), 0o644)
	}
	os.Symlink(filepath.Join(elsewhere, "gitignore"), filepath.Join(vault, ".gitignore"))
	os.Symlink(filepath.Join(elsewhere, "dir"), filepath.Join(vault, ".margin"))

	_, stderr, code := runMargin(t, nil, "status", "--vault", vault)
	if want := filepath.Join(vault, ".margin") + " is a symbolic link to " + filepath.Join(elsewhere, "dir"); code != exitFailure || !strings.Contains(stderr, want) {
		t.Errorf("status: exit %d, stderr %q; want %d saying %q", code, stderr, exitFailure, want)
	}
	vaulttest.Unchanged(t, elsewhere, outside)
}

// A vault inside a larger git repository, or at its root: margin's state
// stays out of git whatever command runs, reading commands leave the vault's
// .gitignore alone, and serve takes out the line an older margin added
// there, only that line.
func TestStateStaysOutOfGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: cannot check that margin's state stays out of a repository")
	}
	for _, at := range []string{"notes/vault/", ""} {
		t.Run("vault at /"+at, func(t *testing.T) { stateStaysOutOfGit(t, at) })
	}
}

func stateStaysOutOfGit(t *testing.T, at string) {
	repo := t.TempDir()
	vault := filepath.Join(repo, filepath.FromSlash(at))
	os.MkdirAll(filepath.Dir(vault), 0o755)
	if err := os.CopyFS(vault, os.DirFS(editortest.SampleVault(t))); err != nil {
		t.Fatal(err)
	}
	gitignore := filepath.Join(vault, ".gitignore")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=margin test", "-c", "user.email=test@margin.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	commit := func(gi string) {
		t.Helper()
		os.WriteFile(gitignore, []byte(gi), 0o644)
		git("add", "-A")
		git("commit", "-q", "-m", "vault")
	}
	env := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_AGENTS_AUTO_CREATE=false"}
	reading := func() {
		t.Helper()
		for _, args := range [][]string{{"status"}, {"search", "bench"}, {"doctor"}} {
			if _, stderr, code := runMarginIn(t, vault, env, args...); code != 0 && code != exitDoctor {
				t.Errorf("margin %v: exit %d: %s", args, code, stderr)
			}
		}
	}
	serve := func() {
		t.Helper()
		e := editortest.Start(t, append(env, "XDG_CONFIG_HOME="+t.TempDir()))
		e.Initialize(vault)
		e.MustCall("vault/search", map[string]any{"query": "bench"}, nil) // waits for the first scan
		e.MustCall("shutdown", nil, nil)
		e.Notify("exit", nil)
		if code := e.Exit(); code != 0 {
			t.Errorf("serve exit %d", code)
		}
	}

	git("init", "-q")
	commit("*.tmp\n")
	reading()
	serve()
	if data, _ := os.ReadFile(gitignore); string(data) != "*.tmp\n" {
		t.Errorf("status, search, doctor and serve changed .gitignore: %q", data)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("git status after status, search, doctor and serve:\n%s", st)
	}

	// An older margin's line: reading commands keep it, serve takes it out.
	const old = "*.tmp\n# margin's state (index, agents, ledger)\n/.margin/\n"
	commit(old)
	reading()
	if data, _ := os.ReadFile(gitignore); string(data) != old {
		t.Errorf("reading commands changed .gitignore: %q", data)
	}
	serve()
	if data, _ := os.ReadFile(gitignore); string(data) != "*.tmp\n" {
		t.Errorf("after serve .gitignore = %q, want the user's line only", data)
	}
	if st := git("status", "--porcelain"); st != " M "+at+".gitignore\n" {
		t.Errorf("git status after serve: %q, want only .gitignore modified", st)
	}
	if !bytes.Contains([]byte(git("check-ignore", "-v", at+".margin/state.db")), []byte(".margin/.gitignore")) {
		t.Errorf("state.db is not ignored by the state dir's own .gitignore")
	}
}
