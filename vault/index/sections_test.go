package index

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestText gives back a note's stored properties and sections, with
// their heading levels: the preamble, each heading's section (code
// included whole) and daily entries, so a reader can quote a section
// without the file.
func TestText(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := context.Background()
	notes := map[string]string{
		"Notes/Setup.md":      "---\ntitle: Setup\n---\nIntro line.\n\n# Setup\n\n```sh\n# a comment\nmake\n```\n\n## Check\nRun it.\n\n## Sub\nunder\n",
		"Notes/Setext.md":     "Plan\n====\n\nThe outline.\n\nTwo line\nheading\n---\nbelow it\n",
		"Movies/Heat.md":      "---\nrating: 9\nyear: 1995\ndirector: \"[[Michael Mann]]\"\ncast: [Al Pacino, Robert De Niro]\n---\n",
		"Daily/2026-11-22.md": "Woke early.\n\n## 07:30\nRan 5k.\n\n### Splits\nfast\n\n## 12:00 [correction]\nIt was 4k.\n",
	}
	opts := note.Options{Daily: note.DefaultDailyFormat()}
	var us []Update
	for p, src := range notes {
		us = append(us, Update{Path: p, Note: note.Parse(p, []byte(src), opts), Content: []byte(src)})
	}
	apply(t, ix, us...)
	for _, tc := range []struct {
		path  string
		props string
		want  []SectionMeta
	}{
		{"Notes/Setup.md", "title: Setup", []SectionMeta{
			{Level: 0, Line: 4, Text: "Intro line."},
			{Level: 1, Heading: "Setup", Line: 6, Text: "```sh\n# a comment\nmake\n```"},
			{Level: 2, Heading: "Check", Line: 13, Text: "Run it."},
			{Level: 2, Heading: "Sub", Line: 16, Text: "under"},
		}},
		// A setext heading's underline is the heading's, not its body's.
		{"Notes/Setext.md", "", []SectionMeta{
			{Level: 1, Heading: "Plan", Line: 1, Text: "The outline."},
			{Level: 2, Heading: "Two line heading", Line: 6, Text: "below it"},
		}},
		// A note of properties alone has them to quote.
		{"Movies/Heat.md", "rating: 9\nyear: 1995\ndirector: [[Michael Mann]]\ncast: Al Pacino, Robert De Niro", []SectionMeta{{Level: 0, Line: 7}}},
		{"Daily/2026-11-22.md", "", []SectionMeta{
			{Level: 0, Line: 1, Text: "Woke early."},
			{Level: 2, Heading: "07:30", Line: 3, Text: "Ran 5k.\n\n### Splits\nfast"},
			{Level: 2, Heading: "12:00 [correction]", Line: 9, Text: "It was 4k."},
		}},
	} {
		got, err := ix.Text(ctx, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Properties != tc.props {
			t.Errorf("%s: properties %q, want %q", tc.path, got.Properties, tc.props)
		}
		if !reflect.DeepEqual(got.Sections, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.path, got.Sections, tc.want)
		}
	}
	if _, err := ix.Text(ctx, "Nowhere.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown note: %v, want ErrNotFound", err)
	}
}
