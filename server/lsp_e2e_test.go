package server_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// utf16Len counts s in UTF-16 code units, as LSP positions do.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func uriOf(dir, rel string) string { return "file://" + dir + "/" + rel }

func openNote(e *editortest.Editor, dir, rel string, version int, text string) {
	e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, rel), "version": version, "languageId": "markdown", "text": text}})
}

// at is the position of character ch of line.
func at(line, ch int) protocol.Position { return protocol.Position{Line: line, Character: ch} }

func lensesOf(t testing.TB, e *editortest.Editor, dir, rel string) []protocol.CodeLens {
	t.Helper()
	var ls []protocol.CodeLens
	e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, rel)}}, &ls)
	return ls
}

// run executes a protocol.CodeLens's command as the editor does when it is clicked.
func run(t *testing.T, e *editortest.Editor, l protocol.CodeLens, result any) {
	t.Helper()
	e.MustCall("workspace/executeCommand", map[string]any{"command": l.Command.Command, "arguments": l.Command.Arguments}, result)
}

// editorAnswering makes e answer workspace/applyEdit with applied and
// returns the requests it got.
func editorAnswering(e *editortest.Editor, applied bool) func() []protocol.ApplyEditParams {
	var mu sync.Mutex
	var got []protocol.ApplyEditParams
	e.OnRequest("workspace/applyEdit", func(p json.RawMessage) (any, *editortest.RPCError) {
		var r protocol.ApplyEditParams
		json.Unmarshal(p, &r)
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		return map[string]any{"applied": applied}, nil
	})
	return func() []protocol.ApplyEditParams {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

// applyLineEdits applies an applyEdit request's edits to text. margin's
// edits replace whole lines, so characters must be 0.
func applyLineEdits(t *testing.T, text string, r protocol.ApplyEditParams) string {
	t.Helper()
	lines := strings.SplitAfter(text, "\n")
	for _, dc := range r.Edit.DocumentChanges {
		for _, ed := range slices.Backward(dc.Edits) {
			if ed.Range.Start.Character != 0 || ed.Range.End.Character != 0 {
				t.Fatalf("edit %+v does not replace whole lines", ed)
			}
			tail := slices.Clone(lines[min(ed.Range.End.Line, len(lines)):])
			lines = append(append(lines[:ed.Range.Start.Line], strings.SplitAfter(ed.NewText, "\n")...), tail...)
		}
	}
	return strings.Join(lines, "")
}

func TestInitializeAdvertisesTheLSPSurface(t *testing.T) {
	dir := editortest.SampleVault(t)
	for _, tc := range []struct {
		name    string
		offered []string
		want    string
	}{
		{"no encodings offered", nil, "utf-16"},
		{"utf-8 offered first", []string{"utf-8", "utf-16"}, "utf-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false", "OLLAMA_HOST=http://127.0.0.1:1"})
			caps := map[string]any{}
			if tc.offered != nil {
				caps["general"] = map[string]any{"positionEncodings": tc.offered}
			}
			var res struct {
				Capabilities struct {
					PositionEncoding       string
					HoverProvider          bool
					CodeLensProvider       *struct{ ResolveProvider bool }
					ExecuteCommandProvider struct{ Commands []string }
					TextDocumentSync       struct {
						OpenClose bool
						Change    int
					}
				}
			}
			json.Unmarshal(e.InitializeWith(dir, caps), &res)
			c := res.Capabilities
			if c.PositionEncoding != tc.want {
				t.Errorf("positionEncoding = %q, want %q", c.PositionEncoding, tc.want)
			}
			if !c.HoverProvider || c.CodeLensProvider == nil || !c.TextDocumentSync.OpenClose || c.TextDocumentSync.Change != 2 {
				t.Errorf("capabilities = %+v, want hover, code lenses and incremental sync", c)
			}
			for _, cmd := range []string{"margin.confirm", "margin.reject", "margin.confirmAll", "margin.preview", "margin.wake", "margin.ask", "margin.showChanges"} {
				if !slices.Contains(c.ExecuteCommandProvider.Commands, cmd) {
					t.Errorf("executeCommandProvider.commands = %v, lacks %s", c.ExecuteCommandProvider.Commands, cmd)
				}
			}
		})
	}
}

