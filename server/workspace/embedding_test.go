package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/vectors"
)

// TestEmbeddingStatesOnTheWire holds what vault/status and margin status
// --json say of the embedding in the states the workspace knows beyond
// the queue's: off (no model, or a store that cannot be read; off wins
// over opening), opening (margin serve before the store opens), and
// stopped (no queue runs).
func TestEmbeddingStatesOnTheWire(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	model, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		client     *llm.Client
		background bool // margin serve's: the store opens after a scan no test runs
		unreadable bool
		want       string
	}{
		{"no model", nil, false, false,
			`{"state":"off","keywordOnly":true,"why":"no model is configured","embedded":0,"left":0,"rate":0,"tokensToday":0,"dailyTokens":100}`},
		{"no model, opening", nil, true, false,
			`{"state":"off","keywordOnly":true,"why":"no model is configured","embedded":0,"left":0,"rate":0,"tokensToday":0,"dailyTokens":100}`},
		{"opening", model, true, false,
			`{"state":"opening","keywordOnly":true,"why":"the notes' vectors open a moment after margin starts","model":"ollama/embeddinggemma@768","embedded":0,"left":0,"rate":0,"tokensToday":0,"dailyTokens":100}`},
		{"stopped", model, false, false,
			`{"state":"stopped","keywordOnly":true,"why":"no note is embedded yet","model":"ollama/embeddinggemma@768","embedded":0,"left":0,"rate":0,"tokensToday":0,"dailyTokens":100}`},
		{"unreadable", model, false, true,
			`{"state":"off","keywordOnly":true,"why":"the vectors database cannot be read (opening vectors: opening database STORE: file is not a database (26)): searching by keyword","embedded":0,"left":0,"rate":0,"tokensToday":0,"dailyTokens":100}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "Plan.md"), []byte("# Plan\n\nShip the export.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			store := filepath.Join(dir, ".margin", vectors.FileName)
			if tt.unreadable {
				if err := os.MkdirAll(filepath.Dir(store), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(store, []byte(strings.Repeat("not a database ", 100)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			ws, err := workspace.Open(ctx, workspace.Options{
				Vault: vault.Options{Dir: dir}, Parts: workspace.Embeddings, LLM: tt.client,
				Embed: workspace.EmbedOptions{DailyTokens: 100, Background: tt.background},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			e, err := ws.Vectors.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(wire.EmbeddingStatus(e))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.ReplaceAll(string(b), store, "STORE"); got != tt.want {
				t.Errorf("on the wire\n\t%s\nwant\n\t%s", got, tt.want)
			}
		})
	}
}
