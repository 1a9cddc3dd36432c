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