func TestHoverOnTaskLinks(t *testing.T) {
	e, _, dir, _, _ := proposed(t)
	hoverAt := func(line, ch int) *protocol.Hover {
		t.Helper()
		var h *protocol.Hover
		e.MustCall("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, "Daily/2026-11-21.md")},
			"position": map[string]any{"line": line, "character": ch}}, &h)
		return h
	}

	// The buffer, not the file, is what the links are read from: the
	// editor has typed a line with an emoji and Japanese before a link.
	prefix := "🚀 東京で "
	aliased := "[[Ship invoice export|the export]]"
	text := "## 09:00\n" + prefix + aliased + " and [[Invoicing overview]]\n[[Ship invoice export#Checklist]]\n"
	openNote(e, dir, "Daily/2026-11-21.md", 1, text)

	start := utf16Len(prefix)
	h := hoverAt(1, start+3)
	if h == nil {
		t.Fatal("no hover on an aliased task link")
	}
	for _, want := range []string{"**Ship invoice export**", "QA and docs left.", "in-progress", "due 2026-11-27", "3 suggested changes"} {
		if !strings.Contains(h.Contents.Value, want) {
			t.Errorf("hover lacks %q:\n%s", want, h.Contents.Value)
		}
	}
	if want := (protocol.Range{Start: at(1, start), End: at(1, start+utf16Len(aliased))}); h.Contents.Kind != "markdown" || h.Range != want {
		t.Errorf("hover %s range %+v, want markdown over %+v", h.Contents.Kind, h.Range, want)
	}
	if h := hoverAt(2, 25); h == nil || !strings.Contains(h.Contents.Value, "QA and docs left.") {
		t.Errorf("hover on a link to a heading of the task = %+v", h)
	}
	for _, p := range []protocol.Position{at(1, start-1), at(1, 1), at(1, start+utf16Len(aliased)+10), at(0, 3), at(9, 0)} {
		if h := hoverAt(p.Line, p.Character); h != nil {
			t.Errorf("hover at %+v (not on a task link) = %+v, want null", p, h)
		}
	}

	// An incremental change puts another emoji in front: the link moves
	// by its two UTF-16 units and a space.
	e.Notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, "Daily/2026-11-21.md"), "version": 2},
		"contentChanges": []map[string]any{{"range": protocol.Range{Start: at(1, 0), End: at(1, 0)}, "text": "🎉 "}}})
	if h := hoverAt(1, start+2); h != nil {
		t.Errorf("hover before the moved link = %+v, want null", h)
	}
	if h := hoverAt(1, start+3); h == nil || h.Range.Start != at(1, start+3) {
		t.Errorf("hover on the moved link = %+v, want it starting at character %d", h, start+3)
	}

	// A report open in the editor is read from its buffer too; a TLDR
	// typed over two lines is one line in a lens title.
	report := readFile(t, dir, shipReport)
	if !strings.Contains(report, `tldr: "QA and docs left."`) {
		t.Fatalf("report:\n%s", report)
	}
	openNote(e, dir, shipReport, 1, strings.Replace(report, "QA and docs left.", `Typed,\nnot saved.`, 1))
	if h := hoverAt(1, start+3); h == nil || !strings.Contains(h.Contents.Value, "Typed,\nnot saved.") {
		t.Errorf("hover with the report open = %+v, want the buffer's TLDR", h)
	}
	if ls := lensesOf(t, e, dir, shipTask); len(ls) == 0 || ls[0].Command.Title != "TLDR: Typed, not saved." {
		t.Errorf("task lenses with the report open = %+v, want the buffer's TLDR on one line", ls)
	}
}

