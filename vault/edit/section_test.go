package edit

import (
	"bytes"
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
