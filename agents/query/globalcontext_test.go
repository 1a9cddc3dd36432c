package query

import (
	"strings"
	"testing"
)

// TestParseContextReadsLikeTheIndex: the global context is read with
// vault/note, so a `## ` line in a code block does not switch category, a
// CRLF header gives its version, and a file too costly to parse is refused
// rather than rendered from nothing.
func TestParseContextReadsLikeTheIndex(t *testing.T) {
	text := "---\r\nmargin: context\r\nversion: 7\r\n---\r\n\r\n# Global Context\r\n\r\n## Preferences\r\n\r\n- units: kg (certain)\r\n```\r\n## Facts\r\n```\r\n- style: terse (likely)\r\n\r\n## Facts\r\n\r\n- gym: Mondays (certain)\r\n"
	gc, err := parseContext(text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range gc.Items {
		got = append(got, it.Category+" "+it.line())
	}
	want := []string{"preference - units: kg (certain)", "preference ```", "preference ## Facts", "preference ```", "preference - style: terse (likely)", "fact - gym: Mondays (certain)"}
	if gc.Version != 7 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("version %d, items\n%s\nwant\n%s", gc.Version, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := parseContext("## Facts\n" + strings.Repeat(">", 40) + " x\n"); err == nil {
		t.Error("a context over the parse budget was read")
	}
}
