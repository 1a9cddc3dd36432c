package note

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFrontmatter(t *testing.T) {
	date := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		src        string
		fields     []Field // nil with noHeader: no Frontmatter at all
		noHeader   bool
		err        string
		bodyOffset int
		bodyLine   int
		headings   []string // texts, to show the body was parsed
	}{
		{
			name:     "no frontmatter",
			src:      "# Title\n",
			noHeader: true, bodyLine: 1,
			headings: []string{"Title"},
		},
		{
			name:       "simple header",
			src:        "---\ntitle: A\ndue: 2026-11-25\nn: 3\n---\n# Body\n",
			fields:     []Field{{"title", "A", 2}, {"due", date, 3}, {"n", 3, 4}},
			bodyOffset: 38, bodyLine: 6,
			headings: []string{"Body"},
		},
		{
			name:       "empty header",
			src:        "---\n---\nbody\n",
			fields:     []Field{},
			bodyOffset: 8, bodyLine: 3,
		},
		{
			name:       "broken yaml keeps the body, the keys that read and reports the file line",
			src:        "---\na: 1\nb: 2\nc 2\nd: 3\n---\n# Still parsed\n",
			fields:     []Field{{"a", 1, 2}, {"b", 2, 3}, {"d", 3, 5}},
			err:        "yaml: line 4: could not find expected ':'",
			bodyOffset: 27, bodyLine: 7,
			headings: []string{"Still parsed"},
		},
		{
			name:       "not a mapping",
			src:        "---\n- a\n- b\n---\ntext\n",
			noHeader:   true,
			err:        "frontmatter is not a YAML mapping",
			bodyOffset: 16, bodyLine: 5,
		},
		{
			name:     "unclosed fence is body",
			src:      "---\ntitle: a\n# Heading\n",
			noHeader: true, bodyLine: 1,
			headings: []string{"Heading"},
		},
		{
			name:     "fence must open the file",
			src:      "\n---\ntitle: a\n---\n",
			noHeader: true, bodyLine: 1,
			headings: []string{"title: a"},
		},
		{
			name:       "second block is body",
			src:        "---\na: 1\n---\ntext\n\n---\nb: 2\n---\n",
			fields:     []Field{{"a", 1, 2}},
			bodyOffset: 13, bodyLine: 4,
			headings: []string{"b: 2"},
		},
		{
			name:       "byte-order mark, CRLF and trailing blanks on fences",
			src:        "\uFEFF--- \r\ntitle: A\r\n---  \r\n# H\r\n",
			fields:     []Field{{"title", "A", 2}},
			bodyOffset: 26, bodyLine: 4,
			headings: []string{"H"},
		},
		{
			name:       "header at end of file without newline",
			src:        "---\na: b\n---",
			fields:     []Field{{"a", "b", 2}},
			bodyOffset: 12, bodyLine: 3,
		},
		{
			name:     "byte-order mark without header still finds the heading",
			src:      "\uFEFF# H\n",
			noHeader: true, bodyLine: 1,
			headings: []string{"H"},
		},
		{
			name: "general yaml: nested map, block scalar, comments, anchors",
			src:  "---\nm:\n  k: v\ns: |\n  line\nx: &a 1 # c\ny: *a\n---\n",
			fields: []Field{
				{"m", map[string]any{"k": "v"}, 2},
				{"s", "line\n", 4},
				{"x", 1, 6},
				{"y", 1, 7},
			},
			bodyOffset: 48, bodyLine: 9,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse("a.md", []byte(tt.src), Options{})
			if tt.noHeader != (n.Frontmatter == nil) {
				t.Fatalf("Frontmatter = %#v, want header %v", n.Frontmatter, !tt.noHeader)
			}
			if n.Frontmatter != nil && !(len(tt.fields) == 0 && len(n.Frontmatter.Fields) == 0) &&
				!reflect.DeepEqual(n.Frontmatter.Fields, tt.fields) {
				t.Errorf("Fields = %#v, want %#v", n.Frontmatter.Fields, tt.fields)
			}
			if n.FrontmatterError != tt.err {
				t.Errorf("FrontmatterError = %q, want %q", n.FrontmatterError, tt.err)
			}
			if n.BodyOffset != tt.bodyOffset || n.BodyLine != tt.bodyLine {
				t.Errorf("body at %d line %d, want %d line %d", n.BodyOffset, n.BodyLine, tt.bodyOffset, tt.bodyLine)
			}
			var heads []string
			for _, h := range n.Headings {
				heads = append(heads, h.Text)
			}
			if !reflect.DeepEqual(heads, tt.headings) {
				t.Errorf("headings %q, want %q", heads, tt.headings)
			}
			checkOffsets(t, []byte(tt.src), n)
		})
	}
}

