package changes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
)

// noAgents is a vault without task agents: client sets must not need one.
type noAgents struct{ woken *[]string }

func (noAgents) Owner(context.Context, string) (Owner, error) {
	return Owner{}, errors.New("a client's set asked for an agent")
}
func (noAgents) AgentOf(context.Context, string) (string, error) { return "", nil }
func (a noAgents) Wake(_ context.Context, id, _ string)          { *a.woken = append(*a.woken, id) }
func (noAgents) RunCause(context.Context, int64) (string, string, error) {
	return "", "", errors.New("a client's set asked for a wake run")
}

const clientTask = "---\nstatus: open\npriority: P2\n---\n# Renew passport\n\n## Checklist\n- [ ] Photos\n"

func clientRig(t *testing.T) (*Changes, string, *[]string) {
	t.Helper()
	dir := t.TempDir()
	for p, s := range map[string]string{
		"Notes/Ideas.md":          "# Ideas\n\n- one\n- two\n",
		"Tasks/Renew passport.md": clientTask,
		"Tasks/Other.md":          clientTask,
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := vault.Open(t.Context(), vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	woken := &[]string{}
	c := New(vaultOf(v), openStore(t, v), noAgents{woken}, Options{})
	return c, dir, woken
}

func readFile(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, p, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func confirm(t *testing.T, c *Changes, cs ChangeSet) ChangeItem {
	t.Helper()
	got, err := c.Decide(t.Context(), cs.ID, []ItemDecision{{Item: "c1", Verdict: Confirmed}})
	if err != nil {
		t.Fatal(err)
	}
	return got.Items[0]
}

// A client's edit changes nothing until a person confirms it; the set
// file shows its diff and names the client; the decision is the
// client's in the ledger, and wakes no agent.
func TestClientEditWaitsForAPersonThenApplies(t *testing.T) {
	c, dir, woken := clientRig(t)
	ctx := t.Context()
	cs, err := c.ProposeEdit(ctx, "Claude Code", EditArgs{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "- three", Reason: "you said three"})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "Notes/Ideas.md"); got != "# Ideas\n\n- one\n- two\n" {
		t.Fatalf("the note changed before approval:\n%s", got)
	}
	if cs.Agent != "mcp:Claude Code" || cs.Task != "Notes/Ideas.md" || !strings.HasPrefix(cs.Path, "Margin/Changes/MCP Claude Code/") {
		t.Errorf("set = %+v", cs)
	}
	file := readFile(t, dir, cs.Path)
	for _, want := range []string{`agent: "mcp:Claude Code"`, "Claude Code proposed this over MCP", "- [ ] Append 1 line to Notes/Ideas.md (because: you said three) ^c1", "+- three\n", " - two\n", "```diff", "@@ -2,3 +2,4 @@\n \n - one\n - two\n+- three\n```"} {
		if !strings.Contains(file, want) {
			t.Errorf("set file lacks %q:\n%s", want, file)
		}
	}
	if it := confirm(t, c, cs); it.Status != ItemConfirmed {
		t.Fatalf("item = %+v", it)
	}
	if got := readFile(t, dir, "Notes/Ideas.md"); got != "# Ideas\n\n- one\n- two\n- three\n" {
		t.Errorf("after approval:\n%s", got)
	}
	ds, err := c.Store().Decisions(ctx, DecisionFilter{Task: "Notes/Ideas.md"})
	if err != nil || len(ds) != 1 || ds[0].Agent != "mcp:Claude Code" || ds[0].Tool != EditTool || ds[0].Verdict != Confirmed {
		t.Errorf("decisions = %+v, %v", ds, err)
	}
	if len(*woken) != 0 {
		t.Errorf("woke %v for a client's set", *woken)
	}
	if file := readFile(t, dir, cs.Path); !strings.Contains(file, "- [x] Append 1 line") || !strings.Contains(file, "+- three") {
		t.Errorf("decided set file:\n%s", file)
	}
}

// The file checkbox is a way of deciding a client's item too.
func TestClientEditDecidedInItsFile(t *testing.T) {
	c, dir, _ := clientRig(t)
	cs, err := c.ProposeEdit(t.Context(), "Cursor", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- two", Text: "- 2", Reason: "digits"})
	if err != nil {
		t.Fatal(err)
	}
	file := readFile(t, dir, cs.Path)
	if want := "@@ -1,4 +1,4 @@\n # Ideas\n \n - one\n-- two\n+- 2\n```"; !strings.Contains(file, want) {
		t.Errorf("set file lacks the diff %q:\n%s", want, file)
	}
	writeFile(t, dir, cs.Path, strings.Replace(file, "- [ ] Replace", "- [x] Replace", 1))
	if err := c.DecideFile(t.Context(), cs.Path); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "Notes/Ideas.md"); got != "# Ideas\n\n- one\n- 2\n" {
		t.Errorf("after ticking the box:\n%s", got)
	}
}

// A replace whose old_text occurs twice or not at all is refused when
// proposed; one whose old_text the person changed meanwhile is stale when
// confirmed, and nothing is written.
func TestClientReplaceNeedsOldTextOnce(t *testing.T) {
	c, dir, _ := clientRig(t)
	ctx := t.Context()
	for _, old := range []string{"- ", "- seven"} {
		if _, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: old, Text: "y", Reason: "r"}); err == nil {
			t.Errorf("old_text %q: proposed", old)
		}
	}
	cs, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- one", Text: "- 1", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	edited := "# Ideas\n\n- one\n- two\n- one\n"
	writeFile(t, dir, "Notes/Ideas.md", edited)
	if it := confirm(t, c, cs); it.Status != ItemStale || !strings.Contains(it.Detail, "occurs 2 times") {
		t.Errorf("item = %+v", it)
	}
	if got := readFile(t, dir, "Notes/Ideas.md"); got != edited {
		t.Errorf("a stale replace wrote:\n%s", got)
	}
}

