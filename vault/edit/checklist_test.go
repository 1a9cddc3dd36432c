package edit

import (
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

func TestAppendChecklistItem(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{
			name: "under the section that holds the checkboxes",
			src:  "---\nstatus: open\n---\n# Move flat\n\n## Steps\n- [x] Give notice\n- [ ] Book the van\n\n## Notes\nThe van company opens at 8.\n",
			want: "---\nstatus: open\n---\n# Move flat\n\n## Steps\n- [x] Give notice\n- [ ] Book the van\n- [ ] Pack the kitchen\n\n## Notes\nThe van company opens at 8.\n",
		},
		{
			name: "checkboxes in the body with no heading",
			src:  "# Move flat\n\n- [ ] Book the van\n- [ ] Give notice\n\nThe van company opens at 8.\n\n## Log\nCalled twice.\n",
			want: "# Move flat\n\n- [ ] Book the van\n- [ ] Give notice\n- [ ] Pack the kitchen\n\nThe van company opens at 8.\n\n## Log\nCalled twice.\n",
		},
		{
			name: "after the nested items and continuations of the last item",
			src:  "## Steps\n- [ ] Book the van\n  - [x] Get quotes\n  - [ ] Pick one\n- [ ] Give notice\n  by letter, signed\n    - [ ] Find the contract\n\n## Notes\n",
			want: "## Steps\n- [ ] Book the van\n  - [x] Get quotes\n  - [ ] Pick one\n- [ ] Give notice\n  by letter, signed\n    - [ ] Find the contract\n- [ ] Pack the kitchen\n\n## Notes\n",
		},
		{
			name: "an indented list keeps its indentation and bullet",
			src:  "Steps:\n\n  * [ ] Book the van\n\t* [ ] nested by a tab\n  * [ ] Give notice\n",
			want: "Steps:\n\n  * [ ] Book the van\n\t* [ ] nested by a tab\n  * [ ] Give notice\n  * [ ] Pack the kitchen\n",
		},
		{
			name: "a numbered checklist gets the next number",
			src:  "## Steps\n1. [x] Give notice\n2. [ ] Book the van\n",
			want: "## Steps\n1. [x] Give notice\n2. [ ] Book the van\n3. [ ] Pack the kitchen\n",
		},
		{
			name: "a loose list with blank lines between items",
			src:  "## Steps\n\n- [ ] Book the van\n\n- [ ] Give notice\n\nDone when the keys are back.\n",
			want: "## Steps\n\n- [ ] Book the van\n\n- [ ] Give notice\n- [ ] Pack the kitchen\n\nDone when the keys are back.\n",
		},
		{
			name: "in a callout",
			src:  "> [!todo] Steps\n> - [ ] Book the van\n> - [ ] Give notice\n\nAfter the callout.\n",
			want: "> [!todo] Steps\n> - [ ] Book the van\n> - [ ] Give notice\n> - [ ] Pack the kitchen\n\nAfter the callout.\n",
		},
		{
			name: "the list with open items, not a list of done ones below it",
			src:  "## Steps\n- [x] Give notice\n- [ ] Book the van\n\n## Done last time\n- [x] Paint the hall\n- [x] Sell the sofa\n",
			want: "## Steps\n- [x] Give notice\n- [ ] Book the van\n- [ ] Pack the kitchen\n\n## Done last time\n- [x] Paint the hall\n- [x] Sell the sofa\n",
		},
		{
			name: "a checkbox nested in a bullet is not the checklist's level",
			src:  "## Steps\n- [ ] Book the van\n\n## Ideas\n- maybe\n  - [ ] hire movers\n",
			want: "## Steps\n- [ ] Book the van\n- [ ] Pack the kitchen\n\n## Ideas\n- maybe\n  - [ ] hire movers\n",
		},
		{
			name: "the last line without a line ending",
			src:  "## Steps\r\n- [ ] Book the van",
			want: "## Steps\r\n- [ ] Book the van\r\n- [ ] Pack the kitchen\r\n",
		},
		{
			name: "a checkbox in code is no checklist",
			src:  "# Move flat\n\n```\n- [ ] not an item\n```\n",
			want: "# Move flat\n\n```\n- [ ] not an item\n```\n\n## Checklist\n- [ ] Pack the kitchen\n",
		},
		{
			name: "no checkbox: a new Checklist section",
			src:  "---\nstatus: open\n---\n# Move flat\n\nSome words.\n",
			want: "---\nstatus: open\n---\n# Move flat\n\nSome words.\n\n## Checklist\n- [ ] Pack the kitchen\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendChecklistItem([]byte(tc.src), "Pack the kitchen")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
	if _, err := AppendChecklistItem([]byte("- [ ] a\n"), "two\nlines"); err == nil {
		t.Error("an item of two lines was added")
	}
}

// FuzzAppendChecklistItem: whatever the note, adding an item never panics,
// leaves the note around an existing checklist as it was, and leaves the note with one
// more open item of that text.
func FuzzAppendChecklistItem(f *testing.F) {
	f.Add("## Steps\n- [ ] a\n  - [x] b\n\n## Notes\n")
	f.Add("> - [ ] a\n>\n> - [ ] b\ntext\n")
	f.Add("1) [ ] a\r\n\r\n\t2) [ ] b\r")
	f.Add("---\ntitle: x\n---\n```\n- [ ] a\n")
	f.Fuzz(func(t *testing.T, src string) {
		out, err := AppendChecklistItem([]byte(src), "Pack the kitchen")
		if err != nil {
			return
		}
		before := note.Parse("note.md", []byte(src), note.Options{})
		after := note.Parse("note.md", out, note.Options{})
		if before.FrontmatterError != "" || before.Plain != "" {
			return
		}
		count := func(n *note.Note) int {
			c := 0
			for _, it := range n.Checklist {
				if it.Text == "Pack the kitchen" && it.State == ' ' {
					c++
				}
			}
			return c
		}
		if count(after) != count(before)+1 {
			t.Fatalf("no new item in %q:\n%q", src, out)
		}
		// Into an existing checklist the item is only inserted: nothing
		// of the note changes around it.
		if len(before.Checklist) > 0 {
			pre, suf := CommonEnds(out, []byte(src))
			if added := string(out[pre : len(out)-suf]); pre+suf != len(src) || !strings.Contains(added, "[ ] Pack the kitchen") {
				t.Fatalf("%q became %q: not an insertion of the item", src, out)
			}
		}
	})
}