func TestFrontmatterLookups(t *testing.T) {
	fm := Parse("a.md", []byte(`---
Title: Hello
tags: a, b  c
list: [x, 2, true]
when: 2026-11-25
stamp: 2026-11-25T10:30:00Z
n: 42
f: 1.5
yes: true
none: ~
---
`), Options{}).Frontmatter
	tests := []struct {
		key     string
		str     string
		strs    []string
		present bool
	}{
		{key: "title", str: "Hello", strs: []string{"Hello"}, present: true},
		{key: "TITLE", str: "Hello", strs: []string{"Hello"}, present: true},
		{key: "tags", str: "a, b  c", strs: []string{"a", "b", "c"}, present: true},
		{key: "list", str: "", strs: []string{"x", "2", "true"}, present: true},
		{key: "when", str: "2026-11-25", strs: []string{"2026-11-25"}, present: true},
		{key: "stamp", str: "2026-11-25T10:30:00Z", strs: []string{"2026-11-25T10:30:00Z"}, present: true},
		{key: "n", str: "42", strs: []string{"42"}, present: true},
		{key: "f", str: "1.5", strs: []string{"1.5"}, present: true},
		{key: "yes", str: "true", strs: []string{"true"}, present: true},
		{key: "none", str: "", strs: nil, present: true},
		{key: "missing", str: "", strs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if _, ok := fm.Get(tt.key); ok != tt.present {
				t.Errorf("Get(%q) present = %v, want %v", tt.key, ok, tt.present)
			}
			if got := fm.String(tt.key); got != tt.str {
				t.Errorf("String(%q) = %q, want %q", tt.key, got, tt.str)
			}
			if got := fm.Strings(tt.key); !reflect.DeepEqual(got, tt.strs) && !(len(got) == 0 && len(tt.strs) == 0) {
				t.Errorf("Strings(%q) = %q, want %q", tt.key, got, tt.strs)
			}
		})
	}
	t.Run("nil frontmatter", func(t *testing.T) {
		var none *Frontmatter
		if _, ok := none.Get("x"); ok || none.String("x") != "" || none.Strings("x") != nil {
			t.Error("a nil Frontmatter must have no keys")
		}
	})
}

