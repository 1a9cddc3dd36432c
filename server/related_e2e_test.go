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

// TestAgentProposesALinkToARelatedNote: through the built binary, once
// the vault is embedded a task agent's wake shows the notes near its task
// that it does not link; the model proposes a link to one, which the
// person previews and approves (a [[link]] under the task's Related
// heading) and undoes, the task then byte for byte as before.
func TestAgentProposesALinkToARelatedNote(t *testing.T) {
	const task = "Tasks/Sleep better.md"
	fake := llmtest.NewOllama(t, taskModel, "embeddinggemma")
	var once sync.Once
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		reply := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_report", Args: map[string]any{"tldr": "Naps help; nights are short.", "content": "## Status\n- naps help\n"}}}}
		if strings.Contains(userMessage(r), "[data: related note Notes/Schlaf.md") {
			once.Do(func() {
				link := llmtest.ToolCall{Name: "link_related_notes", Args: map[string]any{"notes": []map[string]string{{"path": "Notes/Schlaf.md"}}, "human_summary": "the same nights"}}
				reply.ToolCalls = append([]llmtest.ToolCall{link}, reply.ToolCalls...)
			})
		}
		return reply
	})
	files := map[string]string{task: "---\ntype: task\nstatus: open\n---\n# Sleep better\n\nSlept badly; a nap and rest help.\n\nSee [[Sleep]].\n"}
	for p, s := range meaningVault {
		files[p] = s
	}
	dir := writeVault(t, files)
	e := startEmbedding(t, dir, agentEnv(fake.URL))
	waitEmbedded(t, e)
	before := readFile(t, dir, task)

	a := createAgent(t, e, task)
	var cs protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the change set", "margin/changeSetCreated", 1, forTask(task)), &cs)
	waitWakes(t, e, a.ID, 1)
	if len(cs.Items) != 1 || cs.Items[0].Tool != "add_link" || cs.Items[0].Summary != "Link [[Schlaf]] under Related (because: the same nights)" {
		t.Fatalf("change set %+v, want one add_link item linking [[Schlaf]]", cs)
	}
	if file := readFile(t, dir, cs.Path); !strings.Contains(file, "- [ ] Link [[Schlaf]] under Related (because: the same nights) ^c1\n") {
		t.Errorf("the set's file has no checkbox for the link:\n%s", file)
	}
	want := before + "\n## Related\n- [[Schlaf]]\n"
	var p protocol.ChangePreview
	e.MustCall("changes/preview", map[string]any{"id": cs.ID, "item": "c1"}, &p)
	if p.After != want || p.Before != before {
		t.Errorf("preview: before %q after %q, want after %q", p.Before, p.After, want)
	}
	var got protocol.ChangeSet
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, &got)
	if now := readFile(t, dir, task); now != want || itemStatus(got, "c1") != "confirmed" {
		t.Fatalf("after approving (%+v):\n%s", got, now)
	}
	e.MustCall("changes/undo", map[string]any{"id": cs.ID, "item": "c1"}, &got)
	if now := readFile(t, dir, task); now != before || itemStatus(got, "c1") != "undone" {
		t.Errorf("after the undo (%+v), the task is not as before, byte for byte:\n%q\nwant:\n%q", got, now, before)
	}
}
