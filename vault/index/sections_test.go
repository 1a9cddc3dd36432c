package index

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestSections gives back a note's stored sections with their heading
// levels: the preamble, each heading's section (code included whole) and
// daily entries, so a reader can quote a section without the file.
func TestSections(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := context.Background()
	notes := map[string]string{
		"Notes/Setup.md":      "---\ntitle: Setup\n---\nIntro line.\n\n# Setup\n\n```sh\n# a comment\nmake\n```\n\n## Check\nRun it.\n\n## Sub\nunder\n",
		"Notes/Setext.md":     "Plan\n====\n\nThe outline.\n\nTwo line\nheading\n---\nbelow it\n",
		"Daily/2026-11-22.md": "Woke early.\n\n## 07:30\nRan 5k.\n\n### Splits\nfast\n\n## 12:00 [correction]\nIt was 4k.\n",
	}
	opts := note.Options{Daily: note.DefaultDailyFormat()}
	var us []Update
	for p, src := range notes {
		us = append(us, Update{Path: p, Note: note.Parse(p, []byte(src), opts), Content: []byte(src)})
	}
	apply(t, ix, us...)
	for _, tc := range []struct {
		path string
		want []SectionMeta
	}{
		{"Notes/Setup.md", []SectionMeta{
			{Level: 0, Line: 4, Text: "Intro line."},
			{Level: 1, Heading: "Setup", Line: 6, Text: "```sh\n# a comment\nmake\n```"},
			{Level: 2, Heading: "Check", Line: 13, Text: "Run it."},
			{Level: 2, Heading: "Sub", Line: 16, Text: "under"},
		}},
		// A setext heading's underline is the heading's, not its body's.
		{"Notes/Setext.md", []SectionMeta{
			{Level: 1, Heading: "Plan", Line: 1, Text: "The outline."},
			{Level: 2, Heading: "Two line heading", Line: 6, Text: "below it"},
		}},
		{"Daily/2026-11-22.md", []SectionMeta{
			{Level: 0, Line: 1, Text: "Woke early."},
			{Level: 2, Heading: "07:30", Line: 3, Text: "Ran 5k.\n\n### Splits\nfast"},
			{Level: 2, Heading: "12:00 [correction]", Line: 9, Text: "It was 4k."},
		}},
	} {
		got, err := ix.Sections(ctx, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.path, got, tc.want)
		}
	}
	if _, err := ix.Sections(ctx, "Nowhere.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown note: %v, want ErrNotFound", err)
	}
}
