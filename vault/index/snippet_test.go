package index

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/margin-md/margin/vault/note"
)

// snippetSlow is snippet as it was written first: every piece folded,
// then compared with the terms.
func snippetSlow(body string, terms []term) (string, int) {
	var spans []folded
	var matched []bool
	first, stop := -1, -1
	piecesWhile(body, func(p folded) bool {
		m := false
		for _, t := range terms {
			if t.match(p) {
				m = true
				break
			}
		}
		if m && first < 0 {
			first, stop = p.start, len(spans)+3*snippetTokens
		}
		spans, matched = append(spans, p), append(matched, m)
		return stop < 0 || len(spans) < stop
	})
	if first < 0 {
		return leadSnippet(body), -1
	}
	ss := make([]span, len(spans))
	for i, p := range spans {
		ss[i] = span{p.start, p.end}
	}
	return window(body, ss, matched), first
}

// TestSnippetComparesInPlace: the snippet that folds only the pieces it
// must is the snippet that folds every piece, over the multilingual
// fixture vault and a few hand-made texts, for queries in every script,
// prefixes and symbols.
func TestSnippetComparesInPlace(t *testing.T) {
	bodies := []string{
		"Bench PRESS bench-press benchmark BENCH", "📅 2026-11-24 ⏫ #Tag Ⓐ ⓐ", "café CAFÉ Cafe naïve",
		"노트를 정리 プラグイン 笔记 เลือก", "x\xff\xfe y \xff", "",
	}
	err := filepath.WalkDir(multilingual, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		data, err := os.ReadFile(p)
		bodies = append(bodies, string(data))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"bench", "bench*", "BENCH press", "cafe", "📅", "ⓐ", "노트", "プラグイン", "笔记", "เลือก", "σημείωση",
		"заметка", "notiz", "ملاحظة", "করুন", "x", "\ufffd", "the", "a*", "2026"}
	for _, q := range queries {
		_, terms, _ := matchExpr(q, ModeAll, nil)
		for _, body := range bodies {
			got, gotAt := snippet(body, terms)
			want, wantAt := snippetSlow(body, terms)
			if got != want || gotAt != wantAt {
				t.Errorf("snippet(%.40q, %q) = %q at %d, folding every piece gives %q at %d", body, q, got, gotAt, want, wantAt)
			}
		}
	}
}

// TestSnippetInvalidUTF8: a note with bytes that are not UTF-8 (a Latin-1
// "café") is found and its snippet cut where its bytes are: an invalid
// byte is one byte wide, not the three of the U+FFFD it decodes as.
func TestSnippetInvalidUTF8(t *testing.T) {
	ix, _ := openIndex(t)
	apply(t, ix, fixture{path: "Notes/latin1.md", kind: note.KindNote, content: "# Log\n\ncaf\xe9 bench press \xff\n"}.update())
	r, err := ix.Find(context.Background(), Query{Text: "bench"})
	if err != nil || len(r.Hits) != 1 {
		t.Fatalf("Find: %+v, %v; want the note", r, err)
	}
	if want := "caf\xe9 **bench** press \xff"; r.Hits[0].Snippet != want {
		t.Errorf("snippet %q, want %q", r.Hits[0].Snippet, want)
	}
}

// TestLeadSnippetReadsOnlyItsWords: the lead of a section, read word by
// word up to its length, is the lead cut from all its words joined.
func TestLeadSnippetReadsOnlyItsWords(t *testing.T) {
	slow := func(body string) string {
		s := strings.Join(strings.Fields(body), " ")
		if utf8.RuneCountInString(s) <= 160 {
			return s
		}
		r := []rune(s)[:160]
		if i := strings.LastIndexByte(string(r), ' '); i > 80 {
			return string(r)[:i] + "…"
		}
		return string(r) + "…"
	}
	bodies := []string{"", "  ", "one", " two  words\n", strings.Repeat("word ", 31) + "x", strings.Repeat("word ", 32),
		strings.Repeat("a", 159) + " b", strings.Repeat("a", 160), strings.Repeat("a", 161), strings.Repeat("노트를 ", 50),
		strings.Repeat("x", 100) + " " + strings.Repeat("y", 100), strings.Repeat("é", 81) + " " + strings.Repeat("z", 90)}
	for _, b := range bodies {
		if got, want := leadSnippet(b), slow(b); got != want {
			t.Errorf("leadSnippet(%.30q) = %q, want %q", b, got, want)
		}
	}
}

