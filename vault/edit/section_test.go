package edit

import (
	"bytes"
	"strings"
	"testing"
)

func TestAppendUnderSectionGolden(t *testing.T) {
	tests := []struct {
		name    string // also the golden file: testdata/section/<name>.golden
		input   string // testdata/section/<input>.md
		heading string
		text    string
	}{
		{"tasks-checklist-joins-list", "tasks", "tasks", "- [ ] new item"},
		{"tasks-multiline-items", "tasks", "Tasks", "- [ ] one\n- [ ] two\n"},
		{"tasks-prose-after-subsection", "tasks", "## Notes", "More notes."},
		{"tasks-item-after-prose", "tasks", "### detail", "- [ ] follow up"},
		{"tasks-last-section", "tasks", "Other top", "appended"},
		{"tasks-missing-heading", "tasks", "Follow-ups", "- [ ] ping Ann"},
		{"tasks-missing-level", "tasks", "### Tasks", "- [ ] level three"},
		{"crlf-item", "crlf", "Tasks", "- [ ] b"},
		{"crlf-missing", "crlf", "Ideas", "idea\nsecond line"},
		{"empty-section", "empty-section", "Empty", "- [ ] a"},
		{"noeol-item", "noeol", "Tasks", "- [ ] b"},
		{"setext-item", "setext", "tasks", "- [ ] b"},
		{"setext-rule-is-not-heading", "setext", "Notes", "end"},
		{"fenced-heading-ignored", "fenced", "not a heading", "text"},
		{"fenced-section", "fenced", "Code", "after code"},
		{"daily-yaml-comment-ignored", "daily", "a YAML comment that looks like a heading", "x"},
		{"daily-item-trailing-blanks", "daily", "09:00", "- [ ] call Ann"},
		{"empty-note", "empty", "Tasks", "- [ ] first"},
		{"fence-open-under", "fence-open", "Code", "after code"},
		{"fence-open-missing", "fence-open", "Log", "entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := readInput(t, "section/"+tt.input+".md")
			in := bytes.Clone(src)
			got, err := AppendUnderSection(src, tt.heading, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, in) {
				t.Fatal("input modified")
			}
			golden(t, "section/"+tt.name+".golden", got)
		})
	}
}

func TestAppendSectionGolden(t *testing.T) {
	tests := []struct {
		name          string
		input         string
		heading, body string
	}{
		{"append-daily-entry", "daily", "14:30", "Met Ann.\nDecided to ship."},
		{"append-correction", "daily", "07:30 [correction]", "Woke up at 7."},
		{"append-empty-note", "empty", "08:00", "First entry."},
		{"append-fm-only", "fm-only", "08:00", "First entry."},
		{"append-noeol", "noeol", "Log", "entry"},
		{"append-crlf", "crlf", "10:00", "line one\nline two"},
		{"append-heading-level", "tasks", "# Appendix", ""},
		{"append-after-open-fence", "fence-open", "09:00", "entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendSection(readInput(t, "section/"+tt.input+".md"), tt.heading, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "section/"+tt.name+".golden", got)
		})
	}
}

func TestAppendRefuses(t *testing.T) {
	tests := []struct {
		name, heading, text string
	}{
		{"empty text", "Tasks", "\n\n"},
		{"empty heading", "## ", "x"},
		{"multi-line heading", "a\nb", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := AppendUnderSection([]byte("## Tasks\n"), tt.heading, tt.text); err == nil {
				t.Fatalf("got %q, want an error", got)
			}
		})
	}
}

// TestAppendFindsHeadingsAsTheIndex: sections are found by the index's own
// reading of the note, so a heading in an HTML comment or a long fence is
// no heading, one after a byte-order mark is, and a block left open at the
// end is closed before a new section.
func TestAppendFindsHeadingsAsTheIndex(t *testing.T) {
	tests := []struct {
		name, src, heading, text, want string
	}{
		{"heading in an open comment", "## A\n<!-- draft\n\n## B\n", "B", "x",
			"## A\n<!-- draft\n\n## B\n-->\n\n## B\nx\n"},
		{"heading in a long tilde fence", "# T\n~~~~\n## Inside\n~~~\n~~~~\n\n## Log\n", "Inside", "x",
			"# T\n~~~~\n## Inside\n~~~\n~~~~\n\n## Log\n\n## Inside\nx\n"},
		{"heading after a byte-order mark", "\uFEFF# Log\nfirst\n", "Log", "- x",
			"\uFEFF# Log\nfirst\n\n- x\n"},
		{"heading with markup", "## **Plan** for `v2`\n", "Plan for v2", "x",
			"## **Plan** for `v2`\nx\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendUnderSection([]byte(tt.src), tt.heading, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestAppendUnderSectionRefusesUnparsableNote: a note whose markup is over
// the parse budget has no headings the index knows; appending under one is
// refused rather than done blind. A new section needs none.
func TestAppendUnderSectionRefusesUnparsableNote(t *testing.T) {
	src := "## Log\n" + strings.Repeat(">", 40) + " x\n"
	if got, err := AppendUnderSection([]byte(src), "Log", "x"); err == nil || !strings.Contains(err.Error(), "too costly") {
		t.Errorf("got %q, %v: want a refusal", got, err)
	}
	if got, err := AppendSection([]byte(src), "09:00", "x"); err != nil || string(got) != src+"\n## 09:00\nx\n" {
		t.Errorf("got %q, %v", got, err)
	}
}
