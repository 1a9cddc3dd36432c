package index

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/margin-md/margin/vault/note"
)

// longNote is a note of about size bytes in sections of 100 lines, each
// line with a word of its own; its last line holds last, if not "".
func longNote(path string, size int, last string) fixture {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		if i%100 == 0 {
			fmt.Fprintf(&b, "## Part %d\n", i/100)
		}
		fmt.Fprintf(&b, "filler line w%d of the long note\n", i)
	}
	if last != "" {
		b.WriteString("the end: " + last + "\n")
	}
	return fixture{path: path, kind: note.KindNote, content: b.String()}
}

// searchRows counts the rows of notes_fts: all, or those of the note path.
func searchRows(t *testing.T, ix *Index, path string) int {
	t.Helper()
	q, args := `SELECT count(*) FROM notes_fts_docsize`, []any{}
	if path != "" {
		q += ` WHERE id & ` + chunkMaskSQL + ` = (SELECT id FROM files WHERE path = ?)`
		args = append(args, path)
	}
	var n int
	if err := ix.db.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func search(t *testing.T, ix *Index, q Query) []Hit {
	t.Helper()
	hits, err := ix.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("Search %+v: %v", q, err)
	}
	return hits
}

func TestRowsCoverTheText(t *testing.T) {
	long := longNote("Long.md", 3*ftsChunk, "").content
	oneLine := strings.ReplaceAll(long, "\n", " ")
	var meta strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&meta, "%s ", metaToken(metaTag, fmt.Sprint("t", i)))
	}
	for name, r := range map[string]ftsRow{
		"short":         {title: "Short", path: "Short", body: "a few words\n"},
		"empty":         {},
		"long body":     {title: "Long", path: "Long", headings: "Part 1\n", body: long},
		"one long line": {title: "Line", body: oneLine},
		"long columns":  {title: "Cols", headings: long, props: long, body: long, meta: meta.String()},
	} {
		r.id = 7
		var got [6]strings.Builder
		var fields [5]strings.Builder
		k := int64(0)
		err := r.rows(func(args []any) error {
			if id := args[0].(int64); id != 7|k<<chunkShift {
				t.Errorf("%s: row %d has rowid %d, want %d", name, k, id, 7|k<<chunkShift)
			}
			size := 0
			for i, a := range args[1:] {
				got[i].WriteString(argText(t, a))
				size += len(argText(t, a))
			}
			// Folded ASCII text is the text's length, one space more.
			if size > ftsChunk+6 {
				t.Errorf("%s: row %d holds %d bytes, want at most %d", name, k, size, ftsChunk)
			}
			k++
			return nil
		}, func(args []any) error {
			// The same row less its body, after it: row 0 always, a
			// later row only for something other than body.
			if id := args[0].(int64); id != 7|(k-1)<<chunkShift {
				t.Errorf("%s: fields row after row %d has rowid %d", name, k-1, id)
			}
			if len(args) != 6 {
				t.Fatalf("%s: fields row of %d arguments", name, len(args))
			}
			empty := true
			for i, a := range args[1:] {
				fields[i].WriteString(argText(t, a))
				empty = empty && a == nil
			}
			if empty && k > 1 {
				t.Errorf("%s: fields row %d holds nothing", name, k-1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range []int{0, 1, 2, 3, 5} {
			if fields[i].String() != got[c].String() {
				t.Errorf("%s: fields column %d differs from the note's column %d", name, i, c)
			}
		}
		if want := int64(max(1, (len(r.title)+len(r.path)+len(r.headings)+len(r.props)+len(r.body)+len(r.meta)+ftsChunk-1)/ftsChunk)); k < want || k > want+4 {
			t.Errorf("%s: %d rows, want about %d", name, k, want)
		}
		for i, col := range []string{r.title, r.path, r.headings, r.props, r.body} {
			var b strings.Builder
			if !slices.Equal(ftsTokens(got[i].String()), ftsTokens(searchText(&b, col))) {
				t.Errorf("%s: column %d of the rows differs from the column's text", name, i)
			}
		}
		if strings.Join(strings.Fields(got[5].String()), " ") != strings.Join(strings.Fields(r.meta), " ") {
			t.Errorf("%s: the rows' meta differ from the note's", name)
		}
	}
}

func TestCutText(t *testing.T) {
	word := strings.Repeat("日本", 100)
	for _, tc := range []struct {
		s    string
		n    int
		must bool
		want string
	}{
		{"ab\ncd\nef", 7, false, "ab\ncd\n"},
		{"ab cd\nef gh", 10, false, "ab cd\n"},
		{"ab cd ef", 7, false, "ab cd "},
		{"abcdef", 4, false, ""},
		{"abcdef", 4, true, "abcd"},
		{word, 10, true, "日本日"},
		{word, 2, true, "日"},
	} {
		got, rest := cutText(tc.s, tc.n, tc.must)
		if got != tc.want || got+rest != tc.s || !utf8.ValidString(got) {
			t.Errorf("cutText(%q, %d, %v) = %q, %q; want %q", tc.s[:min(len(tc.s), 12)], tc.n, tc.must, got, rest, tc.want)
		}
	}
}

// TestLongNoteSearch indexes a note of several search rows: a word of
// its last row is found, on its line, and the note is one hit however many
// of its rows match.
func TestLongNoteSearch(t *testing.T) {
	ix, _ := openIndex(t)
	long := longNote("Notes/Long.md", 5*ftsChunk, "zebracorn")
	apply(t, ix, long.update(), fixture{path: "Notes/Short.md", kind: note.KindNote, content: "a zebracorn\nand filler\n"}.update())
	if n := searchRows(t, ix, long.path); n < 5 {
		t.Fatalf("a note of %d bytes has %d search rows, want one per %d bytes", len(long.content), n, ftsChunk)
	}
	wantLine := strings.Count(long.content, "\n")
	hits := search(t, ix, Query{Text: "zebracorn"})
	if got := hitKeys(hits); len(got) != 2 {
		t.Fatalf("zebracorn = %v, want the long and the short note", got)
	}
	for _, h := range hits {
		if h.Path == long.path && (h.Line != wantLine || h.Heading == "") {
			t.Errorf("hit in the long note at line %d under %q, want line %d", h.Line, h.Heading, wantLine)
		}
	}
	for _, q := range []Query{
		{Text: "filler"}, {Text: "filler note"}, {Text: "long note", Mode: ModePhrase},
		{Text: "filler", Glob: "Notes/*.md"}, {Text: "filler", Glob: "Notes/L*"},
	} {
		got := hitKeys(search(t, ix, q))
		n := 0
		for _, k := range got {
			if strings.HasPrefix(k, long.path+"#") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%+v = %v: want the long note once", q, got)
		}
	}
	lines := strings.Split(long.content, "\n")
	lastFiller := strings.Fields(lines[len(lines)-3])[2] // the line before "the end"
	for _, w := range []string{"w0", "w3000", lastFiller} {
		if got := hitKeys(search(t, ix, Query{Text: w})); len(got) != 1 {
			t.Errorf("%s = %v, want the long note", w, got)
		}
	}
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestLongNoteUnindexed changes, renames and removes a note of several
// search rows: no row of it is left behind.
func TestLongNoteUnindexed(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	long := longNote("Notes/Long.md", 5*ftsChunk, "zebracorn")
	short := fixture{path: "Notes/Short.md", kind: note.KindNote, content: "filler\n"}
	apply(t, ix, long.update(), short.update())
	// Shorter and without the word: the rows past the new end go too.
	edited := longNote(long.path, 2*ftsChunk, "")
	apply(t, ix, edited.update())
	if got := hitKeys(search(t, ix, Query{Text: "zebracorn"})); len(got) != 0 {
		t.Errorf("zebracorn after it was removed = %v, want nothing", got)
	}
	if n := searchRows(t, ix, long.path); n < 2 || n > 3 {
		t.Errorf("%d search rows after the note shrank to 2 rows' text", n)
	}
	if err := ix.Check(ctx); err != nil {
		t.Error(err)
	}
	// Renamed: a remove and a new note.
	apply(t, ix, Update{Path: long.path, Remove: true}, longNote("Notes/Moved.md", 5*ftsChunk, "").update())
	if got := hitKeys(search(t, ix, Query{Text: "w3000"})); len(got) != 1 || !strings.HasPrefix(got[0], "Notes/Moved.md#") {
		t.Errorf("w3000 after the rename = %v, want Notes/Moved.md only", got)
	}
	apply(t, ix, Update{Path: "Notes/Moved.md", Remove: true})
	if got := hitKeys(search(t, ix, Query{Text: "filler"})); len(got) != 1 || got[0] != "Notes/Short.md#" {
		t.Errorf("filler after the long notes went = %v, want Notes/Short.md only", got)
	}
	if n := searchRows(t, ix, ""); n != 1 {
		t.Errorf("%d search rows left, want the short note's one", n)
	}
	if err := ix.Check(ctx); err != nil {
		t.Error(err)
	}
}

// TestBulkLongNote builds the search table of long notes cold, by copy and
// by rebuild.
func TestBulkLongNote(t *testing.T) {
	ctx := context.Background()
	for _, spoil := range []bool{false, true} {
		ix, _ := openIndex(t)
		b := beginBulk(t, ix)
		long := longNote("Notes/Long.md", 5*ftsChunk, "zebracorn")
		apply(t, ix, long.update())
		if spoil {
			apply(t, ix, long.update())
		}
		if err := b.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		if got := hitKeys(search(t, ix, Query{Text: "zebracorn"})); len(got) != 1 {
			t.Errorf("spoiled %v: zebracorn = %v, want the long note", spoil, got)
		}
		if n := searchRows(t, ix, long.path); n < 5 {
			t.Errorf("spoiled %v: %d search rows, want one per %d bytes", spoil, n, ftsChunk)
		}
		if err := ix.Check(ctx); err != nil {
			t.Errorf("spoiled %v: %v", spoil, err)
		}
	}
}

// ftsTokens splits search text as FTS5's ascii tokenizer does: at ASCII
// bytes other than letters and digits, ASCII lower-cased.
func ftsTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r < utf8.RuneSelf && !asciiWord[r] })
}

// argText is the text of a search row's column: a string, or nil for none.
func argText(t *testing.T, a any) string {
	t.Helper()
	switch v := a.(type) {
	case nil:
		return ""
	case string:
		if v == "" {
			t.Errorf("an empty column is bound as \"\", want nil")
		}
		return v
	}
	t.Fatalf("a column of type %T", a)
	return ""
}
