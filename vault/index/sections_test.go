package index

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
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

// TestMetaTokensAreTheQueries: a note's filter tokens are the ones a
// query's filters look for (metaToken, propToken), each once.
func TestMetaTokensAreTheQueries(t *testing.T) {
	src := `---
type: task
status: Doing
priority: high
tags: [work/infra, Sleep]
artist: "[[Paul Chambers]]"
rating: 7
Größe: Straße straße STRASSE
genres: [jazz, bebop, jazz]
---
# Fix the backup #area/home
`
	n := note.Parse("Tasks/Fix the backup.md", []byte(src), note.Options{})
	want := []string{
		metaKind + string(note.KindTask),
		metaToken(metaStatus, "doing"),
		metaToken(metaPriority, taskOf(n).Priority), // as the parser writes it: P1
	}
	for _, tag := range n.Tags {
		k := tagKey(tag)
		if i := strings.IndexByte(k, '/'); i >= 0 {
			want = append(want, metaToken(metaTag, k[:i]))
		}
		want = append(want, metaToken(metaTag, k))
	}
	for _, kv := range [][2]string{
		{"type", "task"}, {"status", "doing"}, {"priority", "high"},
		{"tags", "work"}, {"tags", "infra"}, {"tags", "sleep"},
		{"artist", "paul"}, {"artist", "chambers"}, {"rating", "7"},
		{"größe", "straße"}, {"größe", "STRASSE"},
		{"genres", "jazz"}, {"genres", "bebop"},
	} {
		var word folded
		pieces(kv[1], func(p folded) { word = p })
		want = append(want, propToken(kv[0], word))
	}
	got := strings.Fields(metaTokens(n))
	slices.Sort(got)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Errorf("metaTokens =\n%q\nwant\n%q", got, want)
	}
}
