package note

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkOffsets fails t unless every offset of n lies within src, ranges are
// ordered, and each line number is the line of its offset.
func checkOffsets(t testing.TB, src []byte, n *Note) {
	t.Helper()
	// A line ends at "\n", "\r\n" or a lone "\r".
	lineOf := func(off int) int {
		before := src[:off]
		return bytes.Count(before, []byte("\n")) + bytes.Count(before, []byte("\r")) - bytes.Count(before, []byte("\r\n")) + 1
	}
	inRange := func(what string, start, end int) bool {
		if start < 0 || start > end || end > len(src) {
			t.Errorf("%s range [%d,%d) outside [0,%d]", what, start, end, len(src))
			return false
		}
		return true
	}
	isLineStart := func(off int) bool {
		return off == 0 || src[off-1] == '\n' || src[off-1] == '\r' && (off == len(src) || src[off] != '\n')
	}

	if inRange("body", n.BodyOffset, n.BodyOffset) && n.BodyLine != lineOf(n.BodyOffset) {
		t.Errorf("BodyLine %d, offset %d is on line %d", n.BodyLine, n.BodyOffset, lineOf(n.BodyOffset))
	}
	for _, h := range n.Headings {
		if inRange("heading", h.Offset, h.Offset) && (h.Line != lineOf(h.Offset) || !isLineStart(h.Offset)) {
			t.Errorf("heading %q: line %d offset %d, want a line start on line %d", h.Text, h.Line, h.Offset, lineOf(h.Offset))
		}
	}
	for _, c := range n.Checklist {
		if !inRange("checklist item", c.Offset, c.End) {
			continue
		}
		if c.Line != lineOf(c.Offset) || !isLineStart(c.Offset) || c.Raw != string(src[c.Offset:c.End]) {
			t.Errorf("checklist item %q: line %d offset %d raw %q", c.Text, c.Line, c.Offset, c.Raw)
		}
		if bytes.ContainsAny(src[c.Offset:c.End], "\r\n") {
			t.Errorf("checklist item %q spans a line break", c.Raw)
		}
	}
	for i, l := range n.Links {
		if !inRange("link", l.Offset, l.End) {
			continue
		}
		if l.Offset == l.End || l.Line != lineOf(l.Offset) {
			t.Errorf("link %q: [%d,%d) line %d, want line %d", l.Target, l.Offset, l.End, l.Line, lineOf(l.Offset))
		}
		text := string(src[l.Offset:l.End])
		if l.Markdown && !strings.HasPrefix(strings.TrimPrefix(text, "!"), "[") ||
			!l.Markdown && (!strings.HasPrefix(strings.TrimPrefix(text, "!"), "[[") || !strings.HasSuffix(text, "]]")) {
			t.Errorf("link %q covers %q", l.Target, text)
		}
		if i > 0 && n.Links[i-1].Offset > l.Offset {
			t.Errorf("links out of order at %d", i)
		}
	}
	for _, e := range n.Entries {
		if !inRange("entry", e.Start, e.End) {
			continue
		}
		if e.Line != lineOf(e.Start) || !isLineStart(e.Start) {
			t.Errorf("entry %s: line %d start %d", e.Time, e.Line, e.Start)
		}
		for _, l := range e.Links {
			if l.Offset < e.Start || l.Offset >= e.End {
				t.Errorf("entry %s [%d,%d) holds link at %d", e.Time, e.Start, e.End, l.Offset)
			}
		}
	}
}

// FuzzParse checks that Parse never panics and that every offset and line it
// reports is consistent with the source.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(src))
	}
	for _, seed := range []string{
		"",
		"---\n---\n",
		"---\nbroken: [\n---\n# x",
		"\uFEFF---\ntitle: a\n---\r\n## 09:00\r\n- [ ] a [[b]] #c\r\n",
		"## 9:05 [correction]\n[[a|b]] ![[c#^d]] [e](<f g.md#h>) [i](j%20k.md)\n",
		"- [x] done ✅ 2026-01-02 📅 2026-01-01 🆔 a ⛔ b, c [due:: 2026-01-03] ^id\n",
		"`[[code]]` <b>[[html]]</b> <http://x#y> [[a\\|b]] [x](y \"t\") [[[[z]]]]\n",
		"\xff\xfe[[\x80]] #\xc3 - [\xff] x\n",
		"> - [ ] quoted\n>   1. [/] nested\n\n    - [ ] indented code\n",
		"title\n===\n\nsub\n---\n[ref]: x.md\n[r][ref] [ref]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		for _, p := range []string{"Daily/2026-11-22.md", "Tasks/x.md"} {
			checkOffsets(t, []byte(src), Parse(p, []byte(src), testOptions))
		}
	})
}

// FuzzSimpleYAML checks the fast frontmatter decoder against yaml.v3: when
// it accepts a header it must decode it exactly as yaml.v3 does.
func FuzzSimpleYAML(f *testing.F) {
	for _, seed := range []string{
		"title: a\ntags: [a, b]\n",
		"due: 2026-11-25\nn: 12\nok: true\nnone: ~\nempty:\n",
		"list:\n- a\n- 'b'\n  - c\n",
		"list:\n  - x\n  - \"y\"\nnext: z\n",
		"a: 0x10\nb: 1_000\nc: 012\nd: on\ne: y\n",
		"k: v # c\n# comment\nk2: a#b\n",
		"k: 2026-13-45\nk2: [2026-01-02, 3]\n",
		"url: https://example.com/a?b=c\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fast, ok := simpleYAML(text)
		if !ok {
			return
		}
		slow, err := yamlFields(text)
		if err != nil {
			t.Fatalf("simpleYAML accepted %q, yaml.v3 fails: %v", text, err)
		}
		if len(fast) == 0 && len(slow) == 0 {
			return
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("simpleYAML(%q)\n got %#v\nwant %#v", text, fast, slow)
		}
	})
}