// An append points at the end of the note: text the person added there
// since makes it stale; a create, a note that appeared meanwhile.
func TestClientEditStaleWhereItPoints(t *testing.T) {
	c, dir, _ := clientRig(t)
	ctx := t.Context()
	app, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "- three", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	cre, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/New idea.md", Kind: EditCreate, Text: "# New", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Notes/New idea.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a proposed create made the note: %v", err)
	}
	writeFile(t, dir, "Notes/Ideas.md", "# Ideas\n\n- one\n- two\n- mine\n")
	writeFile(t, dir, "Notes/New idea.md", "mine too\n")
	for _, cs := range []ChangeSet{app, cre} {
		if it := confirm(t, c, cs); it.Status != ItemStale {
			t.Errorf("%s: %+v", cs.Task, it)
		}
	}
	if readFile(t, dir, "Notes/Ideas.md") != "# Ideas\n\n- one\n- two\n- mine\n" || readFile(t, dir, "Notes/New idea.md") != "mine too\n" {
		t.Error("a stale edit wrote")
	}
	// A create confirmed while the note is still absent makes it.
	cre2, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/Other idea.md", Kind: EditCreate, Text: "# Other", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if it := confirm(t, c, cre2); it.Status != ItemConfirmed || readFile(t, dir, "Notes/Other idea.md") != "# Other\n" {
		t.Errorf("create: %+v", it)
	}
}

// The diff of an edit in a long note is its one hunk, made in time linear
// in the note and cut to maxDiffLines.
func TestClientEditDiffOfALongNote(t *testing.T) {
	var before strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&before, "line %d\n", i)
	}
	after := strings.Replace(before.String(), "line 100000\n", "line one hundred thousand\n", 1)
	start := time.Now()
	d := unifiedDiff("Notes/Long.md", []byte(before.String()), []byte(after))
	if want := "@@ -99998,7 +99998,7 @@\n line 99997\n line 99998\n line 99999\n-line 100000\n+line one hundred thousand\n line 100001\n"; !strings.Contains(d, want) {
		t.Errorf("diff:\n%s", d)
	}
	t.Logf("diff of a %d-line note in %v", 200000, time.Since(start))
	big := unifiedDiff("Notes/New.md", nil, []byte(before.String()))
	if n := strings.Count(big, "\n"); n != 3+maxDiffLines+1 || !strings.HasSuffix(big, "… 199800 more lines of diff\n") {
		t.Errorf("a create of 200000 lines: %d lines of diff, ending %q", n, big[len(big)-40:])
	}
}

