package changes

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

func TestDeferredToolsProposeOnlyChanges(t *testing.T) {
	task := note.Parse("Tasks/Ship.md", []byte(sampleTask), note.Options{})
	byName := map[string]DeferredTool{}
	for _, d := range DeferredTools() {
		byName[d.Name] = d
	}
	tests := []struct {
		tool, args    string
		items         []string // summaries
		unchanged     int
		wantErrSubstr string
	}{
		{tool: "update_task_priority", args: `{"priority":"P1"}`, unchanged: 1},
		{tool: "update_task_priority", args: `{"priority":"P0"}`, items: []string{"Set priority to P0"}},
		{tool: "set_task_status", args: `{"status":"done","human_summary":"It shipped"}`, items: []string{"Set status to done (because: It shipped)"}},
		{tool: "set_task_status", args: `{"status":"in-progress"}`, unchanged: 1},
		{tool: "add_multiple_checklist_items", args: `{"items":[{"title":"QA on staging"},{"title":"Write docs"},{"title":"Flag on"}]}`,
			items: []string{`Add checklist item "Write docs"`, `Add checklist item "Flag on"`}, unchanged: 1},
		{tool: "update_checklist_items", args: `{"items":[{"text":"QA on staging","done":true},{"text":"Spec the columns","done":true}]}`,
			items: []string{`Check off "QA on staging"`}, unchanged: 1},
		{tool: "update_checklist_items", args: `{"items":[{"text":"No such item","done":true}]}`, wantErrSubstr: "no checklist item"},
		{tool: "set_task_title", args: `{"title":"Ship"}`, unchanged: 1},
		{tool: "set_task_title", args: `{"title":"Ship the CSV export"}`, items: []string{`Rename the task to "Ship the CSV export"`}},
		{tool: "assign_task_labels", args: `{"labels":["billing"]}`, items: []string{"Add labels billing"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			items, unchanged, err := byName[tt.tool].Items(task, Shown{}, json.RawMessage(tt.args))
			if tt.wantErrSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstr) {
					t.Errorf("err = %v, want %q", err, tt.wantErrSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Summary)
			}
			if strings.Join(got, "|") != strings.Join(tt.items, "|") || len(unchanged) != tt.unchanged {
				t.Errorf("items %q, unchanged %q; want %q and %d unchanged", got, unchanged, tt.items, tt.unchanged)
			}
		})
	}
}

// sampleTask is task's prompt_test sampleTask: a task a wake proposes against.
const sampleTask = "---\ntype: task\nstatus: in-progress\npriority: P1\n---\n# Ship export\n\nLong prose the agent read before.\n\n## Checklist\n- [x] Spec the columns\n- [ ] QA on staging\n"

// link_related_notes proposes one add_link item per note the wake showed
// that the task does not link yet, each named as Obsidian would link it;
// a note the wake did not show refuses the call, naming the ones it did.
func TestLinkRelatedNotes(t *testing.T) {
	const linked = sampleTask + "\nSee [[Notes/Soup]].\n"
	task := note.Parse("Tasks/Ship.md", []byte(linked), note.Options{})
	var link DeferredTool
	for _, d := range DeferredTools() {
		if d.Name == "link_related_notes" {
			link = d
		}
	}
	shown := Shown{Related: []RelatedNote{
		{Path: "Notes/Comet.md", Link: "Comet"},
		{Path: "Work/Plan.md", Link: "Work/Plan"},
		{Path: "Notes/Soup.md", Link: "Soup"},
	}}
	if why := link.Unfit(task, Shown{}); why == "" {
		t.Error("offered on a wake that showed no related notes")
	}
	if why := link.Unfit(task, shown); why != "" {
		t.Errorf("withheld on a wake that showed related notes: %s", why)
	}
	for _, tc := range []struct {
		name, args string
		items      []string // summaries
		unchanged  int
		wantErr    string
	}{
		{name: "one item per note", args: `{"notes":[{"path":"Notes/Comet.md"},{"path":"Work/Plan.md"}],"human_summary":"same launch"}`,
			items: []string{"Link [[Comet]] under Related (because: same launch)", "Link [[Work/Plan]] under Related (because: same launch)"}},
		{name: "a path in another case, twice, is one note", args: `{"notes":[{"path":"notes/comet.md"},{"path":"Notes/Comet.md "}]}`,
			items: []string{"Link [[Comet]] under Related"}},
		{name: "already linked by its path", args: `{"notes":[{"path":"Notes/Soup.md"}]}`, unchanged: 1},
		{name: "a note not shown", args: `{"notes":[{"path":"Notes/Comet.md"},{"path":"Notes/Never written.md"}]}`,
			wantErr: `"Notes/Never written.md" is not among the related notes this wake showed; nothing was proposed: link only these notes, by their path: Notes/Comet.md, Work/Plan.md, Notes/Soup.md`},
		{name: "filler", args: `{"notes":[{"path":"ok"}]}`, wantErr: "not among the related notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items, unchanged, err := link.Items(task, shown, json.RawMessage(tc.args))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(items) > 0 {
					t.Errorf("items %+v, err = %v, want %q", items, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Summary)
				if err := CheckValues("add_link", it.Args); err != nil {
					t.Errorf("item %s: %v", it.Args, err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.items, "|") || len(unchanged) != tc.unchanged {
				t.Errorf("items %q, unchanged %q; want %q and %d unchanged", got, unchanged, tc.items, tc.unchanged)
			}
		})
	}
}

// Two add_link items of one set both land under one Related heading, made
// at the end of the note for the first; one the person linked by hand
// meanwhile is confirmed with nothing written.
func TestApplyLinks(t *testing.T) {
	src := []byte(sampleTask)
	n := note.Parse(shipPath, src, note.Options{})
	item := func(id, path, link string) ChangeItem {
		args, _ := json.Marshal(RelatedNote{Path: path, Link: link})
		return ChangeItem{ID: id, Tool: "add_link", Args: args, Status: ItemPending, Base: ItemBase(n, "add_link", args)}
	}
	comet, plan := item("c1", "Notes/Comet.md", "Comet"), item("c2", "Work/Plan.md", "Work/Plan")
	out, stale, err := applyItem(shipPath, src, comet, note.Options{})
	if err != nil || stale != "" {
		t.Fatalf("c1: %q, %v", stale, err)
	}
	out, stale, err = applyItem(shipPath, out, plan, note.Options{})
	if err != nil || stale != "" {
		t.Fatalf("c2 after c1: %q, %v", stale, err)
	}
	if want := sampleTask + "\n## Related\n- [[Comet]]\n- [[Work/Plan]]\n"; string(out) != want {
		t.Errorf("after both:\n%s\nwant:\n%s", out, want)
	}
	if again, stale, err := applyItem(shipPath, out, comet, note.Options{}); err != nil || stale != "" || string(again) != string(out) {
		t.Errorf("c1 again: stale %q, %v, changed %v", stale, err, string(again) != string(out))
	}
	byHand := sampleTask + "\nAbout [[comet|the comet]].\n"
	if got, stale, err := applyItem(shipPath, []byte(byHand), comet, note.Options{}); err != nil || stale != "" || string(got) != byHand {
		t.Errorf("linked by hand: %q, %q, %v", got, stale, err)
	}
}
