package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// meaningVault is a small vault of notes on a few of llmtest.Meanings'
// concepts: Sleep.md and Schlaf.md are of one meaning and not linked;
// Naps.md is of that meaning too but links Sleep; Garden.md has two
// sections of another meaning.
var meaningVault = map[string]string{
	"Notes/Sleep.md":  "# Sleep\n\nSlept badly again; a nap after lunch and rest help.\n",
	"Notes/Schlaf.md": "# Nachtruhe\n\nSchlaf und schlafen: dormir, sommeil.\n",
	"Notes/Naps.md":   "# Naps\n\nA short nap is rest too. See [[Sleep]].\n",
	"Notes/Garden.md": "# Garden\n\n## Beds\n\nPlants and seeds in the raised beds.\n\n## Tools\n\nGardening gloves and a trowel.\n",
	"Notes/Money.md":  "# Budget\n\nExpenses and spending this month.\n",
}

func writeVault(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, text := range files {
		writeNote(t, dir, p, text)
	}
	return dir
}

func writeNote(t testing.TB, dir, path, text string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// embedEnv serves with the fake Ollama, which has the embedding model.
func embedEnv(url string, extra ...string) []string {
	return append([]string{"OLLAMA_HOST=" + url, "MARGIN_AGENTS_AUTO_CREATE=false", "MARGIN_WATCH_DEBOUNCE=30ms", "MARGIN_LLM_RETRY_LLM_RETRY=0"}, extra...)
}

// startEmbedding serves dir to a client that accepts progress tokens.
func startEmbedding(t *testing.T, dir string, env []string) *editortest.Editor {
	t.Helper()
	e := editortest.Start(t, env)
	e.OnRequest("window/workDoneProgress/create", func(json.RawMessage) (any, *editortest.RPCError) { return nil, nil })
	e.InitializeWith(dir, map[string]any{"window": map[string]any{"workDoneProgress": true}})
	return e
}

func embeddingStatus(t testing.TB, e *editortest.Editor) protocol.EmbeddingStatus {
	t.Helper()
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	return st.Embedding
}

// waitEmbedded waits until every chunk is embedded and the queue is idle,
// and returns the status then.
func waitEmbedded(t testing.TB, e *editortest.Editor) protocol.EmbeddingStatus {
	t.Helper()
	var st protocol.EmbeddingStatus
	poll(t, "every chunk embedded", func() bool {
		st = embeddingStatus(t, e)
		return st.State == "idle" && st.Left == 0 && st.Embedded > 0
	})
	return st
}

func TestRelatedNotesAreNearAndNotLinked(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))

	st := waitEmbedded(t, e)
	if st.Model != "ollama/embeddinggemma@768" || st.KeywordOnly || st.Why != "" || st.Embedded != 6 {
		t.Errorf("status once embedded = %+v, want the model, 6 chunks and search by meaning", st)
	}
	// The client was shown the embedding as work-done progress, on a
	// token the server created.
	begin := waitNth(e, "progress begin", "$/progress", 1, progressKind("begin"))
	end := waitNth(e, "progress end", "$/progress", 1, progressKind("end"))
	if !strings.Contains(string(begin), "Embedding notes") || !strings.Contains(string(end), "chunks embedded") {
		t.Errorf("progress begin %s, end %s: want the title and what was embedded", begin, end)
	}

	var res protocol.RelatedResult
	e.MustCall("vault/related", protocol.RelatedParams{Path: "Notes/Sleep.md"}, &res)
	if len(res.Notes) == 0 || res.Notes[0].Path != "Notes/Schlaf.md" || res.Notes[0].Line != 1 || res.Notes[0].Score < 0.5 {
		t.Fatalf("related to Sleep = %+v, want Schlaf.md first (its heading, line 1, near)", res)
	}
	for _, n := range res.Notes {
		if n.Path == "Notes/Sleep.md" || n.Path == "Notes/Naps.md" {
			t.Errorf("related to Sleep lists %s: itself, or a note that links it", n.Path)
		}
	}
	// Linked the other way round: Sleep is linked from Naps.
	e.MustCall("vault/related", protocol.RelatedParams{Path: "Notes/Naps.md", Limit: 2}, &res)
	if len(res.Notes) != 2 || res.Notes[0].Path != "Notes/Schlaf.md" {
		t.Errorf("related to Naps = %+v, want 2 notes, Schlaf.md first and no Sleep.md", res)
	}
	for _, n := range res.Notes {
		if n.Path == "Notes/Sleep.md" {
			t.Errorf("related to Naps lists Sleep.md, which it links")
		}
	}

	var rpcErr *editortest.RPCError
	if rpcErr = e.Call("vault/related", protocol.RelatedParams{Path: "Notes/Nowhere.md"}, &res); rpcErr == nil || rpcErr.Code != server.CodeNotFound {
		t.Errorf("related to a missing note: %v, want code %d", rpcErr, server.CodeNotFound)
	}
	if rpcErr = e.Call("vault/related", protocol.RelatedParams{Path: "Notes/Sleep.md", Limit: -1}, &res); rpcErr == nil || !strings.Contains(rpcErr.Message, "limit") {
		t.Errorf("a negative limit: %v, want invalid params naming limit", rpcErr)
	}
}

