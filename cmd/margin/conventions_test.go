package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
)

func shapeVault(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "..", "testdata", "shapes", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// With no task note, doctor says why and how to mark one, and counts the
// checklist items the vault has; it is a warning, not a failure.
func TestDoctorExplainsNoTasks(t *testing.T) {
	vault := shapeVault(t, "tasks-demo")
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
	for _, want := range []string{"warn  tasks", "no task notes", "`type: task`", "a `task` tag", "vault.task_folders", "8 checklist items",
		"ok    rules", "YYYY/MM-MMMM/YYYY-MM-DD-dddd in Daily Notes (from .obsidian/daily-notes.json)", "templates in _meta/templates"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

// A daily format margin cannot read: every command still works, and
// status and doctor say so.
func TestUnreadableDailyFormatIsAWarning(t *testing.T) {
	vault := shapeVault(t, "personal")
	os.WriteFile(filepath.Join(vault, ".obsidian", "daily-notes.json"), []byte(`{"folder": "Journal", "format": "dddd, MMMM Do YYYY HH:mm"}`), 0o644)
	out, stderr, code := runMargin(t, nil, "status", "--vault", vault)
	if code != 0 || !strings.Contains(out, "warning: daily note format") || !strings.Contains(out, "token HH is not supported") {
		t.Errorf("status: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "notes    7 (0 daily, 1 task, 2 templates)") || !strings.Contains(out, "outputs  2") {
		t.Errorf("status does not count notes apart from outputs:\n%s", out)
	}
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, code = runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	if code != 0 || !strings.Contains(out, "warn  settings") || !strings.Contains(out, "token HH is not supported") {
		t.Errorf("doctor: exit %d\n%s", code, out)
	}
}

// A vault whose daily notes Obsidian named in Korean: doctor names the
// language margin reads them in and the note it cannot read, and log
// writes beside the others.
func TestDoctorNamesTheDailyLocale(t *testing.T) {
	vault := t.TempDir()
	for p, s := range map[string]string{
		".obsidian/daily-notes.json": `{"format": "YYYY/MMM/YYYY-MM-DD"}`,
		"2025/10월/2025-10-01.md":     "## 07:30\n달리기\n",
		"2025/11월/2025-11-28.md":     "## 08:00\n산책\n",
		"2025/Nov/2025-11-03.md":     "## 08:00\nwalk\n",
	} {
		full := filepath.Join(vault, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(s), 0o644)
	}
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	for _, want := range []string{
		"daily notes YYYY/MMM/YYYY-MM-DD in the vault root (from .obsidian/daily-notes.json), named in ko (inferred: 2 of 3 notes in the daily folder are named in it)",
		"warn  settings", "1 note in the vault root looks dated but is not a daily note in the format YYYY/MMM/YYYY-MM-DD (locale ko), e.g. 2025/Nov/2025-11-03.md",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-22T07:05", "Slept 8h.")
	if code != 0 || !strings.Contains(out, "Logged to 2026/11월/2026-11-22.md") {
		t.Errorf("log: exit %d\n%s\n%s", code, out, stderr)
	}
}

// Without daily-note settings, log and doctor say where daily notes go.
func TestLogSaysWhereDailyNotesGo(t *testing.T) {
	vault := t.TempDir()
	os.MkdirAll(filepath.Join(vault, ".obsidian"), 0o755)
	os.WriteFile(filepath.Join(vault, "Note.md"), []byte("# a note\n"), 0o644)
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-22T07:05", "Slept 8h.")
	if code != 0 || !strings.Contains(out, "A new daily note in Daily/, where vault.daily_folder and vault.daily_format put daily notes: the vault has no .obsidian/daily-notes.json") {
		t.Errorf("log: exit %d\n%s\n%s", code, out, stderr)
	}
	out, _, _ = runMargin(t, offline, "doctor", "--vault", vault)
	if !strings.Contains(out, "daily notes YYYY-MM-DD in Daily (from config: the vault has no .obsidian/daily-notes.json), named in en (the default)") {
		t.Errorf("doctor does not say where daily notes go:\n%s", out)
	}
}

// writeFiles writes files (vault path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A vault whose daily notes Periodic Notes makes, with the core plugin
// off and its old settings left behind: doctor names where the rules come
// from, log writes beside the daily notes from Periodic Notes' template,
// and the TaskNotes folder holds tasks.
func TestPeriodicNotesAndTaskNotesVault(t *testing.T) {
	vault := t.TempDir()
	writeFiles(t, vault, map[string]string{
		".obsidian/core-plugins.json":                `{"file-explorer": true, "daily-notes": false}`,
		".obsidian/daily-notes.json":                 `{"folder": "daily", "format": "YYYY-MM-DD"}`,
		".obsidian/community-plugins.json":           `["periodic-notes", "tasknotes"]`,
		".obsidian/plugins/periodic-notes/data.json": `{"daily": {"enabled": true, "folder": "Daily notes", "format": "MM-DD-YYYY", "template": "Templates/Daily"}}`,
		".obsidian/plugins/tasknotes/data.json":      `{"tasksFolder": "TaskNotes/Tasks", "taskTag": "task"}`,
		"Templates/Daily.md":                         "# {{date:dddd}}\n\n",
		"Daily notes/11-20-2026.md":                  "## 07:30\nswam\n",
		"Daily notes/11-21-2026.md":                  "## 08:00\nread\n",
		"TaskNotes/Tasks/Call plumber.md":            "---\nstatus: open\n---\n",
		"Tasks/Ship.md":                              "# Ship\n",
	})
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	for _, want := range []string{
		"ok    rules", "daily notes MM-DD-YYYY in Daily notes (from .obsidian/plugins/periodic-notes/data.json)",
		"tasks in Tasks, TaskNotes/Tasks or tagged #task (with .obsidian/plugins/tasknotes/data.json)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	out, _, _ = runMargin(t, nil, "status", "--vault", vault)
	if !strings.Contains(out, "2 daily, 2 tasks") {
		t.Errorf("status does not count the daily notes and tasks:\n%s", out)
	}
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-22T07:05", "Slept 8h.")
	if code != 0 || !strings.Contains(out, "Logged to Daily notes/11-22-2026.md") {
		t.Errorf("log: exit %d\n%s\n%s", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(vault, "Daily notes", "11-22-2026.md")); err != nil || string(b) != "# Sunday\n\n## 07:05\nSlept 8h.\n" {
		t.Errorf("new daily note %q (%v), want it made from Periodic Notes' template", b, err)
	}
	if _, err := os.Stat(filepath.Join(vault, "daily")); !os.IsNotExist(err) {
		t.Errorf("log made the left-over core folder: %v", err)
	}
}

// The core plugin off, no Periodic Notes, and the daily notes where the
// left-over settings put them: doctor warns that margin sees none of
// them, and log says where it writes instead.
func TestDoctorWarnsOfLeftOverDailySettings(t *testing.T) {
	vault := t.TempDir()
	writeFiles(t, vault, map[string]string{
		".obsidian/core-plugins.json": `["file-explorer"]`,
		".obsidian/daily-notes.json":  `{"folder": "Journal", "format": "DD.MM.YYYY"}`,
		"Journal/20.11.2026.md":       "## 07:30\nswam\n",
		"Journal/21.11.2026.md":       "## 08:00\nread\n",
	})
	ollama := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	out, _, code := runMargin(t, []string{"OLLAMA_HOST=" + ollama.URL}, "doctor", "--vault", vault)
	for _, want := range []string{
		"warn  rules", "(from config: the core Daily notes plugin is off in .obsidian/core-plugins.json, so .obsidian/daily-notes.json is left over)",
		"no daily note found: 2 notes in Journal are named in the format of the left-over .obsidian/daily-notes.json",
		"warn  settings", "e.g. 20.11.2026.md, 21.11.2026.md; the core Daily notes plugin is off", "; turn the Daily notes plugin back on",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-22T07:05", "Slept 8h.")
	if code != 0 || !strings.Contains(out, "A new daily note in Daily/, where vault.daily_folder and vault.daily_format put daily notes: the core Daily notes plugin is off") {
		t.Errorf("log: exit %d\n%s\n%s", code, out, stderr)
	}
}