func TestCodeLensApplyEditsTheTask(t *testing.T) {
	for _, tc := range []struct {
		name string
		open bool
	}{
		{"task closed: on disk", false},
		{"task open: through the editor", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, dir, _, cs := proposed(t)
			edits := editorAnswering(e, true)
			before := readFile(t, dir, shipTask)
			if tc.open {
				openNote(e, dir, shipTask, 4, before)
			}
			var apply *protocol.CodeLens
			for _, l := range lensesOf(t, e, dir, cs.Path) {
				if l.Command.Title == "Apply" && slices.Equal(l.Command.Arguments, []any{cs.ID, "c1"}) {
					apply = &l
				}
			}
			if apply == nil {
				t.Fatalf("no Apply lens for c1 of %s", cs.ID)
			}
			var got protocol.ChangeSet
			run(t, e, *apply, &got)
			if itemStatus(got, "c1") != "confirmed" {
				t.Fatalf("after Apply: %+v, want c1 confirmed", got)
			}
			after := readFile(t, dir, shipTask)
			if !tc.open {
				added, removed := changedLines(before, after)
				if !slices.Equal(added, []string{"estimate: 2h"}) || !slices.Equal(removed, []string{"estimate: 1d"}) {
					t.Errorf("task diff on disk: +%q -%q, want only the estimate", added, removed)
				}
				if n := len(edits()); n != 0 {
					t.Errorf("%d applyEdit requests for a closed note", n)
				}
				return
			}
			if after != before {
				t.Error("the open task note was written on disk")
			}
			reqs := edits()
			if len(reqs) != 1 || reqs[0].Edit.DocumentChanges[0].TextDocument.URI != uriOf(dir, shipTask) || reqs[0].Edit.DocumentChanges[0].TextDocument.Version != 4 {
				t.Fatalf("applyEdit requests = %+v, want one edit of the task at version 4", reqs)
			}
			added, removed := changedLines(before, applyLineEdits(t, before, reqs[0]))
			if !slices.Equal(added, []string{"estimate: 2h"}) || !slices.Equal(removed, []string{"estimate: 1d"}) {
				t.Errorf("the editor's edit: +%q -%q, want only the estimate", added, removed)
			}
		})
	}
}

func TestCodeLensShowsTheChangesOfATask(t *testing.T) {
	e, _, dir, _, cs := proposedFor(t, map[string]any{"window": map[string]any{"showDocument": map[string]any{"support": true}}}, nil)
	var mu sync.Mutex
	var shown []string
	e.OnRequest("window/showDocument", func(p json.RawMessage) (any, *editortest.RPCError) {
		var v struct{ URI string }
		json.Unmarshal(p, &v)
		mu.Lock()
		shown = append(shown, v.URI)
		mu.Unlock()
		return map[string]any{"success": true}, nil
	})
	ls := lensesOf(t, e, dir, shipTask)
	if len(ls) != 3 || ls[1].Command.Title != "3 suggested changes" || ls[1].Command.Command != "margin.showChanges" {
		t.Fatalf("task lenses = %+v, want the TLDR, the suggested changes and apply all", ls)
	}
	var got struct {
		ID    string
		Shown bool
		Items []struct{ ID string }
	}
	run(t, e, ls[1], &got)
	mu.Lock()
	defer mu.Unlock()
	var paths []string
	for _, s := range shown {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "file" {
			t.Fatalf("window/showDocument uri %q: %v", s, err)
		}
		paths = append(paths, u.Path)
	}
	if !got.Shown || got.ID != cs.ID || len(got.Items) != 3 || !slices.Equal(paths, []string{dir + "/" + cs.Path}) {
		t.Errorf("showChanges = %+v, shown %q; want the change set file opened and its items listed", got, shown)
	}
}

// emojiModel proposes a checklist item whose line has an emoji and CJK
// text, and reports.
func emojiModel(o *llmtest.Ollama) {
	firstWakeProposes(o, "QA left.", llmtest.ToolCall{Name: "add_multiple_checklist_items", Args: map[string]any{"items": []map[string]string{{"title": "Tell 東京 🚀 team"}}}})
}

func TestCodeLensRangesCountUTF16(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	emojiModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	createAgent(t, e, shipTask)
	var cs protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the change set", "margin/changeSetCreated", 1, nil), &cs)
	lines := strings.Split(readFile(t, dir, cs.Path), "\n")
	ls := lensesOf(t, e, dir, cs.Path)
	if len(ls) != 3 {
		t.Fatalf("lenses = %+v, want Apply, Reject and Diff", ls)
	}
	line := lines[ls[0].Range.Start.Line]
	if !strings.Contains(line, "Tell 東京 🚀 team") {
		t.Fatalf("lens on line %q, want the item's", line)
	}
	if want := (protocol.Range{Start: at(ls[0].Range.Start.Line, 0), End: at(ls[0].Range.Start.Line, utf16Len(line))}); ls[0].Range != want {
		t.Errorf("lens range = %+v, want the whole line in UTF-16 units %+v (%d bytes)", ls[0].Range, want, len(line))
	}
}

