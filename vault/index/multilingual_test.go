package index

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// multilingual is the fixture vault of notes in many scripts.
const multilingual = "../../testdata/multilingual"

// loadMultilingual indexes the fixture vault and returns its files' text
// by path.
func loadMultilingual(t *testing.T) (*Index, map[string]string) {
	t.Helper()
	ix, _ := openIndex(t)
	files := map[string]string{}
	var us []Update
	err := filepath.WalkDir(multilingual, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(multilingual, p)
		rel = filepath.ToSlash(rel)
		files[rel] = string(b)
		us = append(us, Update{Path: rel, Note: note.Parse(rel, b, note.Options{}), Content: b})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, ix, us...)
	return ix, files
}

// scan is what a plain search of the files finds, as `rg -i -F` (unspaced
// scripts: anywhere) or `rg -i -w -F` (others: as a whole word) would.
func scan(files map[string]string, word string, unspaced bool) []string {
	w := strings.ToLower(word)
	var out []string
	for p, text := range files {
		s := strings.ToLower(text)
		for i := 0; ; {
			j := strings.Index(s[i:], w)
			if j < 0 {
				break
			}
			at := i + j
			if unspaced || wordBoundary(s, at, at+len(w)) {
				out = append(out, p)
				break
			}
			i = at + 1
		}
	}
	slices.Sort(out)
	return out
}

func wordBoundary(s string, start, end int) bool {
	isWord := func(r rune) bool {
		return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
	}
	before, after := []rune(s[:start]), []rune(s[end:])
	return (len(before) == 0 || !isWord(before[len(before)-1])) && (len(after) == 0 || !isWord(after[0]))
}

func searchPaths(t *testing.T, ix *Index, q Query) []string {
	t.Helper()
	q.Limit = 1000
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search(%q): %v", q.Text, err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Path)
	}
	slices.Sort(out)
	return out
}

// TestEveryScriptFindsWhatAScanFinds: for a word of each script, margin
// finds at least the files a plain scan finds, and only files that hold the
// word once folded (case, Latin/Greek/Cyrillic accents).
func TestEveryScriptFindsWhatAScanFinds(t *testing.T) {
	ix, files := loadMultilingual(t)
	tests := []struct {
		script, word string
		unspaced     bool
		min          int // files the scan must find, so that the fixture tests something
	}{
		{"Hangul", "노트", true, 2}, // 노트를 in the short note
		{"Hangul", "플러그인", true, 1},
		{"Hangul", "검색", true, 1},
		{"kana", "プラグイン", true, 1},
		{"kana", "ノート", true, 1},
		{"kana", "ガイド", true, 1},
		{"kanji", "日本語", true, 1},
		{"Han", "笔记", true, 1},
		{"Han", "指针", true, 2},
		{"Han", "语言", true, 1},
		{"Han, one character", "中", true, 1},
		{"Han, one character", "针", true, 1},
		{"Han", "同步", true, 1},
		{"Greek", "σημείωση", false, 1},
		{"Greek", "αναζήτηση", false, 1},
		{"Thai", "เลือก", true, 1},
		{"Thai", "ค้นหา", true, 1},
		{"Khmer", "ចំណាំ", true, 1},
		{"Khmer", "ស្វែងរក", true, 1},
		{"Bengali", "করুন", false, 1},
		{"Bengali", "নোট", false, 1},
		{"Bengali", "অনুসন্ধান", false, 1},
		{"Devanagari", "नोट", false, 1},
		{"Devanagari", "हिंदी", false, 1},
		{"Arabic", "ملاحظة", false, 1},
		{"Arabic", "البحث", false, 1},
		{"Cyrillic", "заметка", false, 1},
		{"Cyrillic", "поиск", false, 1},
		{"Cyrillic", "ёлка", false, 1},
		{"German", "größe", false, 1},
		{"German", "straße", false, 1},
		{"German", "übersicht", false, 1},
		{"German", "änderungen", false, 1},
		{"Latin, accent", "café", false, 1},
		{"Latin", "canvas", false, 2},
		{"Latin", "chambers", false, 2},
		{"Latin", "jazz", false, 2},
		{"emoji field", "📅", true, 2},
		{"tag", "finanzen", false, 1},
		{"tag, Han", "作業", true, 1},
		{"a header YAML refuses", "pares", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.script+" "+tt.word, func(t *testing.T) {
			want := scan(files, tt.word, tt.unspaced)
			if len(want) < tt.min {
				t.Fatalf("the scan finds %v, want at least %d files: fix the fixture", want, tt.min)
			}
			got := searchPaths(t, ix, Query{Text: tt.word})
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("margin finds %v, the scan %v: missing %s", got, want, p)
				}
			}
			// Nothing that does not hold the word once folded.
			w := foldedPieces(tt.word)
			for _, p := range got {
				var b strings.Builder
				pieces(files[p], func(f folded) { b.WriteString(f.text + " ") })
				if !strings.Contains(b.String(), w[0].text) {
					t.Errorf("margin finds %s, which does not hold %q", p, tt.word)
				}
			}
		})
	}
}

