package vaulttest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// HostileNote is the body of a note built to make a markdown or YAML parser
// spend time or memory out of proportion to its size: deep nesting, long
// runs of delimiters, brackets that never close. Make returns about size
// bytes of it.
type HostileNote struct {
	Name string
	Make func(size int) []byte
}

// repeat fills about size bytes with unit.
func repeat(unit string) func(int) []byte {
	return func(size int) []byte {
		return bytes.Repeat([]byte(unit), max(size/len(unit), 1))
	}
}

// lines fills about size bytes with line(i), one a line.
func lines(line func(i int) string) func(int) []byte {
	return func(size int) []byte {
		var b bytes.Buffer
		b.Grow(size + 256)
		for i := 0; b.Len() < size; i++ {
			b.WriteString(line(i))
			b.WriteByte('\n')
		}
		return b.Bytes()
	}
}

// frontmatter wraps about size bytes of YAML text from yaml in a header.
func frontmatter(yaml func(int) []byte) func(int) []byte {
	return func(size int) []byte {
		return append(append([]byte("---\n"), yaml(size-16)...), "\n---\nbody\n"...)
	}
}

// nested opens and closes a construct depth times around x, in lines of
// about size bytes in all.
func nested(open, x, close string, depth int) func(int) []byte {
	unit := strings.Repeat(open, depth) + x + strings.Repeat(close, depth) + "\n"
	return repeat(unit)
}

// Hostile lists the pathological notes margin must index within a bounded
// cost. Each one is a shape that has cost goldmark, the inline scans or
// yaml.v3 time or memory more than linear in its size.
var Hostile = []HostileNote{
	{"blockquotes-one-line", repeat(">")},
	{"blockquotes-spaced", repeat("> ")},
	{"blockquotes-stairs", lines(func(i int) string { return strings.Repeat(">", i%2000) + " x" })},
	{"blockquotes-lazy", func(size int) []byte {
		return append(bytes.Repeat([]byte(">"), 1000), lines(func(int) string { return "lazy" })(size-1000)...)
	}},
	{"open-brackets", repeat("[")},
	{"wikilinks", repeat("[[a]]")},
	{"wikilinks-unclosed", repeat("[[a")},
	{"image-openers", repeat("![")},
	{"links-unclosed", repeat("[a](")},
	{"links", repeat("[a](b) ")},
	{"nested-links", nested("[", "a", "](b)", 500)},
	{"brackets-balanced", nested("[", "a", "]", 5000)},
	{"list-one-line", repeat("- ")},
	{"ordered-list-one-line", repeat("1. ")},
	{"list-stairs", lines(func(i int) string { return strings.Repeat("  ", i%1000) + "- x" })},
	{"list-blockquote-mix", repeat("> - ")},
	{"stars", repeat("*")},
	{"star-words", repeat("*a ")},
	{"underscores", repeat("_")},
	{"underscore-words", repeat("a_ _b ")},
	{"emphasis-mix", repeat("*_**__")},
	{"backticks", repeat("`")},
	{"backtick-runs", func(size int) []byte {
		var b bytes.Buffer
		for n := 1; b.Len() < size; n++ {
			b.WriteString(strings.Repeat("`", n%3000+1))
			b.WriteByte('a')
		}
		return b.Bytes()
	}},
	{"angle-brackets", repeat("<")},
	{"autolinks-unclosed", repeat("<a:")},
	{"html-tags-unclosed", repeat("<a ")},
	{"html-blocks", lines(func(i int) string { return "<div>\n\n</div>" })},
	{"html-comment-unclosed", func(size int) []byte { return append([]byte("<!--"), repeat("x\n")(size)...) }},
	{"table", lines(func(i int) string { return strings.Repeat("| a ", 200) + "|" })},
	{"headings", repeat("# h\n")},
	{"setext-headings", repeat("a\n=\n")},
	{"tags", lines(func(i int) string { return fmt.Sprintf("#t%d", i) })},
	{"tags-wide", lines(func(i int) string {
		var b strings.Builder
		for j := range 10 {
			fmt.Fprintf(&b, "#t%d ", 10*i+j)
		}
		return b.String()
	})},
	{"checklist", lines(func(i int) string { return fmt.Sprintf("- [ ] item %d 📅 2026-01-02 [due:: 2026-01-03]", i) })},
	{"reference-definitions", lines(func(i int) string { return fmt.Sprintf("[r%d]: x.md\n[r%d]", i, i) })},
	{"lone-carriage-returns", repeat("a\r")},
	{"lone-carriage-return-items", repeat("- a\r")},
	{"entities", repeat("&amp;")},
	{"escapes", repeat("\\")},
	{"daily-entries", repeat("## 09:00\nx\n")},
	{"frontmatter-flow-nesting", frontmatter(func(size int) []byte { return append([]byte("k: "), repeat("[")(size)...) })},
	{"frontmatter-map-nesting", frontmatter(func(size int) []byte { return append([]byte("k: "), repeat("{a: ")(size)...) })},
	{"frontmatter-aliases", frontmatter(func(size int) []byte {
		// a billion-laughs shape: each anchor refers to the last one nine times
		b := []byte("a0: &a0 [x]\n")
		for i := 1; len(b) < size && i < 40; i++ {
			b = fmt.Appendf(b, "a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", i-1), 9), ","))
		}
		return b
	})},
	{"frontmatter-long-list", frontmatter(lines(func(i int) string {
		if i == 0 {
			return "tags:"
		}
		return fmt.Sprintf("  - t%d", i)
	}))},
	{"frontmatter-indent-stairs", frontmatter(lines(func(i int) string { return strings.Repeat(" ", i%500) + "k:" }))},
}

// WriteHostile writes each Hostile note of about size bytes into dir as
// Hostile/<name>.md and returns the vault-relative paths.
func WriteHostile(t testing.TB, dir string, size int) []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "Hostile"), 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, h := range Hostile {
		rel := "Hostile/" + h.Name + ".md"
		if err := os.WriteFile(filepath.Join(dir, rel), h.Make(size), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, rel)
	}
	return paths
}