// Paths out of the vault, into hidden folders or margin's own files, and
// edits that cannot apply, are refused when proposed, with nothing stored.
func TestClientEditRefusals(t *testing.T) {
	c, dir, _ := clientRig(t)
	ctx := t.Context()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "Notes", "out")); err != nil {
		t.Fatal(err)
	}
	for _, a := range []EditArgs{
		{Path: "../x.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: filepath.Join(outside, "x.md"), Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Notes/out/x.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: ".margin/x.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Margin/Context.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Notes/x.txt", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Notes/x\n- [x] y ^c1.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Notes/Ideas.md", Kind: EditCreate, Text: "x", Reason: "r"},
		{Path: "Notes/None.md", Kind: EditAppend, Text: "x", Reason: "r"},
		{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "x"},
		{Path: "Notes/Ideas.md", Kind: "delete", Text: "x", Reason: "r"},
		{Path: "Notes/Ideas.md", Kind: EditAppend, Text: strings.Repeat("x", MaxEditText+1), Reason: "r"},
	} {
		if _, err := c.ProposeEdit(ctx, "x", a); err == nil {
			t.Errorf("%s %s: proposed", a.Kind, a.Path)
		}
	}
	writeFile(t, dir, "Notes/Huge.md", strings.Repeat("x", 5<<20+1))
	if _, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "Notes/Huge.md", Kind: EditAppend, Text: "x", Reason: "r"}); err == nil || !strings.Contains(err.Error(), "max_file_size") {
		t.Errorf("an edit of a note over vault.max_file_size: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.md")); !errors.Is(err, os.ErrNotExist) {
		t.Error("wrote outside the vault")
	}
	if _, err := c.ProposeEdit(ctx, "x", EditArgs{Path: "../x.md", Kind: EditCreate, Text: "x", Reason: "r"}); !errors.Is(err, edit.ErrOutsideVault) {
		t.Errorf("../x.md: %v, want ErrOutsideVault", err)
	}
	if sets, _ := c.ChangeSets(ctx, ChangeSetFilter{Status: "all"}); len(sets) != 0 {
		t.Errorf("refusals stored %d sets", len(sets))
	}
}

// A client's task change is checked as an agent's and applied by the
// same splice; a newer value supersedes the client's older one on the
// same task only.
func TestClientTaskChange(t *testing.T) {
	c, dir, _ := clientRig(t)
	ctx := t.Context()
	if _, err := c.ProposeTaskChange(ctx, "x", "Tasks/Renew passport.md", "status", "someday", "r"); err == nil {
		t.Error("a status outside the enum was proposed")
	}
	if _, err := c.ProposeTaskChange(ctx, "x", "Tasks/Renew passport.md", "priority", "P2", "r"); err == nil {
		t.Error("a change to the value the field has was proposed")
	}
	if _, err := c.ProposeTaskChange(ctx, "x", "Notes/Ideas.md", "status", "done", "r"); !errors.Is(err, ErrNotATask) {
		t.Errorf("a task change on a note that is no task: %v", err)
	}
	first, err := c.ProposeTaskChange(ctx, "x", "Tasks/Renew passport.md", "status", "in-progress", "r")
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.ProposeTaskChange(ctx, "x", "Tasks/Other.md", "status", "blocked", "r")
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.ProposeTaskChange(ctx, "x", "Tasks/Renew passport.md", "status", "done", "finished")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{first.ID: ItemSuperseded, other.ID: ItemPending, second.ID: ItemPending} {
		cs, err := c.Store().ChangeSet(ctx, id)
		if err != nil || cs.Items[0].Status != want {
			t.Errorf("set %s on %s: %+v, %v; want %s", id, cs.Task, cs.Items, err, want)
		}
	}
	if !strings.Contains(readFile(t, dir, second.Path), "-status: open\n+status: done") {
		t.Errorf("set file without the diff:\n%s", readFile(t, dir, second.Path))
	}
	if it := confirm(t, c, second); it.Status != ItemConfirmed {
		t.Fatalf("item = %+v", it)
	}
	if got := readFile(t, dir, "Tasks/Renew passport.md"); got != strings.Replace(clientTask, "status: open", "status: done", 1) {
		t.Errorf("task after approval:\n%s", got)
	}
}

// A client's decisions are not the agents': the template metrics that
// evolution reads leave them out.
func TestClientDecisionsAreNotTheAgents(t *testing.T) {
	c, _, _ := clientRig(t)
	cs, err := c.ProposeTaskChange(t.Context(), "x", "Tasks/Renew passport.md", "status", "done", "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decide(t.Context(), cs.ID, []ItemDecision{{Item: "c1", Verdict: Rejected, Reason: "not yet"}}); err != nil {
		t.Fatal(err)
	}
	tallies, err := c.Store().DecisionTallies(t.Context())
	if err != nil || len(tallies) != 0 {
		t.Errorf("tallies: %+v, %v", tallies, err)
	}
	rejections, err := c.Store().ReasonedRejections(t.Context(), 10)
	if err != nil || len(rejections) != 0 {
		t.Errorf("rejections: %+v, %v", rejections, err)
	}
}

