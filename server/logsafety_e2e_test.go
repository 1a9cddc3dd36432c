package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// A log/append the client cancels while the parser model is slow keeps
// the user's words in the daily note, without the NUL they carried (which
// would make the whole note read as binary).
func TestLogAppendCancelledKeepsTheLine(t *testing.T) {
	dir := startVaultWithTemplate(t, "Templates/Daily")
	fake, m := newFake(t, querytest.Replies{"router": {querytest.Route("log", "Strength training")}})
	reached := make(chan struct{}, 1)
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		if querytest.RoleOf(r) == "parser" {
			reached <- struct{}{}
			return llmtest.Reply{Delay: time.Minute}
		}
		return m.Reply(r)
	})
	e := startQuery(t, dir, fake)
	id, reply := e.Send("log/append", map[string]any{"text": "Deadlift\x00 1x5 @ 140", "time": "2026-11-23T07:10"})
	<-reached
	e.Notify("$/cancelRequest", map[string]any{"id": id})
	if err := e.Await(reply, nil); err == nil || err.Code != -32800 {
		t.Fatalf("cancelled log/append = %v, want -32800", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "Daily/2026-11-23.md"))
	if err != nil || strings.ContainsRune(string(b), 0) || !strings.HasSuffix(string(b), "## 07:10\nSleep: \n\nDeadlift 1x5 @ 140\n") {
		t.Errorf("daily note = %q (%v), want the line kept without its NUL", b, err)
	}
}

// A daily template outside the vault is not read; the note is written
// without it, and the reply says so.
func TestLogAppendWithATemplateOutsideTheVault(t *testing.T) {
	dir := startVaultWithTemplate(t, "../outside/Daily")
	fake, _ := newFake(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := startQuery(t, dir, fake)
	var r struct{ Path, Heading, Note string }
	e.MustCall("log/append", map[string]any{"text": "Deadlift 1x5 @ 140", "time": "2026-11-23T07:10"}, &r)
	if r.Path != "Daily/2026-11-23.md" || !strings.Contains(r.Note, "without its template") {
		t.Errorf("log/append = %+v, want the note written and a word on the template", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, r.Path)); string(b) != "## 07:10\nDeadlift 1x5 @ 140\n" {
		t.Errorf("daily note = %q", b)
	}
}

// startVaultWithTemplate is the sample vault with its daily template at
// template; a template outside the vault gets a file there too, so that
// only confinement keeps margin from reading it.
func startVaultWithTemplate(t *testing.T, template string) string {
	t.Helper()
	dir := editortest.SampleVault(t)
	if strings.HasPrefix(template, "../") {
		p := filepath.Join(dir, filepath.FromSlash(template)+".md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# outside {{date}}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"folder": "Daily", "format": "YYYY-MM-DD", "template": "` + template + `"}`
	if err := os.WriteFile(filepath.Join(dir, ".obsidian", "daily-notes.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
