package note

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOutline(t *testing.T) {
	src := "---\ntitle: x\n# a YAML comment\n---\n" + // 1-4
		"Preamble.\n\n" + // 5-6
		"# Setup\n\n" + // 7-8
		"```sh\n# a shell comment\n```\n\n" + // 9-12
		"````md\n## inside\n```\n## still inside\n````\n\n" + // 13-18
		"~~~\n### tilde\n```\n~~~\n\n" + // 19-23
		"## Check ##\n\ntext\n\n" + // 24-27
		"Under **line**\n---\n\nafter\n\n" + // 28-32
		"> ## Quoted\n\n" + // 33-34
		"# Next\nend\n" // 35-36
	o := ParseOutline([]byte(src))
	type sec struct {
		Level     int
		Text, Raw string
		Line      int
		Body, End string // what the offsets start
	}
	at := func(off int) string {
		rest := src[off:]
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			return rest[:i]
		}
		return rest
	}
	var got []sec
	for _, s := range o.Sections {
		if s.Offset != strings.LastIndexByte(src[:s.Offset], '\n')+1 || s.Offset > s.Body || s.Body > s.End {
			t.Errorf("%q: offsets %d %d %d", s.Text, s.Offset, s.Body, s.End)
		}
		got = append(got, sec{s.Level, s.Text, s.Raw, s.Line, at(s.Body), at(s.End)})
	}
	want := []sec{
		{1, "Setup", "Setup", 7, "", "# Next"},
		{2, "Check", "Check", 24, "", "Under **line**"},
		{2, "Under line", "Under **line**", 28, "", "> ## Quoted"},
		{2, "Quoted", "Quoted", 33, "", "# Next"},
		{1, "Next", "Next", 35, "end", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections\n got %+v\nwant %+v", got, want)
	}
	if o.BodyOffset != strings.Index(src, "Preamble") || o.Closer != "" || o.Plain != "" {
		t.Errorf("outline %d %q %q", o.BodyOffset, o.Closer, o.Plain)
	}
	if text := o.Sections[0].BodyText([]byte(src)); !strings.Contains(text, "# a shell comment") || !strings.HasSuffix(text, "after\n\n> ## Quoted") {
		t.Errorf("Setup section text %q: want the code and its sub-sections", text)
	}
}

// TestParseOutlineIsParse: the outline's headings are the note's, on every
// test note.
func TestParseOutlineIsParse(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.md")
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checkOutline(t, src)
	}
}

func checkOutline(t *testing.T, src []byte) {
	t.Helper()
	n := Parse("a.md", src, Options{})
	o := ParseOutline(src)
	if o.BodyOffset != n.BodyOffset && n.Frontmatter != nil || o.Plain != n.Plain {
		t.Fatalf("outline body %d plain %q, note %d %q", o.BodyOffset, o.Plain, n.BodyOffset, n.Plain)
	}
	if len(o.Sections) != len(n.Headings) {
		t.Fatalf("%d sections, %d headings", len(o.Sections), len(n.Headings))
	}
	for i, s := range o.Sections {
		if s.Heading != n.Headings[i] {
			t.Fatalf("section %d: %+v, heading %+v", i, s.Heading, n.Headings[i])
		}
		if s.Body < s.Offset || s.End < s.Body || s.End > len(src) {
			t.Fatalf("section %q: offsets %d %d %d of %d", s.Text, s.Offset, s.Body, s.End, len(src))
		}
	}
}

