package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// runMargin runs the built binary and returns stdout, stderr and the exit code.
func runMargin(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runMarginIn(t, "", env, args...)
}

// runMarginIn is runMargin in the working directory dir.
func runMarginIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(editortest.Binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("running margin: %v", err)
	return "", "", -1
}

func TestStatusCommand(t *testing.T) {
	vault := editortest.SampleVault(t)
	out, stderr, code := runMargin(t, nil, "status", "--vault", vault, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var st struct{ Notes, Tasks, DailyNotes, Failed int }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json printed %q: %v", out, err)
	}
	if st.DailyNotes != 23 || st.Tasks != 10 || st.Failed != 1 {
		t.Errorf("status = %+v, want 23 daily notes, 10 tasks, 1 failed", st)
	}

	// Text output names the broken note and why.
	out, _, _ = runMargin(t, nil, "status", "--vault", vault)
	if !strings.Contains(out, "Inbox/broken frontmatter.md") {
		t.Errorf("status does not list the broken note:\n%s", out)
	}
}

// One of a thing is "1 task", not "1 tasks".
func TestStatusSaysOneTask(t *testing.T) {
	vault := t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "Plan.md"), []byte("---\ntype: task\n---\n# Plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runMargin(t, nil, "status", "--vault", vault)
	if code != 0 || !strings.Contains(out, "(0 daily, 1 task, 0 templates)") {
		t.Errorf("status: exit %d\n%s%s", code, out, stderr)
	}
}

func TestSearchCommand(t *testing.T) {
	vault := editortest.SampleVault(t)
	out, stderr, code := runMargin(t, nil, "search", "--vault", vault, "--from", "2026-11-09", "--to", "2026-11-15", "bench", "heavy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^Daily/2026-11-13\.md:\d+  #18:15$`).MatchString(out) {
		t.Errorf("search for the heavy bench did not find 2026-11-13 18:15 as path:line:\n%s", out)
	}
	// A cut list says so.
	_, stderr, code = runMargin(t, nil, "search", "--vault", vault, "--limit", "1", "bench")
	if code != 0 || !regexp.MustCompile(`showing 1 of \d+ matching notes`).MatchString(stderr) {
		t.Errorf("search --limit 1 bench: exit %d, stderr %q; want it to say the list was cut", code, stderr)
	}

	_, stderr, code = runMargin(t, nil, "search", "--vault", vault, "swimming")
	if code != 0 || !strings.Contains(stderr, "no matches") {
		t.Errorf("search for swimming: exit %d, stderr %q; want 0 and no matches", code, stderr)
	}
}

