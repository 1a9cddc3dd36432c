package templates

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestParseReadsAsTheIndex: a template file is read with vault/note, so
// its sections are the headings the index sees: a `## ` line in a ~~~
// fence or a longer ``` fence stays in its directive, a byte-order mark
// before the header is allowed, and a file without a header takes the
// defaults.
func TestParseReadsAsTheIndex(t *testing.T) {
	for _, tc := range []struct {
		name, content   string
		version         int
		general, report string
	}{
		{"tilde fence", "---\nversion: 2\n---\n## General Directive\n~~~\n## Report Directive\n~~~\n## Report Directive\nR\n",
			2, "~~~\n## Report Directive\n~~~", "R"},
		{"long fence holding a short one", "---\nversion: 2\n---\n## General Directive\n````md\n```\n## Notes\n````\n## Report Directive\nR\n",
			2, "````md\n```\n## Notes\n````", "R"},
		{"byte-order mark and CRLF", "\uFEFF---\r\nversion: 4\r\n---\r\n## General Directive\r\nG\r\n\r\nmore\r\n## Report Directive\r\nR\r\n",
			4, "G\n\nmore", "R"},
		{"no header", "## General Directive\nG\n", 1, "G", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("x.md", []byte(tc.content))
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tc.version || got.General != tc.general || got.Report != tc.report {
				t.Errorf("got v%d %q / %q, want v%d %q / %q", got.Version, got.General, got.Report, tc.version, tc.general, tc.report)
			}
		})
	}
	if _, err := Parse("x.md", []byte("---\nversion: 2\n---\n## General Directive\n"+strings.Repeat(">", 40)+" x\n")); !errors.Is(err, ErrInvalidTemplate) {
		t.Errorf("a body over the parse budget: %v, want ErrInvalidTemplate", err)
	}
}

// TestDirectivesReadBackAsTheIndex: a directive is refused when the file
// would read back otherwise, by the same reading, and kept when it would
// not; each kept one reads back as saved.
func TestDirectivesReadBackAsTheIndex(t *testing.T) {
	for _, tc := range []struct {
		general string
		refused bool
	}{
		{"Be terse.\n~~~\ncode", true},                                   // an open ~~~ fence swallows the report directive
		{"Be terse.\n\n# Rules\n\nNo tables.", true},                     // a level-1 heading ends the section
		{"Rules\n---\nNo tables.", true},                                 // a setext heading of level 2
		{"Be terse.\n<!-- note to self\n", true},                         // an open HTML comment swallows the rest
		{"````md\n```\n## not a section\n```\n````\n\nDone.", false},     // ``` inside a longer fence
		{"Be terse.\n\n- one\n- two\n\n---\n\nNo tables.", false},        // a rule after a blank line
		{"Be terse.\n\n<!-- a comment -->\n\n### Tone\n\nPlain.", false}, // a closed comment, a deeper heading
	} {
		err := checkDirectives(tc.general, "One line.")
		if tc.refused != errors.Is(err, ErrGeneralNotKept) {
			t.Errorf("%q: %v, want refused %v", tc.general, err, tc.refused)
			continue
		}
		if tc.refused {
			continue
		}
		tmpl := Template{Name: TaskAgent, Kind: KindTask, Version: 2, Status: StatusActive, AuthoredBy: ByUser,
			Created: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), General: tc.general, Report: "One line."}
		got, err := Parse("x.md", Render(tmpl))
		if err != nil || got.General != tc.general || got.Report != "One line." {
			t.Errorf("%q read back as %q / %q, %v", tc.general, got.General, got.Report, err)
		}
	}
}
