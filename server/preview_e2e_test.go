package server_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/server/protocol"
)

// A diff review through the binary: each item of an agent's change set
// previews as the task note now and after that item alone, with its
// frontmatter change as a property; the note open in the editor previews
// from its buffer; confirming an item writes exactly the previewed text;
// an item whose field the person changed previews as stale; a decided
// item is refused, and so is a preview of a note that cannot be read.
func TestChangePreviewDiffReview(t *testing.T) {
	e, _, dir, _, cs := proposed(t)
	preview := func(item string) protocol.ChangePreview {
		t.Helper()
		var p protocol.ChangePreview
		e.MustCall("changes/preview", map[string]any{"id": cs.ID, "item": item}, &p)
		return p
	}
	task := readFile(t, dir, shipTask)

	p := preview("c1")
	want := strings.Replace(task, "estimate: 1d", "estimate: 2h", 1)
	if p.ID != cs.ID || p.Item != "c1" || p.Path != shipTask || !p.Exists || p.InEditor || p.Stale || p.Before != task || p.After != want || p.Summary != "Set estimate to 2h" {
		t.Errorf("preview of c1 = %+v, want the task before and after the estimate", p)
	}
	if wantProps := []protocol.PropertyChange{{Key: "estimate", Before: "1d", After: "2h", Change: "changed"}}; !reflect.DeepEqual(p.Properties, wantProps) {
		t.Errorf("c1's properties = %+v, want %+v", p.Properties, wantProps)
	}
	if p := preview("c2"); len(p.Properties) != 0 || p.Stale {
		t.Errorf("preview of c2 = %+v, want no property", p)
	} else if added, removed := changedLines(p.Before, p.After); !reflect.DeepEqual(added, []string{"- [ ] Announce the export to Acme"}) || len(removed) != 0 {
		t.Errorf("c2 previews +%q -%q, want its checklist line added", added, removed)
	}

	// The Diff lens on c1's line of the set file runs margin.preview, which
	// a client without a diff view of its own gets the same preview from.
	var diff *protocol.CodeLens
	for _, l := range lensesOf(t, e, dir, cs.Path) {
		if l.Command.Title == "Diff" && reflect.DeepEqual(l.Command.Arguments, []any{cs.ID, "c1"}) {
			diff = &l
		}
	}
	if diff == nil {
		t.Fatalf("no Diff lens on c1 of %s", cs.ID)
	}
	var byLens protocol.ChangePreview
	run(t, e, *diff, &byLens)
	if !reflect.DeepEqual(byLens, p) {
		t.Errorf("margin.preview = %+v, want changes/preview's %+v", byLens, p)
	}

	// Open in the editor with typing not saved: the preview is of the
	// buffer, as applying would find it.
	uri := "file://" + dir + "/" + shipTask
	typed := task + "typed, not saved\n"
	e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 1, "languageId": "markdown", "text": typed}})
	if p := preview("c1"); !p.InEditor || p.Before != typed || p.After != strings.Replace(typed, "estimate: 1d", "estimate: 2h", 1) {
		t.Errorf("preview of the open note = %+v, want its buffer", p)
	}
	e.Notify("textDocument/didClose", map[string]any{"textDocument": map[string]any{"uri": uri}})

	// The person sets the estimate themselves: c1 is stale, and says why.
	task = strings.Replace(task, "estimate: 1d", "estimate: 3h", 1)
	writeFile(t, dir, shipTask, task)
	if p := preview("c1"); !p.Stale || p.After != "" || p.Reason != "the task's estimate changed since it was proposed" || p.Before != task {
		t.Errorf("preview of the stale c1 = %+v", p)
	}

	// Applying c2 writes what its preview showed; rejecting c3 writes nothing.
	p2 := preview("c2")
	var got protocol.ChangeSet
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c2", "verdict": "confirmed"}, {"item": "c3", "verdict": "rejected"}}}, &got)
	if itemStatus(got, "c2") != "confirmed" || itemStatus(got, "c3") != "rejected" {
		t.Fatalf("after deciding: %+v", got.Items)
	}
	if after := readFile(t, dir, shipTask); after != p2.After {
		t.Errorf("applied c2:\n%s\npreviewed:\n%s", after, p2.After)
	}

	for _, tc := range []struct {
		name   string
		params map[string]any
		code   int
	}{
		{"a decided item", map[string]any{"id": cs.ID, "item": "c3"}, server.CodeRefused},
		{"an unknown item", map[string]any{"id": cs.ID, "item": "c9"}, server.CodeNotFound},
		{"an unknown set", map[string]any{"id": "nope", "item": "c1"}, server.CodeNotFound},
		{"no item", map[string]any{"id": cs.ID}, -32602},
		{"a task whose frontmatter does not parse", map[string]any{"id": cs.ID, "item": "c1"}, server.CodeInvalidNote},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.code == server.CodeInvalidNote {
				writeFile(t, dir, shipTask, "---\nestimate: [1d\n---\n# Ship invoice export\n")
			}
			var p protocol.ChangePreview
			if err := e.Call("changes/preview", tc.params, &p); err == nil || err.Code != tc.code {
				t.Errorf("changes/preview %v = %+v, %v; want code %d", tc.params, p, err, tc.code)
			}
		})
	}
}