func TestCodeLensRefresh(t *testing.T) {
	for _, tc := range []struct {
		name     string
		supports bool
	}{
		{"client supports refresh", true},
		{"client does not", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := map[string]any{"workspace": map[string]any{"codeLens": map[string]any{"refreshSupport": tc.supports}}}
			e, _, _, _, cs := proposedFor(t, caps, func(e *editortest.Editor) {
				e.OnRequest("workspace/codeLens/refresh", func(json.RawMessage) (any, *editortest.RPCError) { return nil, nil })
			})
			// After each event that changes lenses, a refresh follows.
			after := func(event string) {
				t.Helper()
				seen := false
				e.WaitFor("a refresh after "+event, func(m editortest.Message) bool {
					seen = seen || m.Method == event
					return seen && m.Method == "workspace/codeLens/refresh"
				})
			}
			var got protocol.ChangeSet
			e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "rejected"}}}, &got)
			if tc.supports {
				after("margin/changeSetCreated")
				after("margin/reportUpdated")
				after("margin/changeApplied")
				return
			}
			e.WaitFor("c1 decided", func(m editortest.Message) bool { return m.Method == "margin/changeApplied" })
			e.MustCall("vault/status", nil, nil) // a round trip after the last event
			for _, m := range e.Received() {
				if m.Method == "workspace/codeLens/refresh" {
					t.Fatal("a refresh was sent to a client that does not support it")
				}
			}
		})
	}
}

// TestEditorCommands runs each command margin advertises the way an
// editor does, most of them from the lens that carries them.
func TestEditorCommands(t *testing.T) {
	e, _, dir, a, cs := proposed(t)
	find := func(ls []protocol.CodeLens, title string, args ...any) protocol.CodeLens {
		t.Helper()
		for _, l := range ls {
			if l.Command.Title == title && (args == nil || slices.Equal(l.Command.Arguments, args)) {
				return l
			}
		}
		t.Fatalf("no %q lens with %v in %+v", title, args, ls)
		return protocol.CodeLens{}
	}

	var got protocol.ChangeSet
	run(t, e, find(lensesOf(t, e, dir, cs.Path), "Reject", cs.ID, "c2"), &got)
	if itemStatus(got, "c2") != "rejected" {
		t.Errorf("after Reject on c2: %+v", got)
	}
	e.MustCall("workspace/executeCommand", map[string]any{"command": "margin.reject", "arguments": []string{cs.ID, "c3", "the changelog is automatic"}}, &got)
	if itemStatus(got, "c3") != "rejected" || got.Items[2].Reason != "the changelog is automatic" {
		t.Errorf("margin.reject with a reason: %+v", got)
	}
	run(t, e, find(lensesOf(t, e, dir, shipTask), "Apply all"), &got)
	if itemStatus(got, "c1") != "confirmed" || got.Status != "resolved" {
		t.Errorf("after Apply all: %+v, want c1 confirmed and the set resolved", got)
	}
	if !strings.Contains(readFile(t, dir, shipTask), "\nestimate: 2h\n") {
		t.Error("Apply all did not apply c1 to the task")
	}

	run(t, e, find(lensesOf(t, e, dir, shipTask), "TLDR: QA and docs left."), nil)
	poll(t, "a requested wake to finish", func() bool {
		var act protocol.Activity
		e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
		for _, r := range act.Runs {
			if strings.Contains(r.Reason, "requested") && !r.Finished.IsZero() {
				return true
			}
		}
		return false
	})

	var ans struct{ SessionID, Status, Answer string }
	e.MustCall("workspace/executeCommand", map[string]any{"command": "margin.ask", "arguments": []string{"When is the invoice export due?"}}, &ans)
	if ans.SessionID == "" || ans.Status == "" {
		t.Errorf("margin.ask = %+v, want a query/ask result", ans)
	}
}