func TestCloser(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"# A\n```\ncode\n", "```"},
		{"# A\n````go\n```\n", "````"},
		{"# A\n~~~~~\n", "~~~~~"},
		{"# A\n~~~", "~~~"},
		{"  ```\n## B\n\n", "```"},
		{"# A\n```\ncode\n```\n", ""},
		{"# A\n```\n```", ""},
		{"~~~\n~~~~\n", ""},
		{"- ```\n  code\n", ""},
		{"> ```\n> code\n", ""},
		{"---\n```\n---\n```\n", "```"},
		{"text\n", ""},
		{"```\r0", "```"},   // a lone '\r' ends no line for goldmark: "0" is the info string
		{"~~~\r~~~", "~~~"}, // nor closes the fence
		{"# A\n<!-- a comment\n\n## B\n", "-->"},
		{"# A\n<!-- a comment -->\n", ""},
		{"<PRE>\ncode\n", "</pre>"},
		{"<script>\n</style>\n", ""},
		{"<?php\n", "?>"},
		{"<!DOCTYPE\n", ">"},
		{"<![CDATA[\n", "]]>"},
		{"<div>\n", ""},
		{"> <!--\n", ""},
	} {
		if got := ParseOutline([]byte(tc.src)).Closer; got != tc.want {
			t.Errorf("%q: open fence %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestParseOutlineOverBudget(t *testing.T) {
	src := "# A\n" + strings.Repeat(">", maxNesting+1) + " x\n"
	if o := ParseOutline([]byte(src)); o.Plain == "" || o.Sections != nil {
		t.Errorf("outline %+v: want no sections and why", o)
	}
}

func TestDecodeFrontmatter(t *testing.T) {
	type header struct {
		Name    string            `yaml:"name"`
		Version int               `yaml:"version"`
		Vocab   map[string]string `yaml:"vocab"`
	}
	var h header
	src := "\uFEFF---  \r\nname: x\r\nversion: 3\r\nvocab: {bp: bench press}\r\n---\r\n# Body\r\n"
	body, err := DecodeFrontmatter([]byte(src), &h)
	if err != nil || src[body:] != "# Body\r\n" || h.Name != "x" || h.Version != 3 || h.Vocab["bp"] != "bench press" {
		t.Errorf("got %+v body %q, %v", h, src[body:], err)
	}
	// An indented --- is YAML (a line of a block scalar), not the header's end.
	var folded struct {
		Note string `yaml:"note"`
		Name string `yaml:"name"`
	}
	src = "---\nnote: |\n  above\n  ---\n  below\nname: y\n---\nbody"
	if body, err := DecodeFrontmatter([]byte(src), &folded); err != nil || folded.Note != "above\n---\nbelow\n" || folded.Name != "y" || src[body:] != "body" {
		t.Errorf("an indented --- in the header: got %+v body %d, %v", folded, body, err)
	}
	for _, tc := range []struct{ src, want string }{
		{"# no header\n", ErrNoFrontmatter.Error()},
		{"---\nname: x\nno closing line\n", ErrNoFrontmatter.Error()},
		{"---\nname: x\n\nversion: two\n---\n", "yaml: line 4: cannot unmarshal"},
		{"---\nname: [x\n---\n", "yaml: line 2:"},
		{"---\na: &a [x]\nb: &b [*a,*a]\nc: &c [*b,*b]\nd: &d [*c,*c]\ne: &e [*d,*d]\nf: &f [*e,*e]\ng: &g [*f,*f]\nh: &h [*g,*g]\ni: &i [*h,*h]\nj: [*i,*i]\n---\n", "not read: more than 8 YAML aliases"},
	} {
		_, err := DecodeFrontmatter([]byte(tc.src), &header{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
	if _, err := DecodeFrontmatter([]byte("body"), &header{}); !errors.Is(err, ErrNoFrontmatter) {
		t.Errorf("error %v, want ErrNoFrontmatter", err)
	}
}

// FindHeader is the one reading of where frontmatter sits, for Parse, the
// index and margin's edits alike.
func TestFindHeader(t *testing.T) {
	const bom = "\uFEFF"
	for _, tc := range []struct {
		src          string
		want         Header
		ok, unclosed bool
	}{
		{"---\na: 1\n---\nb", Header{Open: 0, Start: 4, End: 9, Body: 13, EOL: "\n"}, true, false},
		{bom + "---\r\na: 1\r\n--- \t\r\nb", Header{Open: 3, Start: 8, End: 14, Body: 21, EOL: "\r\n"}, true, false},
		{"---  \n---", Header{Start: 6, End: 6, Body: 9, EOL: "\n"}, true, false},
		{"---\na: 1\nno closing line\n", Header{Start: 4, EOL: "\n"}, false, true},
		{"---", Header{}, false, false},
		{"--- x\na: 1\n---\n", Header{}, false, false},
		{"text\n---\na: 1\n---\n", Header{}, false, false},
		{bom + "# heading\n", Header{Open: 3}, false, false},
	} {
		h, ok, unclosed := FindHeader(tc.src)
		if h != tc.want || ok != tc.ok || unclosed != tc.unclosed {
			t.Errorf("%q: %+v %v %v, want %+v %v %v", tc.src, h, ok, unclosed, tc.want, tc.ok, tc.unclosed)
		}
	}
}

// FuzzParseOutline checks that the outline is Parse's headings, with
// sections that nest, and that closing a block left open makes what
// follows markdown again.
func FuzzParseOutline(f *testing.F) {
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
		"# A\n```\n# no\n",
		"---\n# c\n---\nSetext\n===\n- x\n---\n",
		"## A\r\n~~~~\r\n## B\r\n~~~\r\n",
		"\t```\n# x\n",
		"> # q\n- # l\n    # code\n<div>\n# html\n</div>\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		checkOutline(t, []byte(src))
		o := ParseOutline([]byte(src))
		for i, s := range o.Sections {
			for _, next := range o.Sections[i+1:] {
				if next.Offset >= s.End {
					break
				}
				if next.Level <= s.Level {
					t.Fatalf("section %q ends at %d after %q at %d", s.Text, s.End, next.Text, next.Offset)
				}
			}
		}
		if o.Closer == "" || o.Plain != "" {
			return
		}
		closed := src + "\n" + o.Closer + "\n\n# Zq\n"
		c := ParseOutline([]byte(closed))
		if c.Plain == "" && (len(c.Sections) == 0 || c.Sections[len(c.Sections)-1].Text != "Zq" || c.Closer != "") {
			t.Fatalf("closing with %q did not end the block: %+v", o.Closer, c)
		}
	})
}
