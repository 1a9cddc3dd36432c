package edit

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// fuzzValue builds a SetFrontmatter value from fuzzer input.
func fuzzValue(kind uint8, s string) any {
	switch kind % 6 {
	case 0:
		return s
	case 1:
		return len(s) - 3
	case 2:
		return len(s)%2 == 0
	case 3:
		if s == "" {
			return []string{}
		}
		return strings.Split(s, ",")
	case 4:
		return map[string]any{"id": s, "items": []string{s}}
	}
	return nil
}

// topFields decodes a note's top-level frontmatter fields independently of
// the splicer's own bookkeeping: keys as written, values normalised.
func topFields(t *testing.T, src []byte) (fields []field, body []byte) {
	t.Helper()
	fm, ok, err := findFrontmatter(src)
	if err != nil {
		t.Fatalf("frontmatter: %v", err)
	}
	if !ok {
		return nil, src[fm.Open:]
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src[fm.Start:fm.End], &doc); err != nil {
		t.Fatalf("frontmatter does not parse: %v\n%q", err, src)
	}
	if len(doc.Content) == 0 {
		return nil, src[fm.Body:]
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		var v any
		if err := m.Content[i+1].Decode(&v); err != nil {
			t.Fatalf("decoding %q: %v", m.Content[i].Value, err)
		}
		fields = append(fields, field{key: m.Content[i].Value, value: normalise(v)})
	}
	return fields, src[fm.Body:]
}

func FuzzSetFrontmatter(f *testing.F) {
	seeds := []string{
		"---\ntitle: Ship v2 # comment\nstatus: open\ntags:\n  - a\n  - b\n---\nbody\n---\nhr above\n",
		"---\r\nStatus: 'open'\r\nlist: [a, \"b\"]\r\n---\r\nbody\r\n",
		"no frontmatter\n\n---\n",
		"---\n---\n",
		"---\nsum: |\n  one\n  two\nx: {a: 1}\n---\n",
		"---\n# only a comment\n---\n# Heading\n",
		"\uFEFF---\nclé: \"é\"\n---\n",
		"---\na:\nb: &x 1\nc: *x\n---\n",
		"---\na: one\n  two # c\nb: \"x\n  y\"\nc: [1, # c\n  2]\nd: {x: 1}\n---\n",
		"---\nq: \"x\u2028y\"\na : !!str 5\nb:\t'it''s # no'\nc: |+\n  keep\n\n---\n",
		"---\n  a: 1\n  b:\n  - x\n---\n",
		"---\na: 1\n...\n---\n",
	}
	for i, s := range seeds {
		f.Add([]byte(s), "status", uint8(i), "done")
		f.Add([]byte(s), "tags", uint8(i+3), "x,y: z")
	}
	f.Fuzz(func(t *testing.T, src []byte, key string, kind uint8, s string) {
		value := fuzzValue(kind, s)
		in := bytes.Clone(src)
		out, err := SetFrontmatter(src, key, value)
		if !bytes.Equal(src, in) {
			t.Fatal("SetFrontmatter modified its input")
		}
		if err != nil {
			return
		}
		before, body := topFields(t, src)
		after, outBody := topFields(t, out)
		if !bytes.Equal(body, outBody) {
			t.Fatalf("body changed:\n%q\n%q", body, outBody)
		}
		var others []field
		var got []field
		for _, fl := range after {
			if k, ok := fl.key.(string); ok && strings.EqualFold(k, key) {
				got = append(got, fl)
			} else {
				others = append(others, fl)
			}
		}
		var wantOthers []field
		for _, fl := range before {
			if k, ok := fl.key.(string); !ok || !strings.EqualFold(k, key) {
				wantOthers = append(wantOthers, fl)
			}
		}
		if !reflect.DeepEqual(others, wantOthers) {
			t.Fatalf("other keys changed:\n%v\n%v\n%q\n%q", wantOthers, others, src, out)
		}
		if value == nil {
			if len(got) != 0 {
				t.Fatalf("key %q still there: %q", key, out)
			}
			return
		}
		want, err := roundTrip(value)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0].value, want) {
			t.Fatalf("key %q = %v, want %v\n%q", key, got, want, out)
		}
	})
}

func FuzzAppendUnderSection(f *testing.F) {
	f.Add([]byte("# T\n\n## Tasks\n- [ ] a\n\n## Notes\ntext\n"), "tasks", "- [ ] b")
	f.Add([]byte("---\n# c\n---\nSetext\n---\n- x\n---\n"), "setext", "prose")
	f.Add([]byte("## A\r\n```\r\n## B\r\n```\r\n"), "B", "x\r\ny")
	f.Add([]byte("no headings at all"), "## New", "- [x] done")
	f.Fuzz(func(t *testing.T, src []byte, heading, text string) {
		in := bytes.Clone(src)
		out, err := AppendUnderSection(src, heading, text)
		if !bytes.Equal(src, in) {
			t.Fatal("input modified")
		}
		if err != nil {
			return
		}
		// Only insertions: src is out with one run of bytes taken out, and
		// that run comes after the frontmatter. A new section at the end
		// may also replace the blank lines there.
		if !bytes.HasPrefix(out, bytes.TrimRight(src, " \t\r\n")) {
			insertedOnly(t, src, out)
		}
		// The text went in, line by line, in the note's line ending.
		eol := lineEnding(src)
		if want := normaliseText(text, eol); !bytes.Contains(out, []byte(want)) {
			t.Fatalf("text %q missing from %q", want, out)
		}
		// And the heading is there now.
		_, title, _ := parseHeadingArg(heading)
		found := false
		_, _, hs, _, err := outline(out)
		if err != nil {
			return // the text made the note too costly to parse
		}
		for _, h := range hs {
			found = found || h.is(title)
		}
		if !found && !strings.ContainsAny(title, "#`~=-") {
			t.Fatalf("heading %q not found in %q", title, out)
		}
	})
}

// insertedOnly fails unless out is src with one run of bytes inserted after
// the frontmatter.
func insertedOnly(t *testing.T, src, out []byte) {
	t.Helper()
	p := 0
	for p < len(src) && src[p] == out[p] {
		p++
	}
	s := 0
	for s < len(src)-p && src[len(src)-1-s] == out[len(out)-1-s] {
		s++
	}
	if p+s != len(src) {
		t.Fatalf("output is not an insertion into the input:\n%q\n%q", src, out)
	}
	if p < bodyStart(src) {
		t.Fatalf("inserted inside the frontmatter:\n%q\n%q", src, out)
	}
}