// TestSearchQuestion: by default a question finds the entry its words
// point to, where --mode all needs "why", "did" and "my" too.
func TestSearchQuestion(t *testing.T) {
	vault := editortest.SampleVault(t)
	const question = "why did my bench press feel so heavy?"
	_, stderr, code := runMargin(t, nil, "search", "--vault", vault, "--mode", "all", question)
	if code != 0 || !strings.Contains(stderr, "no matches") {
		t.Fatalf("--mode all: exit %d, stderr %q; want no matches for this test to mean something", code, stderr)
	}
	for _, mode := range [][]string{nil, {"--mode", "auto"}} {
		args := append(append([]string{"search", "--vault", vault, "--limit", "3"}, mode...), question)
		out, stderr, code := runMargin(t, nil, args...)
		if code != 0 || !regexp.MustCompile(`(?m)^Daily/2026-11-13\.md:\d+  #18:15$`).MatchString(out) {
			t.Errorf("search %v: exit %d, stderr %q; want 2026-11-13 18:15 in the first three:\n%s", mode, code, stderr, out)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	vault := editortest.SampleVault(t)
	for _, args := range [][]string{
		{"search", "--vault", vault},
		{"search", "--vault", vault, "--mode", "fuzzy", "x"},
		{"log", "--vault", vault, "--time", "yesterday", "x"},
		{"status", "--no-such-flag"},
		{"status", "--vault", vault, "--config", filepath.Join(t.TempDir(), "missing.yaml")},
	} {
		_, stderr, code := runMargin(t, nil, args...)
		if code != exitUsage || stderr == "" {
			t.Errorf("margin %v: exit %d, stderr %q; want %d with a message", args, code, stderr, exitUsage)
		}
	}
	// A date that is no date is refused naming its flag, not "no matches";
	// so is a limit past index.MaxLimit, as at the other front doors.
	for flag, args := range map[string][]string{
		"--from 2023-13-45": {"--from", "2023-13-45", "sleep"},
		"--to 11/15/2026":   {"--to", "11/15/2026", "sleep"},
		"--from 2026-11-20": {"--from", "2026-11-20", "--to", "2026-11-10"},
		"--limit 1001":      {"--limit", "1001", "sleep"},
		"--limit -1":        {"--limit", "-1", "sleep"},
	} {
		_, stderr, code := runMargin(t, nil, append([]string{"search", "--vault", vault}, args...)...)
		if name, _, _ := strings.Cut(flag, " "); code != exitUsage || !strings.Contains(stderr, name) {
			t.Errorf("search %s: exit %d, stderr %q; want %d naming %s", flag, code, stderr, exitUsage, name)
		}
	}
	_, stderr, code := runMargin(t, []string{"MARGIN_AGENTS_MAX_TURNS=0"}, "status", "--vault", vault)
	if code != exitUsage || !strings.Contains(stderr, "agents.max_turns") {
		t.Errorf("bad env config: exit %d, stderr %q; want %d naming agents.max_turns", code, stderr, exitUsage)
	}
}

func TestDoctor(t *testing.T) {
	vault := editortest.SampleVault(t)

	t.Run("missing models get the pull command", func(t *testing.T) {
		ollama := llmtest.NewOllama(t, "qwen2.5:7b")
		out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
		if code != exitDoctor {
			t.Errorf("exit %d, want %d\n%s", code, exitDoctor, out)
		}
		for _, want := range []string{"ok    state db", "ok    index", "ok    watch limit", "FAIL  notes", "Inbox/broken frontmatter.md", "FAIL  model ollama", "ollama pull qwen2.5:3b", "ollama pull qwen2.5:14b"} {
			if !strings.Contains(out, want) {
				t.Errorf("doctor output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("all well", func(t *testing.T) {
		// The sample vault's broken note is a finding of its own.
		os.Remove(filepath.Join(vault, "Inbox", "broken frontmatter.md"))
		ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
		if code != 0 {
			t.Errorf("exit %d, want 0\n%s", code, out)
		}
	})

	t.Run("the daily token budget", func(t *testing.T) {
		ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		out, _, _ := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
		if !strings.Contains(out, "ok    token budget   no daily limit (agents.daily_token_budget: 0); the wakes and reviews spent 0 tokens today") {
			t.Errorf("doctor does not say there is no budget:\n%s", out)
		}
		out, _, _ = runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL, "MARGIN_AGENTS_DAILY_TOKEN_BUDGET=50000"}, "doctor", "--vault", vault)
		if !strings.Contains(out, "ok    token budget   0 of 50000 tokens spent today (agents.daily_token_budget)") {
			t.Errorf("doctor does not show the budget:\n%s", out)
		}
	})

	t.Run("a template's model is not pulled", func(t *testing.T) {
		editortest.TaskTemplate(t, vault, "qwen3:32b")
		ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
		if code != exitDoctor || !strings.Contains(out, "ollama pull qwen3:32b") {
			t.Errorf("exit %d, want %d and the pull command for the template's model:\n%s", code, exitDoctor, out)
		}
	})

	t.Run("a template's model is asked of its role's provider", func(t *testing.T) {
		editortest.TaskTemplate(t, vault, "qwen3:32b")
		// Task agents run on a second Ollama server; everything else on the
		// default one, which need not have the template's model.
		local := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		gpu := llmtest.NewOllama(t, "qwen2.5:7b")
		config := filepath.Join(t.TempDir(), "config.yaml")
		err := os.WriteFile(config, []byte("llm:\n  providers:\n    gpu: {kind: ollama, api_base: "+gpu.URL+"}\n  agents:\n    task: {provider: gpu, model: qwen2.5:7b}\n"), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"OLLAMA_HOST=" + local.URL}
		out, _, code := runMargin(t, env, "doctor", "--vault", vault, "--config", config)
		if code != exitDoctor || !strings.Contains(out, "ok    model ollama") || !strings.Contains(out, "FAIL  model gpu") || !strings.Contains(out, "pull qwen3:32b") {
			t.Errorf("exit %d, want %d, the default server ok and the pull of the template's model on gpu:\n%s", code, exitDoctor, out)
		}
		gpu.Pull("qwen3:32b")
		if out, _, code := runMargin(t, env, "doctor", "--vault", vault, "--config", config); code != 0 {
			t.Errorf("exit %d with the model pulled on gpu, want 0:\n%s", code, out)
		}
	})

	t.Run("a damaged index is rebuilt once removed", func(t *testing.T) {
		indexDB := filepath.Join(vault, ".margin", "index.db")
		f, err := os.OpenFile(indexDB, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err == nil { // the last pages, past the schema that opening reads
			_, err = f.WriteAt(bytes.Repeat([]byte{0xa5}, 8<<12), fi.Size()-8<<12)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
		if code != exitDoctor || !strings.Contains(out, "FAIL  index") || !strings.Contains(out, "remove "+indexDB) || !strings.Contains(out, "ok    state db") {
			t.Errorf("exit %d, want %d, the index failed with the advice to remove it, and the state database ok:\n%s", code, exitDoctor, out)
		}
		if err := os.Remove(indexDB); err != nil {
			t.Fatal(err)
		}
		if out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault); code != 0 {
			t.Errorf("exit %d after removing the index, want 0:\n%s", code, out)
		}
	})

	t.Run("unreachable server", func(t *testing.T) {
		out, _, code := runMargin(t, []string{"OLLAMA_HOST=http://127.0.0.1:1"}, "doctor", "--vault", vault)
		if code != exitDoctor || !strings.Contains(out, "ollama serve") {
			t.Errorf("exit %d, want %d and advice to start ollama:\n%s", code, exitDoctor, out)
		}
	})
}

// TestSearchPrintsNoEmptySnippet: a note found by a property alone has no
// text to show, and gets no blank line under its path.
func TestSearchPrintsNoEmptySnippet(t *testing.T) {
	vault := t.TempDir()
	if err := os.WriteFile(filepath.Join(vault, "Blue.md"), []byte("---\nrating: 7\n---\n# Blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(vault, ".obsidian"), 0o755)
	out, stderr, code := runMargin(t, nil, "search", "--vault", vault, "rating:7")
	if code != 0 || !strings.HasPrefix(out, "Blue.md:") || strings.Contains(out, "\n    \n") || strings.HasSuffix(out, "    \n") {
		t.Errorf("search: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestDoctorNamesAFewFailedFiles: a vault with many notes indexed only in
// part gets a readable finding, not a line of every file.
func TestDoctorNamesAFewFailedFiles(t *testing.T) {
	vault := editortest.SampleVault(t)
	for i := range 7 { // and the sample vault's own broken note
		name := filepath.Join(vault, "Inbox", fmt.Sprintf("learning %d.md", i))
		if err := os.WriteFile(name, []byte("---\ntitle: cache: a key\n- x\n---\nbody\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, _ := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	if !strings.Contains(out, "FAIL  notes          8 of ") || !strings.Contains(out, "files are indexed only in part: ") ||
		!strings.Contains(out, "; and 3 more (margin status lists them)") || strings.Count(out, "(broken frontmatter: ") != failedShown {
		t.Errorf("doctor output:\n%s", out)
	}
}

// margin search leaves margin's reports and journals out, which restate
// the task, unless --include-outputs asks for them.
func TestSearchIncludeOutputs(t *testing.T) {
	vault := t.TempDir()
	for p, text := range map[string]string{
		"Tasks/Tax return.md":          "---\ntype: task\nstatus: open\n---\nFile the tax return before May.\n",
		"Margin/Reports/Tax return.md": "---\nmargin: report\n---\nThe tax return waits on the tax form.\n",
	} {
		if err := os.MkdirAll(filepath.Join(vault, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(vault, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"tax"}, []string{"Tasks/Tax return.md"}},
		{[]string{"--include-outputs", "tax"}, []string{"Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
	} {
		out, stderr, code := runMargin(t, nil, append([]string{"search", "--vault", vault}, tc.args...)...)
		var got []string
		for _, line := range strings.Split(out, "\n") {
			if p, _, ok := strings.Cut(line, ".md:"); ok && !strings.HasPrefix(line, " ") {
				got = append(got, p+".md")
			}
		}
		slices.Sort(got)
		if code != 0 || !slices.Equal(got, tc.want) {
			t.Errorf("search %v: exit %d, %v, want %v\n%s%s", tc.args, code, got, tc.want, out, stderr)
		}
	}
}
