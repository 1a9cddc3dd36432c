package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	mcpserver "github.com/margin-md/margin/server/mcp"
	"github.com/margin-md/margin/server/workspace"
)

// relatedRig serves a vault of notes of a few meanings with the notes'
// vectors open, as margin mcp opens them, over the fake embedder.
func relatedRig(t *testing.T) (*rig, *llmtest.Ollama) {
	t.Helper()
	dir := t.TempDir()
	for p, text := range map[string]string{
		"Notes/Sleep.md":  "# Sleep\n\nSlept badly again; a nap after lunch and rest help.\n",
		"Notes/Schlaf.md": "# Nachtruhe\n\nSchlaf und schlafen: dormir, sommeil.\n",
		"Notes/Naps.md":   "# Naps\n\nA short nap is rest too. See [[Sleep]].\n",
		"Notes/Garden.md": "# Garden\n\nPlants and seeds in the raised beds.\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fake := llmtest.NewOllama(t, "embeddinggemma")
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := workspace.Options{Parts: workspace.Changes | workspace.Query | workspace.Reviews | workspace.Embeddings, Scan: true, Ledger: &ledger.Slot{}, LLM: client}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(ctx, ws, mcpserver.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := sdk.NewInMemoryTransports()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx, st) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "Test Client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		stop()
		<-done
		ws.Close()
	})
	return &rig{dir: dir, ws: ws, s: s, cs: cs}, fake
}

func TestRelatedNotes(t *testing.T) {
	r, _ := relatedRig(t)

	res := r.call(t, "related_notes", map[string]any{"path": "Notes/Sleep.md"})
	got := structured[mcpserver.RelatedResult](t, res)
	if res.IsError || len(got.Notes) != 0 || !strings.Contains(got.Reason, "not embedded yet") || !strings.HasPrefix(text(res), "No related notes: ") {
		t.Errorf("before embedding: %+v %q, want no notes, the reason, and no error", got, text(res))
	}

	e, err := r.ws.Vectors.Embed(context.Background(), func(workspace.Embedding) {})
	if err != nil || e.Left != 0 || e.Embedded != 4 {
		t.Fatalf("Embed = %+v, %v; want 4 chunks embedded", e, err)
	}
	res = r.call(t, "related_notes", map[string]any{"path": "Notes/Sleep.md", "limit": 5})
	got = structured[mcpserver.RelatedResult](t, res)
	if res.IsError || len(got.Notes) != 2 || got.Notes[0].Path != "Notes/Schlaf.md" || got.Notes[1].Path != "Notes/Garden.md" {
		t.Fatalf("related to Sleep = %+v (%s), want Schlaf.md then Garden.md: not itself, not Naps.md that links it", got, text(res))
	}
	if !strings.Contains(text(res), "\nNotes/Schlaf.md:1 # Nachtruhe (0.") {
		t.Errorf("text:\n%s\nwant each note's place and score", text(res))
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "Notes/Nowhere.md"}, "no note at Notes/Nowhere.md"},
		{map[string]any{"path": "../outside.md"}, "outside"},
		{map[string]any{"path": "Notes/Sleep.md", "limit": -2}, "limit"},
	} {
		res := r.call(t, "related_notes", tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%v: error %v %q, want an error saying %q", tc.args, res.IsError, text(res), tc.want)
		}
	}
}
