package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/store"
)

func TestAskCommand(t *testing.T) {
	vault := editortest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	sc := querytest.Scenarios()[0] // simple
	fake.Handle(querytest.NewModel(sc.Replies).Reply)
	out, stderr, code := runMargin(t, []string{"OLLAMA_HOST=" + fake.URL},
		"ask", "--vault", vault, "--now", querytest.NowFlag, "--json", sc.Input)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Status    string
		Citations []struct{ Link string }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	if r.Status != "answered" || len(r.Citations) != 2 {
		t.Errorf("ask = %+v", r)
	}
}

func TestLogAndImportOffline(t *testing.T) {
	vault := editortest.SampleVault(t)
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-22T07:05", "Slept 8h.")
	if code != 0 || !strings.Contains(out, "Logged to Daily/2026-11-22.md as ## 07:05, unparsed: no model was reachable") {
		t.Fatalf("log: exit %d\n%s\n%s", code, out, stderr)
	}
	// Said once, and the answer's reason is not repeated as a log line.
	if strings.Count(out, "Daily/2026-11-22.md") != 1 || strings.Contains(stderr, "level=") {
		t.Errorf("log said more than once:\n%s\nstderr:\n%s", out, stderr)
	}

	in := t.TempDir()
	files := map[string]time.Time{
		"a.md":     time.Date(2026, 11, 22, 8, 0, 0, 0, time.Local),
		"b/b.md":   time.Date(2026, 11, 23, 8, 30, 0, 0, time.Local),
		"empty.md": time.Date(2026, 11, 23, 9, 0, 0, 0, time.Local),
	}
	for name, mtime := range files {
		p := filepath.Join(in, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		text := "Imported " + name
		if name == "empty.md" {
			text = "  \n"
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, mtime, mtime)
	}
	out, stderr, code = runMargin(t, offline, "import", "--vault", vault, in)
	if code != 0 || !strings.Contains(out, "imported 2 of 3 files (1 empty, 0 failed)") {
		t.Fatalf("import: exit %d\n%s\n%s", code, out, stderr)
	}
	day1, _ := os.ReadFile(filepath.Join(vault, "Daily/2026-11-22.md"))
	day2, _ := os.ReadFile(filepath.Join(vault, "Daily/2026-11-23.md"))
	if !strings.HasSuffix(string(day1), "## 07:05\nSleep: \n\nSlept 8h.\n\n## 08:00\nImported a.md\n") || !strings.HasSuffix(string(day2), "## 08:30\nSleep: \n\nImported b/b.md\n") {
		t.Errorf("daily notes after log and import:\n%s\n---\n%s", day1, day2)
	}
}

// TestAskAndLogRecordTheirModelCalls: the model calls of `margin ask` and
// `margin log` are in the ledger of the vault's state database, each under
// "query:<session id>", as the server records them.
func TestAskAndLogRecordTheirModelCalls(t *testing.T) {
	vault := editortest.SampleVault(t)
	sc := querytest.Scenarios()[0] // simple
	replies := sc.Replies
	replies["router"] = append(replies["router"], querytest.Route("log", "Strength training"))
	replies["parser"] = append(replies["parser"], querytest.Parse("Strength training", map[string]any{}, false))
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	fake.Handle(querytest.NewModel(replies).Reply)
	env := []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_LLM_RETRY_LLM_RETRY=0"}

	sessions := map[string]int{} // session id → the model calls its command made
	for _, args := range [][]string{
		{"ask", "--vault", vault, "--now", querytest.NowFlag, "--json", sc.Input},
		{"log", "--vault", vault, "--now", querytest.NowFlag, "--json", "Bench 3x5 @ 200"},
	} {
		before := len(fake.Requests())
		out, stderr, code := runMargin(t, env, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", args[0], code, stderr)
		}
		var r struct{ SessionID string }
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.SessionID == "" {
			t.Fatalf("%s --json printed %q: %v", args[0], out, err)
		}
		sessions[r.SessionID] = len(fake.Requests()) - before
	}

	db, err := store.Open(context.Background(), filepath.Join(vault, ".margin", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, calls := range sessions {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM model_calls WHERE scope = ?`, "query:"+id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if calls == 0 || n != calls {
			t.Errorf("ledger has %d calls under query:%s, the model was asked %d times", n, id, calls)
		}
	}
}
