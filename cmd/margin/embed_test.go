package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
)

// meaningNotes: Sleep and Schlaf are of one meaning and not linked; Naps
// is of it too but links Sleep.
var meaningNotes = map[string]string{
	"Notes/Sleep.md":  "# Sleep\n\nSlept badly again; a nap after lunch and rest help.\n",
	"Notes/Schlaf.md": "# Nachtruhe\n\nSchlaf und schlafen: dormir, sommeil.\n",
	"Notes/Naps.md":   "# Naps\n\nA short nap is rest too. See [[Sleep]].\n",
	"Notes/Garden.md": "# Garden\n\nPlants and seeds in the raised beds.\n",
}

func embedVault(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, text := range meaningNotes {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEmbedRelatedStatusAndDoctor(t *testing.T) {
	vault := embedVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b", "embeddinggemma")
	env := []string{"OLLAMA_HOST=" + fake.URL}

	out, _, code := runMargin(t, env, "related", "--vault", vault, "Notes/Sleep.md")
	if code != 0 || out != "" {
		t.Errorf("related before embedding: exit %d, stdout %q; want 0 and nothing", code, out)
	}

	out, errOut, code := runMargin(t, env, "embed", "--vault", vault)
	if code != 0 || !strings.Contains(out, "embedding  idle, 4 of 4 chunks") || !strings.Contains(out, "model    ollama/embeddinggemma@768") {
		t.Fatalf("embed: exit %d\n%s%s\nwant 0 and 4 of 4 chunks", code, out, errOut)
	}
	if fake.Embedder.Inputs() != 4 {
		t.Errorf("embed sent %d texts, want 4", fake.Embedder.Inputs())
	}
	// Nothing changed: a second run embeds nothing.
	if _, _, code := runMargin(t, env, "embed", "--vault", vault); code != 0 || fake.Embedder.Inputs() != 4 {
		t.Errorf("a second embed: exit %d, %d texts in all; want 0 and still 4", code, fake.Embedder.Inputs())
	}

	out, _, code = runMargin(t, env, "related", "--vault", vault, "Notes/Sleep.md")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || !strings.HasPrefix(lines[0], "Notes/Schlaf.md:1  #Nachtruhe  (0.") || strings.Contains(out, "Naps.md") {
		t.Errorf("related: exit %d\n%s\nwant Schlaf.md first and no Naps.md (it links Sleep)", code, out)
	}

	out, _, _ = runMargin(t, env, "status", "--vault", vault)
	if !strings.Contains(out, "embedding  stopped, 4 of 4 chunks") || strings.Contains(out, "search   by keyword") {
		t.Errorf("status:\n%s\nwant 4 of 4 chunks and search by meaning", out)
	}

	out, _, code = runMargin(t, env, "doctor", "--vault", vault)
	for _, want := range []string{
		"ok    embed ollama   reachable, with the embedding model",
		"ok    vectors        4 of 4 chunks embedded with ollama/embeddinggemma@768, 0 left (stopped); ",
		"tokens today, no daily limit (agents.daily_embed_token_budget: 0)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("doctor exit %d, want 0", code)
	}
}

func TestEmbedStopsAtTheDailyBudget(t *testing.T) {
	vault := embedVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b", "embeddinggemma")
	env := []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_AGENTS_DAILY_EMBED_TOKEN_BUDGET=30"}

	out, errOut, code := runMargin(t, env, "embed", "--vault", vault)
	if code != exitFailure || !strings.Contains(errOut, "daily budget of 30 tokens spent") || !strings.Contains(errOut, "agents.daily_embed_token_budget") {
		t.Errorf("embed over budget: exit %d\n%s%s\nwant %d, the budget and its key", code, out, errOut, exitFailure)
	}
	out, _, code = runMargin(t, env, "doctor", "--vault", vault)
	if code != 0 || !strings.Contains(out, "warn  vectors") || !strings.Contains(out, "may wait for tomorrow's budget") ||
		!strings.Contains(out, "raise agents.daily_embed_token_budget") {
		t.Errorf("doctor over budget: exit %d\n%s\nwant a warning that the budget paused it, and the fix", code, out)
	}
}

func TestEmbedWithoutAModelServer(t *testing.T) {
	vault := embedVault(t)
	fake := llmtest.NewOllama(t, "embeddinggemma")
	fake.Stop()
	env := []string{"OLLAMA_HOST=" + fake.URL}
	_, errOut, code := runMargin(t, env, "embed", "--vault", vault)
	if code != exitFailure || !strings.Contains(errOut, "the embedding model failed") {
		t.Errorf("embed offline: exit %d\n%s\nwant %d and why", code, errOut, exitFailure)
	}
	out, _, _ := runMargin(t, env, "doctor", "--vault", vault)
	if !strings.Contains(out, "warn  embed ollama") || !strings.Contains(out, "search is by keyword") {
		t.Errorf("doctor offline:\n%s\nwant a warning that search is by keyword", out)
	}
	out, _, code = runMargin(t, env, "search", "--vault", vault, "seeds")
	if code != 0 || !strings.Contains(out, "Notes/Garden.md") {
		t.Errorf("search offline: exit %d\n%s\nwant Garden.md", code, out)
	}
}

func TestAModelChangeEmbedsAgainAndSaysSo(t *testing.T) {
	vault := embedVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b", "embeddinggemma")
	env := []string{"OLLAMA_HOST=" + fake.URL}
	if out, errOut, code := runMargin(t, env, "embed", "--vault", vault); code != 0 {
		t.Fatalf("embed: exit %d\n%s%s", code, out, errOut)
	}
	spent := fake.Embedder.Tokens()

	// Fewer dimensions are another vector space; a budget of a little
	// more than the first run spent stops the second part way.
	env = append(env, "MARGIN_LLM_EMBED_DIMS=256", "MARGIN_AGENTS_DAILY_EMBED_TOKEN_BUDGET="+strconv.Itoa(spent+20))
	out, errOut, code := runMargin(t, env, "embed", "--vault", vault)
	if code != exitFailure || !strings.Contains(out, "the model changed from ollama/embeddinggemma@768: every chunk is embedded again") ||
		!strings.Contains(out, "model    ollama/embeddinggemma@256") {
		t.Errorf("embed with a new model over budget: exit %d\n%s%s\nwant the change of model said", code, out, errOut)
	}
	out, _, _ = runMargin(t, env, "doctor", "--vault", vault)
	if !strings.Contains(out, "the model changed from ollama/embeddinggemma@768, so every chunk is embedded again") {
		t.Errorf("doctor:\n%s\nwant the change of model said", out)
	}
	if out, errOut, code := runMargin(t, []string{"OLLAMA_HOST=" + fake.URL, "MARGIN_LLM_EMBED_DIMS=256"}, "embed", "--vault", vault); code != 0 || strings.Contains(out, "model changed") || !strings.Contains(out, "4 of 4 chunks") {
		t.Errorf("embed with the new model and no budget: exit %d\n%s%s\nwant all 4 chunks and the change done", code, out, errOut)
	}
}
