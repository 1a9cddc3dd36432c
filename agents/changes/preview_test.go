package changes

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A preview is what applying the item alone writes: for each kind of
// proposal, the preview's After is the note on disk after the person
// confirms it, and its properties name the frontmatter keys it changed.
func TestPreviewIsWhatApplyingWrites(t *testing.T) {
	for _, tc := range []struct {
		name    string
		propose func(c *Changes) (ChangeSet, error)
		exists  bool
		props   []PropertyChange
	}{
		{"a task field", func(c *Changes) (ChangeSet, error) {
			return c.ProposeTaskChange(t.Context(), "Cursor", "Tasks/Renew passport.md", "priority", "P1", "it is due")
		}, true, []PropertyChange{{Key: "priority", Before: "P2", After: "P1", Change: "changed"}}},
		{"labels, a new key", func(c *Changes) (ChangeSet, error) {
			return c.ProposeTaskChange(t.Context(), "Cursor", "Tasks/Renew passport.md", "labels", "travel, admin", "to find it")
		}, true, []PropertyChange{{Key: "tags", After: "travel, admin", Change: "added"}}},
		{"an append", func(c *Changes) (ChangeSet, error) {
			return c.ProposeEdit(t.Context(), "Cursor", EditArgs{Path: "Notes/Ideas.md", Kind: EditAppend, Text: "- three", Reason: "one more"})
		}, true, nil},
		{"a replace", func(c *Changes) (ChangeSet, error) {
			return c.ProposeEdit(t.Context(), "Cursor", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- two", Text: "- 2", Reason: "digits"})
		}, true, nil},
		{"a new note", func(c *Changes) (ChangeSet, error) {
			return c.ProposeEdit(t.Context(), "Cursor", EditArgs{Path: "Notes/New.md", Kind: EditCreate, Text: "---\nkind: idea\n---\n# New", Reason: "a start"})
		}, false, []PropertyChange{{Key: "kind", After: "idea", Change: "added"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, dir, _ := clientRig(t)
			cs, err := tc.propose(c)
			if err != nil {
				t.Fatal(err)
			}
			var before string
			if tc.exists {
				before = readFile(t, dir, cs.Task)
			}
			p, err := c.Preview(t.Context(), cs.ID, "c1")
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != cs.Task || p.Exists != tc.exists || string(p.Before) != before || p.Stale || p.Reason != "" || p.Summary != cs.Items[0].Summary {
				t.Errorf("preview = %+v, want %s as it is (exists %v), not stale", p, cs.Task, tc.exists)
			}
			if !reflect.DeepEqual(p.Properties, tc.props) {
				t.Errorf("properties = %+v, want %+v", p.Properties, tc.props)
			}
			if tc.exists && readFile(t, dir, cs.Task) != before {
				t.Error("the preview wrote the note")
			}
			got, err := c.Decide(t.Context(), cs.ID, []ItemDecision{{Item: "c1", Verdict: Confirmed}})
			if err != nil || got.Items[0].Status != ItemConfirmed {
				t.Fatalf("confirming: %+v, %v", got.Items, err)
			}
			if after := readFile(t, dir, cs.Task); after != string(p.After) {
				t.Errorf("applied:\n%s\npreviewed:\n%s", after, p.After)
			}
		})
	}
}

// An item whose target moved on previews as stale, with the reason
// applying would give, and no After; a decided or unknown item is refused.
func TestPreviewStaleAndDecided(t *testing.T) {
	c, dir, _ := clientRig(t)
	ctx := t.Context()
	replace, err := c.ProposeEdit(ctx, "Cursor", EditArgs{Path: "Notes/Ideas.md", Kind: EditReplace, OldText: "- two", Text: "- 2", Reason: "digits"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "Notes/Ideas.md", "# Ideas\n\n- one\n- zwei\n")
	p, err := c.Preview(ctx, replace.ID, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Stale || p.Reason != "old_text occurs 0 times in Notes/Ideas.md now, not once" || p.After != nil || string(p.Before) != "# Ideas\n\n- one\n- zwei\n" {
		t.Errorf("stale preview = %+v", p)
	}
	// Applying says the same and writes nothing.
	got, err := c.Decide(ctx, replace.ID, []ItemDecision{{Item: "c1", Verdict: Confirmed}})
	if err != nil || got.Items[0].Status != ItemStale || got.Items[0].Detail != p.Reason {
		t.Errorf("applying the stale item: %+v, %v", got.Items, err)
	}

	field, err := c.ProposeTaskChange(ctx, "Cursor", "Tasks/Renew passport.md", "status", "done", "finished")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "Tasks/Renew passport.md", strings.Replace(clientTask, "status: open", "status: blocked", 1))
	if p, err := c.Preview(ctx, field.ID, "c1"); err != nil || !p.Stale || p.Reason != "the task's status changed since it was proposed" {
		t.Errorf("a field changed by hand: %+v, %v", p, err)
	}

	writeFile(t, dir, "Tasks/Renew passport.md", "---\nstatus: [open\n---\n# Renew passport\n")
	if _, err := c.Preview(ctx, field.ID, "c1"); !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), "frontmatter does not parse") {
		t.Errorf("a task whose frontmatter does not parse: %v, want ErrUnreadable saying why", err)
	}

	if _, err := c.Preview(ctx, replace.ID, "c1"); !errors.Is(err, ErrDecided) {
		t.Errorf("a decided item: %v, want ErrDecided", err)
	}
	if _, err := c.Preview(ctx, field.ID, "c9"); !errors.Is(err, ErrChangeSetNotFound) {
		t.Errorf("an unknown item: %v, want ErrChangeSetNotFound", err)
	}
	if _, err := c.Preview(ctx, "nope", "c1"); !errors.Is(err, ErrChangeSetNotFound) {
		t.Errorf("an unknown set: %v, want ErrChangeSetNotFound", err)
	}
}

func TestPropertyChanges(t *testing.T) {
	for _, tc := range []struct {
		name, before, after string
		want                []PropertyChange
	}{
		{"none", "# A\n", "# A\nmore\n", nil},
		{"a scalar", "---\nstatus: todo\n---\n", "---\nstatus: done\n---\n", []PropertyChange{{Key: "status", Before: "todo", After: "done", Change: "changed"}}},
		{"a list grows", "---\ntags: [a, b]\n---\n", "---\ntags:\n  - a\n  - b\n  - c\n---\n", []PropertyChange{{Key: "tags", Before: "a, b", After: "a, b, c", Change: "changed"}}},
		{"same list, other YAML", "---\ntags: [a, b]\n---\n", "---\ntags:\n  - a\n  - b\n---\n", nil},
		{"a date", "---\ndue: 2026-11-27\n---\n", "---\ndue: 2026-12-01\n---\n", []PropertyChange{{Key: "due", Before: "2026-11-27", After: "2026-12-01", Change: "changed"}}},
		{"added and removed", "---\nold: 1\n---\n", "---\nnew: true\n---\n", []PropertyChange{{Key: "new", After: "true", Change: "added"}, {Key: "old", Before: "1", Change: "removed"}}},
		{"a key in another case", "---\nStatus: todo\n---\n", "---\nstatus: todo\n---\n", nil},
		{"a header appears", "# A\n", "---\nkind: idea\n---\n# A\n", []PropertyChange{{Key: "kind", After: "idea", Change: "added"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PropertyChanges([]byte(tc.before), []byte(tc.after)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PropertyChanges = %+v, want %+v", got, tc.want)
			}
		})
	}
}