// TestSnippetMarksDecomposedText: a hit whose best section holds the word
// in decomposed Hangul (as some macOS tools write it) marks it in the
// snippet, though the probes that choose the section fold rune by rune and
// do not see it there.
func TestSnippetMarksDecomposedText(t *testing.T) {
	ix, _ := openIndex(t)
	body := norm.NFD.String("오늘 노트를 정리했다")
	apply(t, ix, fixture{path: "Notes/노트.md", kind: note.KindNote, content: "# 노트\n\n" + body + "\n"}.update())
	hits, err := ix.Search(context.Background(), Query{Text: "노트"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search = %v, %v; want the note", hits, err)
	}
	if !strings.Contains(norm.NFC.String(hits[0].Snippet), "**노트를**") {
		t.Errorf("snippet %q does not mark the word", hits[0].Snippet)
	}
}

// TestSnippetDropsTheTextsBold: a note's own **bold** would run into the
// match marks ("****Supabase** Vector Store**"); in a snippet every ** is
// a match's.
func TestSnippetDropsTheTextsBold(t *testing.T) {
	_, terms, _ := matchExpr("supabase", ModeAll, nil)
	for body, want := range map[string]string{
		"Connect through the **Supabase Vector Store** node.": "Connect through the **Supabase** Vector Store node.",
		"***Supabase*** first":                                "**Supabase** first",
		"a*b **c** supabase":                                  "a*b c **supabase**",
		"supabase, then **end**":                              "**supabase**, then end",
	} {
		if got, _ := snippet(body, terms); got != want {
			t.Errorf("snippet(%q) = %q, want %q", body, got, want)
		}
	}
}

// TestHitLineInsideTheFile: every hit's line is a line of its file, and a
// note found by its title or a property alone says so in its snippet: the
// title, or the property's line. A note that is only frontmatter (its
// body would start past its last line) is the case that broke.
func TestHitLineInsideTheFile(t *testing.T) {
	ix, _ := openIndex(t)
	files := map[string]string{
		"People/Ada Quillfeather.md": "---\nborn: 1815\nplace: Harrowgate\ntags: [ancestry]\n---\n",
		"Places/Harrowgate.md":       "---\nkind: town\n---\nA spa town where the family lived.\n",
		"Empty/Orrin Vale.md":        "",
	}
	var us []Update
	for p, text := range files {
		us = append(us, Update{Path: p, Note: note.Parse(p, []byte(text), note.Options{}), Content: []byte(text)})
	}
	apply(t, ix, us...)
	for _, tc := range []struct {
		query, path string
		line        int
		snippet     string
	}{
		{"quillfeather", "People/Ada Quillfeather.md", 1, "Ada **Quillfeather**"},
		{"1815", "People/Ada Quillfeather.md", 2, "born: **1815**"},
		{"ancestry", "People/Ada Quillfeather.md", 4, "**ancestry**"},
		{"harrowgate", "Places/Harrowgate.md", 4, "**Harrowgate** — A spa town where the family lived."},
		{"orrin", "Empty/Orrin Vale.md", 1, "**Orrin** Vale"},
		{"", "People/Ada Quillfeather.md", 1, ""}, // listed by its path
	} {
		hits, err := ix.Search(context.Background(), Query{Text: tc.query, Glob: tc.path})
		if err != nil || len(hits) != 1 {
			t.Fatalf("%s: hits %v, %v", tc.query, hitKeys(hits), err)
		}
		h := hits[0]
		lines := max(strings.Count(files[tc.path], "\n"), 1)
		if h.Line < 1 || h.Line > lines {
			t.Errorf("%s: hit at %s:%d, a file of %d lines", tc.query, h.Path, h.Line, lines)
		}
		if h.Line != tc.line || !strings.Contains(h.Snippet, tc.snippet) {
			t.Errorf("%s: hit at line %d, snippet %q; want line %d, a snippet holding %q", tc.query, h.Line, h.Snippet, tc.line, tc.snippet)
		}
	}
}