// Each kind of a client's edit is undone through margin's history, byte
// for byte, and the undo is a decision in the client's ledger.
func TestClientEditsAreUndone(t *testing.T) {
	c, dir, _ := clientRig(t)
	h := historytest.Record(t, c.store.db, c.v.Files.(*edit.Root), history.Options{Git: "-"})
	ideas := readFile(t, dir, "Notes/Ideas.md")
	for _, a := range []EditArgs{
		{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "- three", Reason: "r"},
		{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- one", Text: "- uno", Reason: "r"},
		{Path: "Notes/New.md", Kind: EditCreate, Text: "# New\n", Reason: "r"},
	} {
		cs, err := c.ProposeEdit(t.Context(), "Claude Code", a)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(filepath.Join(dir, a.Path))
		if it := confirm(t, c, cs); it.Status != ItemConfirmed {
			t.Fatalf("%s: %+v", a.Kind, it)
		}
		got, err := c.Undo(t.Context(), h, cs.ID, nil)
		if err != nil || got.Items[0].Status != ItemUndone {
			t.Fatalf("undo of %s: %+v, %v", a.Kind, got.Items, err)
		}
		after, err := os.ReadFile(filepath.Join(dir, a.Path))
		if a.Kind == EditCreate {
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("undo of a creation left %s: %q", a.Path, after)
			}
			continue
		}
		if string(after) != string(before) {
			t.Errorf("undo of %s: %q, want %q", a.Kind, after, before)
		}
	}
	if got := readFile(t, dir, "Notes/Ideas.md"); got != ideas {
		t.Errorf("Ideas after every undo = %q, want %q", got, ideas)
	}
	ds, _ := c.Store().Decisions(t.Context(), DecisionFilter{Task: "Notes/Ideas.md"})
	if len(ds) != 4 || ds[0].Verdict != Undone || ds[0].Agent != "mcp:Claude Code" {
		t.Errorf("decisions = %+v", ds)
	}
}

// A client's change set file is recorded in margin's history as the
// client's write of that set.
func TestClientSetFileIsRecordedAsTheClients(t *testing.T) {
	c, _, _ := clientRig(t)
	h := historytest.Record(t, c.store.db, c.v.Files.(*edit.Root), history.Options{Git: "-"})
	cs, err := c.ProposeEdit(t.Context(), "Claude Code", EditArgs{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "- three", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	es, err := h.List(t.Context(), history.Filter{})
	if err != nil || len(es) != 1 || es[0].Path != cs.Path || es[0].Actor != "mcp:Claude Code" || es[0].ChangeSet != cs.ID || es[0].Task != "Notes/Ideas.md" {
		t.Fatalf("history = %+v, %v; want the set's file, by mcp:Claude Code for %s", es, err, cs.ID)
	}
}

// A note that is a task only by the TaskNotes plugin's folder takes a
// task change and its approval like any task.
func TestClientTaskChangeInTaskNotesFolder(t *testing.T) {
	dir := t.TempDir()
	p := "TaskNotes/Tasks/Call plumber.md"
	for name, s := range map[string]string{".obsidian/community-plugins.json": `["tasknotes"]`, p: clientTask} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := vault.Open(t.Context(), vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	c := New(vaultOf(v), openStore(t, v), noAgents{&[]string{}}, Options{})
	cs, err := c.ProposeTaskChange(t.Context(), "x", p, "status", "done", "r")
	if err != nil {
		t.Fatal(err)
	}
	// The diff an agent's change-set file shows for the same item.
	if d := c.diffs(p, cs.Items); !strings.Contains(d[cs.Items[0].ID], "+status: done") {
		t.Errorf("diffs %q, want the item's", d)
	}
	if it := confirm(t, c, cs); it.Status != ItemConfirmed {
		t.Fatalf("item = %+v", it)
	}
	if got := readFile(t, dir, p); got != strings.Replace(clientTask, "status: open", "status: done", 1) {
		t.Errorf("task after approval:\n%s", got)
	}
}

// vaultOf hands the change sets the parts of v, as the composition root does.
func vaultOf(v *vault.Vault) Vault {
	return Vault{Files: v.Root(), Events: v, Rules: v.Rules(), OutputFolder: v.Options().OutputFolder, MaxFileSize: v.Options().MaxFileSize}
}

// openStore opens the change sets' tables in v's state database.
func openStore(t *testing.T, v *vault.Vault) *Store {
	t.Helper()
	st, err := OpenStore(t.Context(), v.DB())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
