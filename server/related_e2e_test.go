package server_test

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

func hoverOn(t testing.TB, e *editortest.Editor, dir, rel string, line, ch int) *protocol.Hover {
	t.Helper()
	var h *protocol.Hover
	e.MustCall("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, rel)},
		"position": map[string]any{"line": line, "character": ch}}, &h)
	return h
}

func relatedLenses(ls []protocol.CodeLens) []protocol.CodeLens {
	var out []protocol.CodeLens
	for _, l := range ls {
		if strings.HasPrefix(l.Command.Title, "Related: ") {
			out = append(out, l)
		}
	}
	return out
}

// TestRelatedNotesInLensAndHover: once the vault is embedded a note's
// first line has a "Related:" lens that opens the nearest note, and a
// hover on a link to a note names the notes related to it.
func TestRelatedNotesInLensAndHover(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	dir := writeVault(t, meaningVault)
	e := editortest.Start(t, embedEnv(fake.URL))
	var mu sync.Mutex
	var shown []map[string]any
	e.OnRequest("window/showDocument", func(p json.RawMessage) (any, *editortest.RPCError) {
		var v map[string]any
		json.Unmarshal(p, &v)
		mu.Lock()
		shown = append(shown, v)
		mu.Unlock()
		return map[string]any{"success": true}, nil
	})
	var refreshes atomic.Int32
	e.OnRequest("workspace/codeLens/refresh", func(json.RawMessage) (any, *editortest.RPCError) {
		refreshes.Add(1)
		return nil, nil
	})
	e.InitializeWith(dir, map[string]any{
		"window":    map[string]any{"showDocument": map[string]any{"support": true}},
		"workspace": map[string]any{"codeLens": map[string]any{"refreshSupport": true}},
	})
	waitEmbedded(t, e)
	// The editor is asked to fetch its lenses again once the queue is done:
	// there are Related lenses now.
	poll(t, "a code lens refresh after embedding", func() bool { return refreshes.Load() > 0 })

	ls := relatedLenses(lensesOf(t, e, dir, "Notes/Sleep.md"))
	if len(ls) != 1 || !strings.HasPrefix(ls[0].Command.Title, "Related: Schlaf") || strings.Contains(ls[0].Command.Title, "Naps") ||
		ls[0].Range.Start.Line != 0 || ls[0].Command.Command != "margin.showRelated" {
		t.Fatalf("Sleep's related lenses = %+v, want one on line 0 naming Schlaf first and not Naps, which links it", ls)
	}
	var res protocol.ShowRelatedResult
	run(t, e, ls[0], &res)
	mu.Lock()
	got := shown
	mu.Unlock()
	if !res.Shown || len(res.Notes) == 0 || res.Notes[0].Path != "Notes/Schlaf.md" || len(got) != 1 ||
		got[0]["uri"] != uriOf(dir, "Notes/Schlaf.md") || got[0]["takeFocus"] != true {
		t.Errorf("clicking the lens: %+v, showDocument %v; want Schlaf.md opened", res, got)
	}

	// Naps links [[Sleep]]: the hover on it names Sleep's related notes.
	h := hoverOn(t, e, dir, "Notes/Naps.md", 2, 31)
	if h == nil || !strings.HasPrefix(h.Contents.Value, "Related: [[Schlaf]]") || h.Range.Start != at(2, 29) {
		t.Errorf("hover on [[Sleep]] = %+v, want Related: [[Schlaf]]… over the link", h)
	}
	if h := hoverOn(t, e, dir, "Notes/Naps.md", 2, 2); h != nil {
		t.Errorf("hover off a link = %+v, want null", h)
	}
}

// TestNoRelatedNotesWithoutVectors: while nothing is embedded there is no
// Related lens and no hover on a link to a plain note, and no error.
func TestNoRelatedNotesWithoutVectors(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	fake.Stop()
	dir := writeVault(t, meaningVault)
	e := startEmbedding(t, dir, embedEnv(fake.URL))
	// The model is away: nothing can be embedded. Once the vectors are
	// open the lens and the hover ask them, and find none.
	poll(t, "the vectors open", func() bool { return embeddingStatus(t, e).State != "opening" })

	if ls := lensesOf(t, e, dir, "Notes/Sleep.md"); len(ls) != 0 {
		t.Errorf("lenses without vectors = %+v, want none", ls)
	}
	if h := hoverOn(t, e, dir, "Notes/Naps.md", 2, 31); h != nil {
		t.Errorf("hover on a plain link without vectors = %+v, want null", h)
	}
}