// TestSimpleYAML pins which headers take the fast path; FuzzSimpleYAML checks
// that what it takes decodes as yaml.v3 would.
func TestSimpleYAML(t *testing.T) {
	tests := []struct {
		name string
		text string
		fast bool
	}{
		{"scalars", "title: A b\nn: 12\nok: true\nnone: ~\nempty:\n", true},
		{"dates and durations", "due: 2026-11-25\nestimate: 1h30m\nat: 12:30\n", true},
		{"block list", "tags:\n  - a\n  - b\naliases:\n- c\n", true},
		{"flow list", "tags: [a, 'b c', \"d\"]\nempty: []\n", true},
		{"comments", "# top\nk: v # why\nq: \"x\" # c\n", true},
		{"url", "src: https://example.com/a#b\n", true},
		{"nested map", "m:\n  k: v\n", false},
		{"block scalar", "s: |\n  x\n", false},
		{"escaped quote", "s: \"a\\\"b\"\n", false},
		{"float", "f: 1.5\n", false},
		{"octal-looking", "n: 012\n", false},
		{"timestamp", "t: 2026-11-25T10:00:00Z\n", false},
		{"tab", "k:\tv\n", false},
		{"anchor", "a: &x 1\n", false},
		{"wikilink unquoted", "owner: [[Alice]]\n", false},
		{"multi-line plain", "k: a\n  b\n", false},
		{"top-level list", "- a\n", false},
		{"over-long key", strings.Repeat("k", 1100) + ": v\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := simpleYAML(tt.text)
			if ok != tt.fast {
				t.Fatalf("simpleYAML fast path = %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			slow, err := yamlFields(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Errorf("fast %#v\nslow %#v", fast, slow)
			}
		})
	}
}

// Headers that YAML refuses as a whole, in the shapes real vaults have:
// what can be read still makes the note's title, tags and properties.
func TestSalvageFrontmatter(t *testing.T) {
	tests := []struct {
		name   string
		header string
		fields []Field // nil: nothing read
	}{
		{
			name:   "a colon inside a plain value",
			header: "title: caching: keep the old key\ndate: 2026-03-02\ntags: [cache, redis]\n",
			fields: []Field{{"title", "caching: keep the old key", 1}, {"date", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), 2}, {"tags", []any{"cache", "redis"}, 3}},
		},
		{
			name:   "an @ that starts a list item",
			header: "aliases:\n- @mira\ntags:\n- \npublish: true\n",
			fields: []Field{{"aliases", []any{"@mira"}, 1}, {"tags", []any{nil}, 3}, {"publish", true, 5}},
		},
		{
			name:   "text after a closing quote, and a backtick",
			header: "title: \"202 accepted\" is not done\nsummary: `make` writes the file first\nsource: session\n",
			fields: []Field{{"title", `"202 accepted" is not done`, 1}, {"summary", "`make` writes the file first", 2}, {"source", "session", 3}},
		},
		{
			name:   "a value quoted whole is kept as YAML reads it",
			header: "title: 'it''s fine'\nnote: a: b\n",
			fields: []Field{{"title", "it's fine", 1}, {"note", "a: b", 2}},
		},
		{
			name:   "a key that cannot be read is left out",
			header: "aliases: Mira\n- \ntags:\n  - plans\n",
			fields: []Field{{"tags", []any{"plans"}, 3}},
		},
		{
			name:   "a block scalar is left to YAML",
			header: "body: |\n  line: one\n  line two\nbad: [x\n",
			fields: []Field{{"body", "line: one\nline two\n", 1}},
		},
		{name: "not a mapping", header: "- a\n- b\n"},
		{name: "nothing readable", header: "[oops\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := yamlFields(tt.header); err == nil {
				t.Fatalf("the header decodes as a whole; the case tests nothing")
			}
			fm := salvageFrontmatter(tt.header)
			if tt.fields == nil {
				if fm != nil {
					t.Fatalf("got %#v, want nil", fm.Fields)
				}
				return
			}
			if fm == nil || !reflect.DeepEqual(fm.Fields, tt.fields) {
				t.Fatalf("got %#v, want %#v", fm, tt.fields)
			}
		})
	}
	// Through Parse: the error stays, for the user to fix; the title and
	// tags come from what was read.
	n := Parse("Learnings/x.md", []byte("---\ntitle: caching: keep the old key\ntags: [cache, redis]\n---\nbody\n"), Options{})
	if n.FrontmatterError == "" || n.Title != "caching: keep the old key" || !reflect.DeepEqual(n.Tags, []string{"cache", "redis"}) {
		t.Errorf("error %q, title %q, tags %q", n.FrontmatterError, n.Title, n.Tags)
	}
}
