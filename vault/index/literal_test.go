package index

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// symbolNotes hold words with symbols, their letters alone, and longer
// words that start or end with them, each in notes of their own.
var symbolNotes = map[string]string{
	"Lang/plain c.md":      "I write C every day, and Objective-C on weekends.\n",
	"Lang/templates.md":    "Templates in C++ are powerful.\nThey compile slowly.\n",
	"Lang/libraries.md":    "Built with clang and the libc++ library.\n",
	"Lang/unity.md":        "Unity scripts use C# mostly.\n",
	"Lang/site.md":         "Moved the site from ASP.NET to Go.\n",
	"Lang/runtime.md":      "The .NET runtime ships with F# as well.\n",
	"Lang/sensors.md":      "A cheap .network of sensors.\n",
	"Lang/server.md":       "Node.js and npm; the config is in package.json.\n",
	"Lang/settings.md":     "Read node.json for the settings.\n",
	"Lang/shout.md":        "NODE.JS (v1.2) ROCKS!\n",
	"Ideas/tagged.md":      "Tagged #idea and later #ideas.\n",
	"Ideas/plural.md":      "Only #ideas here.\n",
	"People/mention.md":    "Ask @sam about it.\n",
	"People/longer.md":     "@samuel knows, mail sam@example.com.\n",
	"Releases/v12.md":      "Upgraded to v1.2 first.\n",
	"Releases/v120.md":     "Only v1.20 here, and v1.2.3 later.\n",
	"Releases/ounces.md":   "Add 1.2 ounces.\n",
	"Letters/letters.md":   "sam idea node js net c f v1 2\n",
	"Projects/stack.md":    "---\nstack: C#, .NET\n---\nProject notes.\n",
	"Projects/learn.md":    "# Learning C++\n\nSome text about rust.\n",
	"Projects/rust.md":     "Rust only.\n",
	"Projects/cpp rust.md": "Rust and C++ side by side.\n",
}

func loadSymbolNotes(t *testing.T) *Index {
	t.Helper()
	ix, _ := openIndex(t)
	var us []Update
	for p, text := range symbolNotes {
		us = append(us, Update{Path: p, Note: note.Parse(p, []byte(text), note.Options{}), Content: []byte(text)})
	}
	apply(t, ix, us...)
	return ix
}

