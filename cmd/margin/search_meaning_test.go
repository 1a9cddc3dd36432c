package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vectors"
)

// meaningVault writes a vault whose sleep note says nothing of "schlafen"
// and, unless bare, embeds its notes through the fake Ollama's /api/embed
// as the queue does, into the vectors file the binary reads.
func meaningVault(t *testing.T, ollamaURL string, bare bool) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".obsidian"), 0o755)
	for p, text := range map[string]string{
		"Sleep log.md":   "# Sleep log\n\nSlept badly all week; a nap after lunch helped.\n",
		"Garden.md":      "# Garden\n\nThe tomato plants need seeds sown in March.\n",
		"Running log.md": "# Running log\n\nJogging five kilometres on Sunday.\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if bare {
		return dir
	}
	ctx := context.Background()
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cfg := llm.DefaultConfig()
	cfg.Providers[llm.KindOllama] = llm.ProviderConfig{APIBase: ollamaURL}
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := golden.Embed(ctx, v.Index(), filepath.Join(v.StateDir(), vectors.FileName), workspace.Embedder{C: client})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return dir
}

type searchJSON struct {
	Hits []struct {
		Path    string
		Snippet string
	}
	Mode     string
	Fallback string
}

// searchFor runs margin search with args and reads its JSON.
func searchFor(t *testing.T, env []string, args ...string) searchJSON {
	t.Helper()
	out, stderr, code := runMargin(t, env, args...)
	return searchOut(t, out, stderr, code)
}

func searchOut(t *testing.T, out, stderr string, code int) searchJSON {
	t.Helper()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r searchJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("search --json printed %q: %v", out, err)
	}
	return r
}

// TestSearchByMeaning: with the notes embedded, margin search --mode
// hybrid finds the sleep note for a German word no note holds, which
// keyword search misses; the query is embedded through the model server.
func TestSearchByMeaning(t *testing.T) {
	ollama := llmtest.NewOllama(t, "embeddinggemma")
	dir := meaningVault(t, ollama.URL, false)
	env := []string{"OLLAMA_HOST=" + ollama.URL}

	kw := searchFor(t, env, "search", "--vault", dir, "--json", "schlafen")
	if len(kw.Hits) != 0 || kw.Mode != "auto" {
		t.Errorf("keyword search: %+v, want no hits by auto", kw)
	}
	before := len(ollama.Embedder.Calls())
	for _, mode := range []string{"hybrid", "semantic"} {
		r := searchFor(t, env, "search", "--vault", dir, "--mode", mode, "--json", "schlafen")
		if r.Mode != mode || r.Fallback != "" || len(r.Hits) == 0 || r.Hits[0].Path != "Sleep log.md" {
			t.Errorf("--mode %s: %+v, want the sleep note first, by %s", mode, r, mode)
		}
	}
	calls := ollama.Embedder.Calls()[before:]
	if len(calls) != 2 || len(calls[0].Input) != 1 || !strings.Contains(calls[0].Input[0], "schlafen") || calls[0].Model != "embeddinggemma" {
		t.Errorf("the searches embedded %+v, want one query each", calls)
	}
	out, stderr, code := runMargin(t, env, "search", "--vault", dir, "--mode", "hybrid", "--limit", "1", "schlafen")
	if code != 0 || !strings.HasPrefix(out, "Sleep log.md:1  #Sleep log\n    Slept badly") || strings.Contains(stderr, "searched by keyword") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestSearchByMeaningFallsBack: without vectors, or with the model server
// gone, --mode hybrid answers as keyword search, exit 0, and says why.
func TestSearchByMeaningFallsBack(t *testing.T) {
	ollama := llmtest.NewOllama(t, "embeddinggemma")
	for _, c := range []struct {
		name string
		dir  string
		env  []string
		want string
	}{
		{"no vectors", meaningVault(t, ollama.URL, true), []string{"OLLAMA_HOST=" + ollama.URL}, retrieve.FallbackNoVectors},
		{"server gone", meaningVault(t, ollama.URL, false), []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}, retrieve.FallbackOffline},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, stderr, code := runMargin(t, c.env, "search", "--vault", c.dir, "--mode", "hybrid", "--json", "nap")
			r := searchOut(t, out, stderr, code)
			if r.Mode != "auto" || r.Fallback != c.want || len(r.Hits) != 1 || r.Hits[0].Path != "Sleep log.md" {
				t.Errorf("%+v, want the keyword hit and fallback %q", r, c.want)
			}
			if !strings.Contains(stderr, "searched by keyword: "+c.want) {
				t.Errorf("stderr %q does not say why", stderr)
			}
			t.Logf("%s in %v", c.name, time.Since(start))
		})
	}
}

// TestAskSaysWhenSearchedByKeyword: an answer whose notes could not be
// searched by meaning says so under it, and why; with the notes embedded
// it finds the sleep note for a German question and says nothing of it.
func TestAskSaysWhenSearchedByKeyword(t *testing.T) {
	ollama := llmtest.NewOllama(t, "embeddinggemma")
	env := []string{"OLLAMA_HOST=" + ollama.URL}
	for _, c := range []struct {
		name string
		bare bool
		want string
	}{
		{"no vectors", true, "\nsearched by keyword: " + retrieve.FallbackNoVectors + "\n"},
		{"embedded", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := meaningVault(t, ollama.URL, c.bare)
			out, stderr, code := runMargin(t, env, "ask", "--vault", dir, "wie habe ich geschlafen")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			said := strings.Contains(out, "searched by keyword")
			if c.want != "" && !strings.Contains(out, c.want) || c.want == "" && said {
				t.Errorf("the answer:\n%s\nwant %q under it", out, c.want)
			}
			if cited := strings.Contains(out, "[[Sleep log"); cited == c.bare {
				t.Errorf("the answer cites the sleep note: %v, want %v:\n%s", cited, !c.bare, out)
			}
		})
	}
}