func progressKind(kind string) func(json.RawMessage) bool {
	return func(p json.RawMessage) bool {
		var v struct {
			Token string
			Value struct{ Kind string }
		}
		json.Unmarshal(p, &v)
		return strings.HasPrefix(v.Token, "margin/embedding/") && v.Value.Kind == kind
	}
}

func TestAnEditEmbedsOnlyItsChangedChunks(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))
	waitEmbedded(t, e)
	texts, calls := fake.Embedder.Inputs(), len(fake.Embedder.Calls())
	if texts != 6 {
		t.Errorf("first embedding sent %d texts, want one per chunk: 6", texts)
	}

	// One of Garden's two sections changes.
	writeNote(t, dir, "Notes/Garden.md", "# Garden\n\n## Beds\n\nPlants and seeds in the raised beds.\n\n## Tools\n\nGardening gloves, a trowel and a hoe.\n")
	poll(t, "the edit embedded", func() bool {
		st := embeddingStatus(t, e)
		return fake.Embedder.Inputs() > texts && st.State == "idle" && st.Left == 0
	})
	if got := fake.Embedder.Inputs() - texts; got != 1 {
		t.Errorf("the edit sent %d texts, want 1: the changed section's chunk", got)
	}
	if got := len(fake.Embedder.Calls()) - calls; got != 1 {
		t.Errorf("the edit made %d embed calls, want 1", got)
	}
}

func TestEmbeddingResumesAfterAKill(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))
	waitEmbedded(t, e)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	// Enough notes for several batches, of which the first is held and
	// margin killed during it.
	const more = 80
	for i := range more {
		writeNote(t, dir, fmt.Sprintf("Log/Day %02d.md", i), fmt.Sprintf("# Day %d\n\nRan %d laps and slept %d hours.\n", i, i, i))
	}
	before := fake.Embedder.Inputs()
	release := fake.Embedder.Hold()
	defer release()
	calls := len(fake.Embedder.Calls())
	e = startEmbedding(t, dir, embedEnv(fake.URL))
	poll(t, "an embed call held", func() bool { return len(fake.Embedder.Calls()) > calls })
	held := fake.Embedder.Calls()[len(fake.Embedder.Calls())-1]
	if err := e.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	e.Exit()
	if fake.Embedder.Inputs() != before {
		t.Fatalf("%d texts embedded while held", fake.Embedder.Inputs()-before)
	}
	// Released, the fake may still answer the held call to the killed
	// process, counting its texts, or not: which is the fake's timing.
	release()

	e = startEmbedding(t, dir, embedEnv(fake.URL))
	st := waitEmbedded(t, e)
	if st.Embedded != 6+more {
		t.Errorf("embedded %d chunks after the restart, want %d", st.Embedded, 6+more)
	}
	// The notes embedded before were not embedded again, and the
	// restart embedded each new chunk once: the lost batch is the only
	// work done twice.
	if got := fake.Embedder.Inputs() - before; got != more && got != more+len(held.Input) {
		t.Errorf("the restart embedded %d texts, want %d: the new chunks, each once (and the held call's %d, if the fake answered it after the kill)", got, more, len(held.Input))
	}
	if len(held.Input) == 0 {
		t.Errorf("the held call had no texts")
	}
}

func TestOfflineEmbedderLeavesKeywordSearch(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	fake.Stop()
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))

	var st protocol.EmbeddingStatus
	poll(t, "the queue waiting for the model", func() bool {
		st = embeddingStatus(t, e)
		return st.State == "waiting"
	})
	if !st.KeywordOnly || !strings.Contains(st.Why, "waiting to retry") || st.LastError == "" || st.Resumes.IsZero() || st.Left == 0 {
		t.Errorf("offline status = %+v, want keyword only, why, the error, when it retries and what is left", st)
	}
	var hits protocol.SearchResult
	e.MustCall("vault/search", protocol.SearchParams{Query: "trowel"}, &hits)
	if len(hits.Hits) != 1 || hits.Hits[0].Path != "Notes/Garden.md" {
		t.Errorf("keyword search while offline = %+v, want Garden.md", hits.Hits)
	}
	var res protocol.RelatedResult
	e.MustCall("vault/related", protocol.RelatedParams{Path: "Notes/Sleep.md"}, &res)
	if res.Notes == nil || len(res.Notes) != 0 || !strings.Contains(res.Reason, "not embedded yet") {
		t.Errorf("related while nothing is embedded = %+v, want an empty list and the reason", res)
	}
}

// TestOneProcessEmbeds: margin embed beside a margin serve that embeds
// the vault says so and embeds nothing; margin status reads serve's
// progress.
func TestOneProcessEmbeds(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))
	waitEmbedded(t, e)
	texts := fake.Embedder.Inputs()

	run := func(args ...string) (string, int) {
		cmd := exec.Command(editortest.Binary(t), append(args, "--vault", dir)...)
		cmd.Env = append(os.Environ(), "OLLAMA_HOST="+fake.URL, "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := run("embed"); code != 1 || !strings.Contains(out, "another margin process") {
		t.Errorf("margin embed beside serve: exit %d\n%s\nwant 1 and that another process embeds", code, out)
	}
	if fake.Embedder.Inputs() != texts {
		t.Errorf("margin embed beside serve embedded %d texts", fake.Embedder.Inputs()-texts)
	}
	if out, _ := run("status"); !strings.Contains(out, "embedding  idle (in another margin process), 6 of 6 chunks") {
		t.Errorf("margin status beside serve:\n%s\nwant serve's progress", out)
	}
}