// scanFixed is rg -F -i over each note's path and text, whole where the
// term starts or ends with a letter or digit: rg -i '\bc\+\+', '\.net\b'.
func scanFixed(files map[string]string, word string) []string {
	expr := "(?i)" + regexp.QuoteMeta(word)
	if regexp.MustCompile(`^\w`).MatchString(word) {
		expr = `(?i)\b` + regexp.QuoteMeta(word)
	}
	if regexp.MustCompile(`\w$`).MatchString(word) {
		expr += `\b`
	}
	re := regexp.MustCompile(expr)
	var out []string
	for p, text := range files {
		if re.MatchString(p + "\n" + text) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// TestSymbolTermsFindWhatAScanFinds: a word with symbols finds the notes
// that hold it as written, not every note that holds its letters
// ("c++" searched as "c" found 1,204 notes of a vault where rg -F found
// 106).
func TestSymbolTermsFindWhatAScanFinds(t *testing.T) {
	ix := loadSymbolNotes(t)
	for _, tt := range []struct {
		word string
		min  int // notes the scan must find, so that the fixture tests something
	}{
		{"c++", 3}, {"C#", 2}, {".net", 3}, {"node.js", 2}, {"#idea", 1}, {"@sam", 1},
		{"v1.2", 3}, {"f#", 1}, {"asp.net", 1}, {"package.json", 1},
		{"c++?", 3}, // a question mark ends the question, not the word
	} {
		t.Run(tt.word, func(t *testing.T) {
			want := scanFixed(symbolNotes, strings.TrimSuffix(tt.word, "?"))
			if len(want) < tt.min {
				t.Fatalf("the scan finds %v, want at least %d notes: fix the fixture", want, tt.min)
			}
			r, err := ix.Find(context.Background(), Query{Text: tt.word, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range r.Hits {
				got = append(got, h.Path)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) || r.Total != len(want) {
				t.Errorf("margin finds %v (total %d), the scan %v", got, r.Total, want)
			}
		})
	}
}

// TestSymbolTermsInEveryMode: with other words, a word with symbols must
// be held as written in all and phrase modes; in any mode a note holds
// it or another word, never its letters alone.
func TestSymbolTermsInEveryMode(t *testing.T) {
	ix := loadSymbolNotes(t)
	for _, tt := range []struct {
		text string
		mode Mode
		want []string
	}{
		{"c++ rust", ModeAll, []string{"Projects/cpp rust.md", "Projects/learn.md"}},
		{"c++ rust", ModeAny, []string{"Lang/templates.md", "Projects/cpp rust.md", "Projects/learn.md", "Projects/rust.md"}},
		{"c++ c#", ModeAny, []string{"Lang/templates.md", "Lang/unity.md", "Projects/cpp rust.md", "Projects/learn.md", "Projects/stack.md"}},
		{"and c++", ModePhrase, []string{"Projects/cpp rust.md"}},
		{`"in c++ are"`, ModeAll, []string{"Lang/templates.md"}},
		{"c++*", ModeAll, []string{"Lang/templates.md", "Projects/cpp rust.md", "Projects/learn.md"}},
		{"node.j*", ModeAll, []string{"Lang/server.md", "Lang/settings.md", "Lang/shout.md"}},
	} {
		got := searchPaths(t, ix, Query{Text: tt.text, Mode: tt.mode})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s %q: %v, want %v", tt.mode, tt.text, got, tt.want)
		}
	}
	// A synonym of a word with symbols finds the notes that hold it.
	got := searchPaths(t, ix, Query{Text: "c#", Expand: map[string][]string{"c#": {"unity"}}})
	if want := []string{"Lang/unity.md", "Projects/stack.md"}; !slices.Equal(got, want) {
		t.Errorf("c# or unity: %v, want %v", got, want)
	}
}

// TestSymbolTermHit: the hit of a word with symbols is on its line, the
// word marked whole, not its letters elsewhere.
func TestSymbolTermHit(t *testing.T) {
	ix := loadSymbolNotes(t)
	for _, tt := range []struct {
		text, path string
		line       int
		snippet    string
	}{
		{"c++", "Lang/templates.md", 1, "Templates in **C++** are powerful. They compile slowly."},
		{".net", "Lang/site.md", 1, "…site from ASP**.NET** to Go."},
		{"node.js", "Lang/shout.md", 1, "**NODE.JS** (v1.2) ROCKS!"},
		{"v1.2", "Lang/shout.md", 1, "NODE.JS (**v1.2**) ROCKS!"},
		{"c#", "Projects/stack.md", 2, "stack: **C#**, .NET"},
		{"c++", "Projects/learn.md", 1, "Some text about rust."}, // the heading's line
	} {
		hits, err := ix.Search(context.Background(), Query{Text: tt.text, Glob: tt.path})
		if err != nil || len(hits) != 1 {
			t.Fatalf("%s in %s: %v, %v", tt.text, tt.path, hitKeys(hits), err)
		}
		if h := hits[0]; h.Line != tt.line || h.Snippet != tt.snippet {
			t.Errorf("%s in %s: line %d, snippet %q; want line %d, %q", tt.text, tt.path, h.Line, h.Snippet, tt.line, tt.snippet)
		}
	}
}

func TestLiteralOf(t *testing.T) {
	for _, tt := range []struct {
		word       string
		prefix     bool
		want       string // "" for no literal
		start, end bool
	}{
		{"c++", false, "c++", true, false},
		{".NET", false, ".net", false, true},
		{"(node.js).", false, "node.js", true, true},
		{"#tag", false, "#tag", false, true},
		{"v1.2*", true, "v1.2", true, false},
		{"e-mail", false, "", false, false},
		{"don't", false, "", false, false},
		{"plain", false, "", false, false},
		{"etc.", false, "", false, false},
		{"¿qué?", false, "", false, false},
		{"++", false, "", false, false},
		{"C++개발", false, "c++개발", true, false},
	} {
		l := literalOf(tt.word, tt.prefix)
		switch {
		case l == nil && tt.want != "":
			t.Errorf("literalOf(%q) = nil, want %q", tt.word, tt.want)
		case l != nil && (string(l.runes) != tt.want || l.start != tt.start || l.end != tt.end):
			t.Errorf("literalOf(%q) = %q (whole at start %v, end %v), want %q (%v, %v)", tt.word, string(l.runes), l.start, l.end, tt.want, tt.start, tt.end)
		}
	}
}

// FuzzLiteralSnippet: a literal found in a text is found by the snippet
// at its first occurrence, marked, whatever runs of other scripts,
// marks and symbols surround it.
func FuzzLiteralSnippet(f *testing.F) {
	f.Add("c++", "Templates in C++ are powerful.")
	f.Add("node.j*", "Read node.json now")
	f.Add("c++개발", "C++개발자 모집")
	f.Add(".net", "ASP.NET and .network")
	f.Add("日本.語", "これは日本.語のテスト")
	f.Add("e\u0301.x", "cafe\u0301.x e.x")
	f.Fuzz(func(t *testing.T, word, text string) {
		prefix := strings.HasSuffix(word, "*")
		l := literalOf(word, prefix)
		if l == nil {
			return
		}
		start, end := l.find(text, 0)
		snip, at := snippet(text, []term{{text: string(l.runes), lit: l}})
		if start < 0 {
			return
		}
		if end <= start || end > len(text) {
			t.Fatalf("find(%q) in %q = %d, %d", word, text, start, end)
		}
		if at < 0 || at > start || !strings.Contains(snip, "**") {
			t.Errorf("snippet of %q in %q: %q at %d; the literal is at %d", word, text, snip, at, start)
		}
	})
}
