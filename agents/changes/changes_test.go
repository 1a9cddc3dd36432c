package changes

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/internal/agenttest"
	"github.com/margin-md/margin/vault/note"
)

const shipPath = "Tasks/Ship invoice export.md"

func shipTask(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../testdata/vault/" + shipPath)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleSet is a change set proposed against the sample task.
func sampleSet(t testing.TB) ChangeSet {
	t.Helper()
	n := note.Parse(shipPath, shipTask(t), note.Options{})
	created := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	item := func(id, tool, args, summary string) ChangeItem {
		return ChangeItem{ID: id, Tool: tool, Args: json.RawMessage(args), Summary: summary, Status: ItemPending,
			Base: ItemBase(n, tool, json.RawMessage(args))}
	}
	return ChangeSet{ID: "3f9a1c2e", Agent: "a0123456789ab", Task: shipPath, Run: 7, Status: SetPending,
		Path: ChangeSetPath("Margin", "Ship invoice export", created, "3f9a1c2e"), Created: created, Expires: created.Add(7 * 24 * time.Hour),
		Items: []ChangeItem{
			item("c1", "update_task_estimate", `{"estimate":"2h"}`, "Set estimate to 2h"),
			item("c2", "add_checklist_item", `{"title":"Announce the export to Acme"}`, `Add checklist item "Announce the export to Acme"`),
			item("c3", "update_checklist_item", `{"text":"Support docs page","done":true}`, `Check off "Support docs page"`),
		}}
}

func TestChangeSetFileGolden(t *testing.T) {
	cs := sampleSet(t)
	if cs.Path != "Margin/Changes/Ship invoice export/2026-11-22-0930-3f9a1c2e.md" {
		t.Errorf("path = %s", cs.Path)
	}
	before, err := renderChangeSet(cs, itemDiffs(shipPath, shipTask(t), cs.Items, note.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Golden(t, "changeset_before.golden", string(before))

	// The person adds a note of their own, then decides.
	edited := strings.Replace(string(before), "- [ ] Set estimate", "My note: ask Dana first.\n- [ ] Set estimate", 1)
	decided := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cs.Items[0].Status, cs.Items[0].Decided = ItemConfirmed, decided
	cs.Items[1].Status, cs.Items[1].Decided, cs.Items[1].Reason = ItemRejected, decided, "not our job"
	cs.Status = setStatus(cs.Items)
	after, err := updateChangeSetFile([]byte(edited), cs)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Golden(t, "changeset_after.golden", string(after))
	if !strings.Contains(string(after), "My note: ask Dana first.\n") {
		t.Error("the person's own line was lost")
	}
}

func TestFileDecisions(t *testing.T) {
	cs := sampleSet(t)
	src, err := renderChangeSet(cs, itemDiffs(shipPath, shipTask(t), cs.Items, note.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		old, new      string
		more          []string // further old, new pairs
		want          []ItemDecision
		ignoredPrefix string
	}{
		{name: "tick confirms", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h ^c1",
			want: []ItemDecision{{Item: "c1", Verdict: Confirmed}}},
		{name: "reject with reason", old: "- [ ] Set estimate to 2h ^c1", new: "- [-] Set estimate to 2h — it takes a day ^c1",
			want: []ItemDecision{{Item: "c1", Verdict: Rejected, Reason: "it takes a day"}}},
		{name: "reject without reason", old: "- [ ] Set estimate to 2h ^c1", new: "- [-] Set estimate to 2h ^c1",
			want: []ItemDecision{{Item: "c1", Verdict: Rejected}}},
		{name: "half-typed line decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estim ^c1",
			ignoredPrefix: "c1: the line no longer reads"},
		{name: "reworded line decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 3h ^c1",
			ignoredPrefix: "c1: the line no longer reads"},
		{name: "reason on a tick decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h — ok ^c1",
			ignoredPrefix: "c1: a reason only goes with"},
		{name: "line without block id decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h"},
		{name: "deleted line decides nothing", old: "- [ ] Set estimate to 2h ^c1\n", new: ""},
		{name: "duplicated line agreeing counts once", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h ^c1\n- [x] Set estimate to 2h ^c1",
			want: []ItemDecision{{Item: "c1", Verdict: Confirmed}}},
		{name: "duplicated line disagreeing decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h ^c1\n- [-] Set estimate to 2h ^c1",
			ignoredPrefix: "c1: two lines say different things"},
		{name: "line moved under another id decides nothing", old: "- [ ] Set estimate to 2h ^c1", new: "- [x] Set estimate to 2h ^c2",
			ignoredPrefix: "c2: the line no longer reads"},
		{name: "nonsense decides nothing", old: string(src), new: "{{{ ]] not a change set\n- [x ^c1\n"},
		{name: "damaged frontmatter still reads the lines", old: "margin: changeset\n", new: "margin: [changeset\n",
			more: []string{"- [ ] Set estimate to 2h ^c1", "- [x] Set estimate to 2h ^c1"},
			want: []ItemDecision{{Item: "c1", Verdict: Confirmed}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := strings.Replace(string(src), tc.old, tc.new, 1)
			for i := 0; i+1 < len(tc.more); i += 2 {
				edited = strings.Replace(edited, tc.more[i], tc.more[i+1], 1)
			}
			got, ignored := fileDecisions([]byte(edited), cs)
			if !slices.Equal(got, tc.want) {
				t.Errorf("decisions = %+v, want %+v", got, tc.want)
			}
			if tc.ignoredPrefix != "" && (len(ignored) != 1 || !strings.HasPrefix(ignored[0], tc.ignoredPrefix)) {
				t.Errorf("ignored = %q, want one starting %q", ignored, tc.ignoredPrefix)
			}
		})
	}
}

func TestApplyItem(t *testing.T) {
	src := shipTask(t)
	cs := sampleSet(t)
	for _, tc := range []struct {
		name      string
		item      ChangeItem
		edit      func(string) string // the person's edit after the proposal
		wantDiff  []string            // lines of the result not in the original
		wantStale string
	}{
		{name: "estimate is a frontmatter splice", item: cs.Items[0], wantDiff: []string{"estimate: 2h"}},
		{name: "new checklist item joins the list", item: cs.Items[1], wantDiff: []string{"- [ ] Announce the export to Acme"}},
		{name: "new checklist item joins the task's checklist under its own heading", item: cs.Items[1],
			edit:     func(s string) string { return strings.Replace(s, "## Checklist\n", "## Steps\n", 1) },
			wantDiff: []string{"## Steps", "- [ ] Announce the export to Acme"}},
		{name: "checkbox flip", item: cs.Items[2], wantDiff: []string{"- [x] Support docs page [due:: 2026-11-30]"}},
		{name: "estimate edited since: stale", item: cs.Items[0],
			edit:      func(s string) string { return strings.Replace(s, "estimate: 1d", "estimate: 3h", 1) },
			wantStale: "the task's estimate changed since it was proposed"},
		{name: "target line gone: stale", item: cs.Items[2],
			edit: func(s string) string {
				return strings.Replace(s, "- [ ] Support docs page [due:: 2026-11-30]\n", "", 1)
			},
			wantStale: "the checklist line it targets is gone from the task"},
		{name: "already so by hand: confirmed without a change", item: cs.Items[0],
			edit: func(s string) string { return strings.Replace(s, "estimate: 1d", "estimate: 120m", 1) }},
		{name: "checklist item already checked: no change", item: cs.Items[2],
			edit: func(s string) string {
				return strings.Replace(s, "- [ ] Support docs page", "- [x] Support docs page", 1)
			}},
		{name: "another field edited: still applies", item: cs.Items[0],
			edit:     func(s string) string { return strings.Replace(s, "priority: P1", "priority: P0", 1) },
			wantDiff: []string{"priority: P0", "estimate: 2h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := string(src)
			if tc.edit != nil {
				cur = tc.edit(cur)
			}
			out, stale, err := applyItem(shipPath, []byte(cur), tc.item, note.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if stale != tc.wantStale {
				t.Fatalf("stale = %q, want %q", stale, tc.wantStale)
			}
			if stale != "" {
				return
			}
			if tc.wantDiff == nil {
				if string(out) != cur {
					t.Errorf("an item already in effect changed the note:\n%s", out)
				}
				return
			}
			orig := strings.Split(string(src), "\n")
			var added []string
			for _, l := range strings.Split(string(out), "\n") {
				if !slices.Contains(orig, l) {
					added = append(added, l)
				}
			}
			if !slices.Equal(added, tc.wantDiff) {
				t.Errorf("new lines = %q, want %q", added, tc.wantDiff)
			}
			if got, want := strings.Count(string(out), "\n"), strings.Count(cur, "\n")+len(tc.wantDiff)-countChanged(tc.wantDiff); got != want {
				t.Errorf("the note has %d lines, want %d", got, want)
			}
		})
	}
}

// countChanged counts the lines of diff that replace a line rather than add one.
func countChanged(diff []string) int {
	n := 0
	for _, l := range diff {
		if !strings.HasPrefix(l, "- [ ] Announce") {
			n++
		}
	}
	return n
}

func TestSetStatus(t *testing.T) {
	for _, tc := range []struct {
		name     string
		statuses []string
		want     string
	}{
		{"all pending", []string{ItemPending, ItemPending}, SetPending},
		{"one decided", []string{ItemConfirmed, ItemPending}, SetPartial},
		{"deferred is still open", []string{ItemRejected, ItemDeferred}, SetPartial},
		{"all decided", []string{ItemConfirmed, ItemStale}, SetResolved},
		{"all superseded", []string{ItemSuperseded}, SetSuperseded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var items []ChangeItem
			for _, s := range tc.statuses {
				items = append(items, ChangeItem{Status: s})
			}
			if got := setStatus(items); got != tc.want {
				t.Errorf("setStatus = %s, want %s", got, tc.want)
			}
		})
	}
}

// FuzzChangeSetFile feeds arbitrary edits of a change set file to the
// plain-text approval: it must never panic, decide only items of the set
// with a known verdict, and never decide an item twice.
func FuzzChangeSetFile(f *testing.F) {
	cs := sampleSet(f)
	src, err := renderChangeSet(cs, itemDiffs(shipPath, shipTask(f), cs.Items, note.Options{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(src))
	f.Add(strings.Replace(string(src), "- [ ] Set estimate to 2h ^c1", "- [-] Set estimate to 2h — no ^c1\n- [x] Set estimate to 2h ^c1", 1))
	f.Add("---\nmargin: [\n---\n- [x] ^c1\n")
	f.Fuzz(func(t *testing.T, text string) {
		ds, _ := fileDecisions([]byte(text), cs)
		seen := map[string]bool{}
		for _, d := range ds {
			if seen[d.Item] || !hasItem(cs, d.Item) || d.Verdict != Confirmed && d.Verdict != Rejected {
				t.Fatalf("bad decision %+v from %q", d, text)
			}
			seen[d.Item] = true
		}
		// Rewriting either succeeds or leaves the file alone.
		updateChangeSetFile([]byte(text), cs)
	})
}

// TestFieldToolsMatchTheirSchemas keeps the tool table honest: a tool
// that carries a field's value in an argument has that argument in its
// schema, and every item name leads back to its tool.
func TestFieldToolsMatchTheirSchemas(t *testing.T) {
	for _, tt := range taskTools {
		if tt.arg != "" {
			if _, ok := tt.schema().Properties[tt.arg]; !ok {
				t.Errorf("%s reads argument %q; its schema has %v", tt.name, tt.arg, slices.Collect(maps.Keys(tt.schema().Properties)))
			}
		}
		if got, ok := itemTool(ExplodedTool(tt.name)); !ok || got.name != tt.name {
			t.Errorf("%s: its items lead back to %v", tt.name, got)
		}
	}
}