// TestFoldingKeepsSyllables: folding strips Latin, Greek and Cyrillic
// accents but never turns a syllable into another.
func TestFoldingKeepsSyllables(t *testing.T) {
	ix, _ := loadMultilingual(t)
	tests := []struct {
		query string
		want  []string
	}{
		{"ΣΗΜΕΊΩΣΗ", []string{"el/σημείωση.md"}},
		{"σημειωσεις", []string{"el/σημείωση.md"}}, // ΣΗΜΕΙΏΣΕΙΣ, accent and final sigma folded
		{"Ubersicht", []string{"de/Übersicht.md"}},
		{"ЗАМЕТКА", []string{"ru/заметка.md"}},
		{"フラグイン", nil}, // プラグイン without its voicing mark is another word
		{"ノ", []string{"ja/ノート.md"}},
		{"ㄴ", nil}, // a jamo is not a syllable
	}
	for _, tt := range tests {
		if got := searchPaths(t, ix, Query{Text: tt.query}); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

func TestRankingNamedNoteFirst(t *testing.T) {
	ix, _ := loadMultilingual(t)
	r, err := ix.Find(context.Background(), Query{Text: "canvas"})
	if err != nil || len(r.Hits) < 2 {
		t.Fatalf("Find = %+v, %v", r, err)
	}
	// Boards.md says canvas a dozen times; Canvas.md is the note named so.
	if r.Hits[0].Path != "Music/Canvas.md" {
		t.Errorf("first hit %s, want Music/Canvas.md", r.Hits[0].Path)
	}
	r, err = ix.Find(context.Background(), Query{Text: "canvas", Limit: 1})
	if err != nil || len(r.Hits) != 1 || r.Total != 2 || !r.Truncated {
		t.Errorf("limit 1: %d hits, total %d, truncated %v (%v); want 1, 2, true", len(r.Hits), r.Total, r.Truncated, err)
	}
	r, err = ix.Find(context.Background(), Query{Text: "canvas", Limit: 2})
	if err != nil || r.Total != 2 || r.Truncated {
		t.Errorf("limit 2: total %d, truncated %v (%v); want 2, false", r.Total, r.Truncated, err)
	}
}

// TestAllTermsWithinANote: terms may sit in different sections; the hit is
// the best section, at the line of the match.
func TestAllTermsWithinANote(t *testing.T) {
	ix, files := loadMultilingual(t)
	hits, err := ix.Search(context.Background(), Query{Text: "daily notes", Glob: "Music/*"})
	if err != nil || len(hits) != 1 || hits[0].Path != "Music/Long journal.md" {
		t.Fatalf("hits %v, %v", hitKeys(hits), err)
	}
	hits, err = ix.Search(context.Background(), Query{Text: "notes filler", Glob: "Music/Long*"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v, %v", hitKeys(hits), err)
	}
	h := hits[0]
	lines := strings.Split(files[h.Path], "\n")
	if h.Heading != "Part 40" || !strings.Contains(lines[h.Line-1], "notes") {
		t.Errorf("hit %s line %d (%q), want Part 40 at the line of \"notes\"", h.Heading, h.Line, lines[h.Line-1])
	}
	// The line of a match in a single-section note, after its frontmatter.
	hits, err = ix.Search(context.Background(), Query{Text: "quiet record"})
	if err != nil || len(hits) != 1 || hits[0].Line != 8 {
		t.Errorf("hits %+v, %v; want Kind of Blue at line 8", hits, err)
	}
}

// TestBestSectionHoldsTheMostTerms: when no section holds every term, the
// hit is the section that holds the most, not a footer that holds the one
// word the others lack.
func TestBestSectionHoldsTheMostTerms(t *testing.T) {
	ix, _ := openIndex(t)
	src := "# Theme guide\nRun npm install first.\n## Setup\nInstall the plugin from the settings.\n" +
		"## Usage\nThe plugin needs a restart: install it again.\n## Footer\nEdit this page on the community site.\n"
	n := note.Parse("Guides/Theme guide.md", []byte(src), note.Options{})
	apply(t, ix, Update{Path: n.Path, Note: n, Content: []byte(src)})
	hits, err := ix.Search(context.Background(), Query{Text: "install community plugin"})
	if err != nil || len(hits) != 1 || hits[0].Heading != "Setup" || hits[0].Line != 4 {
		t.Errorf("hits %+v, %v; want the Setup section, line 4", hits, err)
	}
	// Among sections that hold as many, the one whose word fewer sections
	// hold: here the footer's.
	hits, err = ix.Search(context.Background(), Query{Text: "plugin community"})
	if err != nil || len(hits) != 1 || hits[0].Heading != "Footer" {
		t.Errorf("hits %+v, %v; want the Footer section", hits, err)
	}
}

// TestHitInProperties: a note found by a property value alone is hit at
// that property's line, with the value in the snippet.
func TestHitInProperties(t *testing.T) {
	ix, files := loadMultilingual(t)
	for _, tt := range []struct {
		query, path string
		line        int
	}{
		{"modal", "Music/Kind of Blue.md", 5},
		{"1959", "Music/Kind of Blue.md", 6},
		{"chambers", "Music/Kind of Blue.md", 2},
		{"pares", "es/Caché de claves.md", 4}, // a header YAML refuses
	} {
		hits, err := ix.Search(context.Background(), Query{Text: tt.query, Glob: tt.path})
		if err != nil || len(hits) != 1 {
			t.Fatalf("%s: hits %v, %v", tt.query, hitKeys(hits), err)
		}
		h := hits[0]
		line := strings.Split(files[h.Path], "\n")[h.Line-1]
		if h.Line != tt.line || !strings.Contains(strings.ToLower(h.Snippet), "**"+tt.query+"**") {
			t.Errorf("%s: hit at line %d (%q), snippet %q; want line %d, the value marked", tt.query, h.Line, line, h.Snippet, tt.line)
		}
	}
}

func TestPropertiesSearchable(t *testing.T) {
	ix, _ := loadMultilingual(t)
	tests := []struct {
		query string
		want  []string
	}{
		{"status:done", []string{"Music/Kind of Blue.md", "zh/指针.md"}},
		{"STATUS:Done", []string{"Music/Kind of Blue.md", "zh/指针.md"}},
		{"rating:7", []string{"Music/Kind of Blue.md"}},
		{"artist:chambers", []string{"Music/Kind of Blue.md"}},
		{`artist:"paul chambers"`, []string{"Music/Kind of Blue.md"}},
		{"artist:chambers bass", []string{"Music/Kind of Blue.md"}},
		{"artist:chambers fast", nil},
		{"genre:modal", []string{"Music/Kind of Blue.md"}},
		{"released:1959", []string{"Music/Kind of Blue.md"}},
		{"status:arbeit", []string{"de/Übersicht.md"}},
		{"modal", []string{"Music/Kind of Blue.md"}}, // values are words too
		{"coltrane", []string{"Music/Giant Steps.md"}},
		{"http://example.com", nil}, // a URL is not a filter
		// A header YAML refuses (title: a: b) is read key by key.
		{"origen:pares", []string{"es/Caché de claves.md"}},
		{"tag:redis", []string{"es/Caché de claves.md"}},
		{`title:"clave vieja"`, []string{"es/Caché de claves.md"}},
	}
	for _, tt := range tests {
		if got := searchPaths(t, ix, Query{Text: tt.query}); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
}

// TestIndexLinearInTheNote: a note's tags and properties are indexed once,
// not once per section (#18): 4,000 tagged sections stay a few MB.
func TestIndexLinearInTheNote(t *testing.T) {
	var b strings.Builder
	for i := range 8000 {
		fmt.Fprintf(&b, "## h%d\ntext #t%d\n", i, i)
	}
	inline := b.String()
	b.Reset()
	b.WriteString("---\ntags: [")
	for i := range 4000 {
		fmt.Fprintf(&b, "f%d, ", i)
	}
	b.WriteString("x]\n---\n")
	for i := range 4000 {
		fmt.Fprintf(&b, "## h%d\ntext\n", i)
	}
	front := b.String()
	for _, tt := range []struct{ name, src, tag string }{{"inline tags", inline, "t7999"}, {"frontmatter tags", front, "f3999"}} {
		name, src := tt.name, tt.src
		t.Run(name, func(t *testing.T) {
			ix, dbPath := openIndex(t)
			n := note.Parse("Reference/tags.md", []byte(src), note.Options{})
			apply(t, ix, Update{Path: n.Path, Note: n, Content: []byte(src)})
			if err := ix.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(dbPath)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() > 5<<20 {
				t.Errorf("a %d KB note made a %d MB index, want < 5 MB", len(src)>>10, fi.Size()>>20)
			}
			ix = reopen(t, dbPath)
			if got := searchPaths(t, ix, Query{Text: "text", Tags: []string{tt.tag}}); len(got) != 1 {
				t.Errorf("text with tag %s: %v", tt.tag, got)
			}
		})
	}
}

// TestBestSectionEarliestOfEquals: a note's first section, which holds its
// title, is the hit when no later section holds more of the query.
func TestBestSectionEarliestOfEquals(t *testing.T) {
	ix, _ := loadMultilingual(t)
	for q, want := range map[string]string{"노트": "ko/노트.md#노트", "σημείωση": "el/σημείωση.md#Σημείωση"} {
		hits, err := ix.Search(context.Background(), Query{Text: q, Glob: want[:2] + "/*"})
		if err != nil || len(hits) == 0 || hitKeys(hits)[0] != want {
			t.Errorf("Search(%q) = %v, %v; want %s first", q, hitKeys(hits), err, want)
		}
	}
}

// TestMigrateFromSectionSearch: an index built by a margin that searched
// sections is emptied by the migration, so the next walk indexes every note
// again into notes_fts.
func TestMigrateFromSectionSearch(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "index.db")
	db, err := store.OpenRebuildable(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db, "index", schema[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO files (id, path, path_key, stem_key, size, mtime_ns, hash, state) VALUES (1, 'a.md', 'a', 'a', 1, 1, 'h', 'indexed')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ix := reopen(t, dbPath)
	st, err := ix.Stat(ctx)
	if err != nil || len(st) != 0 {
		t.Errorf("Stat after the migration = %v, %v; want nothing, so that the walk reads every note", st, err)
	}
	src := []byte("# Note\n\n노트를 읽으세요.\n")
	apply(t, ix, Update{Path: "a.md", Note: note.Parse("a.md", src, note.Options{}), Content: src})
	if got := searchPaths(t, ix, Query{Text: "노트"}); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("search after the migration = %v", got)
	}
	if err := ix.Check(ctx); err != nil {
		t.Error(err)
	}
}

func TestQuestionTerms(t *testing.T) {
	for _, c := range []struct {
		text         string
		words, pairs []string
	}{
		{"How do I embed a canvas?", []string{"How", "do", "I", "embed", "a", "canvas"}, nil},
		{"指针和数组有什么区别？", nil, []string{"指针", "针和", "和数", "数组", "组有", "有什", "什么", "么区", "区别"}},
		{"Obsidian的插件 和 sync", []string{"Obsidian", "sync"}, []string{"的插", "插件"}},
		{"노트를 만들기", nil, []string{"노트", "트를", "만들", "들기"}},
		{"заметка 📅", []string{"заметка", "📅"}, nil},
	} {
		words, pairs := QuestionTerms(c.text)
		if !slices.Equal(words, c.words) || !slices.Equal(pairs, c.pairs) {
			t.Errorf("QuestionTerms(%q) = %q, %q; want %q, %q", c.text, words, pairs, c.words, c.pairs)
		}
	}
}
