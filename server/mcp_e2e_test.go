package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/workspace"
)

// An AI application's proposal, made by another process on the vault
// (margin mcp opens it as the command line does), shows in margin serve's
// lenses as that application's, and ticking its line in the file applies
// it through serve.
func TestClientProposalBesideServe(t *testing.T) {
	e, dir := start(t)
	const note = "Reference/Acme.md"
	before := readFile(t, dir, note)
	ctx := context.Background()
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st) // serve's first scan is done
	o := workspace.Options{Parts: workspace.Changes, Scan: true}
	o.Vault.Dir = dir
	ws, err := workspace.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := ws.Changes.ProposeEdit(ctx, "Claude Desktop", changes.EditArgs{Path: note, Kind: changes.EditAppend, Text: "- Wants CSV", Reason: "from the call"})
	if err != nil {
		t.Fatal(err)
	}
	status, err := ws.Changes.ProposeTaskChange(ctx, "Cursor", shipTask, "priority", "P0", "Acme is waiting")
	ws.Close()
	if err != nil {
		t.Fatal(err)
	}
	lensTitles := func(rel string) []string {
		var lenses []protocol.CodeLens
		e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + rel}}, &lenses)
		var titles []string
		for _, l := range lenses {
			titles = append(titles, l.Command.Title)
		}
		return titles
	}
	if got := strings.Join(lensTitles(cs.Path), "|"); got != "Apply (from Claude Desktop)|Reject|Diff" {
		t.Errorf("change set file lenses: %s", got)
	}
	if got := strings.Join(lensTitles(note), "|"); got != "1 suggested change (from Claude Desktop)|Apply all" {
		t.Errorf("note lenses: %s", got)
	}
	if readFile(t, dir, note) != before {
		t.Fatal("the note changed before approval")
	}
	file := readFile(t, dir, cs.Path)
	writeFile(t, dir, cs.Path, strings.Replace(file, "- [ ] Append", "- [x] Append", 1))
	var ca struct{ ID, Item, Status string }
	json.Unmarshal(waitNth(e, "the client's item applied", "margin/changeApplied", 1, nil), &ca)
	if ca.ID != cs.ID || ca.Status != changes.ItemConfirmed {
		t.Fatalf("changeApplied = %+v", ca)
	}
	if got := readFile(t, dir, note); got != strings.TrimRight(before, "\n")+"\n- Wants CSV\n" {
		t.Errorf("after ticking:\n%s", got)
	}
	// And by RPC, as an editor's Apply does.
	var decided protocol.ChangeSet
	e.MustCall("changes/decide", map[string]any{"id": status.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, &decided)
	if itemStatus(decided, "c1") != changes.ItemConfirmed || !strings.Contains(readFile(t, dir, shipTask), "priority: P0") {
		t.Errorf("changes/decide: %+v; task:\n%s", decided, readFile(t, dir, shipTask))
	}
}
