package edit

import (
	"reflect"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// A frontmatter margin writes reads back as the values it was given: a
// name plain only when every reader agrees it is a string, text always
// quoted, a day and a time as YAML timestamps.
func TestRenderFrontmatter(t *testing.T) {
	at := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		value any
		line  string
		back  any // what yaml.v3 reads back
	}{
		{"bare word", "in-progress", "k: in-progress", "in-progress"},
		{"client agent", "mcp:Claude Code", `k: "mcp:Claude Code"`, "mcp:Claude Code"},
		{"boolean word", "yes", `k: "yes"`, "yes"},
		{"null word", "Null", `k: "Null"`, "Null"},
		{"digits first", "2026", `k: "2026"`, "2026"},
		{"day", "2026-11-25", "k: 2026-11-25", time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
		{"quoted text", Quoted("yes"), `k: "yes"`, "yes"},
		{"quoted link", Quoted(`[[Tasks/Ship "it"]]`), `k: "[[Tasks/Ship \"it\"]]"`, `[[Tasks/Ship "it"]]`},
		{"int", 3, "k: 3", 3},
		{"int64", int64(7), "k: 7", 7},
		{"time", at, "k: 2026-11-25T09:30:00Z", at},
		{"empty list", []string{}, "k: []", []any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderFrontmatter(Field{Key: "margin", Value: "test"}, Field{Key: "k", Value: tc.value})
			if want := "---\nmargin: test\n" + tc.line + "\n---\n"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(tc.line), &m); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m["k"], tc.back) {
				t.Errorf("reads back as %#v, want %#v", m["k"], tc.back)
			}
		})
	}
}
