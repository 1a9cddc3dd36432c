package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestWeigh: a word whose notes are half the rows has no weight; a word
// of one phrase counted in few rows has weight, one counted in more rows
// than the filters let through may not, and a word of several phrases is
// neither.
func TestWeigh(t *testing.T) {
	p := &queryPlan{cover: []string{`"heavy"`, `"week"`, `("bench" OR "benches")`}}
	words := [][]int64{{1, 2}, {1, 2, 3, 4, 5, 6}, {2, 3, 7}}
	hs := merge(nil, words)
	for _, tc := range []struct {
		name       string
		heavyRows  int // the rows holding "heavy", whatever the filters
		wantWeight []int64
	}{
		{"rare", 2, []int64{1, 2}},
		{"filtered, then in half the rows", 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := func(phrase string) (int, error) {
				switch phrase {
				case "":
					return 10, nil
				case `"heavy"`:
					return tc.heavyRows, nil
				}
				return 0, fmt.Errorf("rows of %s counted", phrase)
			}
			ws, err := p.weigh(hs, words, rows)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ws.none, []string{`"week"`}) {
				t.Errorf("no weight: %q, want week alone", ws.none)
			}
			var weighty []int64
			for i, h := range hs {
				if ws.held[i] {
					weighty = append(weighty, h.id)
				}
			}
			if !slices.Equal(weighty, tc.wantWeight) {
				t.Errorf("notes holding a word of weight: %v, want %v", weighty, tc.wantWeight)
			}
			if got, want := ws.holdEach(hs, []int64{1, 2}), tc.wantWeight != nil; got != want {
				t.Errorf("holdEach(1, 2) = %v, want %v", got, want)
			}
			if ws.holdEach(hs, []int64{1, 3}) {
				t.Error("holdEach(1, 3) = true, but 3 holds no word of weight")
			}
		})
	}
	short := [][]int64{{1}, {2}, {3}}
	never := func(string) (int, error) { return 0, fmt.Errorf("rows counted") }
	if ws, err := p.weigh(merge(nil, short), short, never); err != nil || ws.none != nil {
		t.Errorf("no list of half the notes: %+v, %v; want every word weighed, no row counted", ws, err)
	}
}

// TestQuestionRankedWithoutWordsOfNoWeight: a question with a word in most
// notes ranks its notes as bm25 over every word does, though the word of
// no weight is left out of the scoring.
func TestQuestionRankedWithoutWordsOfNoWeight(t *testing.T) {
	ix, _ := openIndex(t)
	var us []Update
	for i := range 40 {
		var b strings.Builder
		for j, w := range []string{"heavy", "bench", "press", "last"} {
			if (i+j)%(j+3) == 0 {
				b.WriteString(strings.Repeat(w+" ", 1+i%(j+2)))
			}
		}
		if i%5 != 0 {
			b.WriteString("this week ")
		}
		b.WriteString(strings.Repeat("filler ", i%9) + "\n")
		us = append(us, fixture{path: fmt.Sprintf("n%02d.md", i), kind: note.KindNote, content: b.String()}.update())
	}
	apply(t, ix, us...)
	ctx := context.Background()
	const question = "how heavy was the bench press last week?"
	cover := []string{`"heavy"`, `"bench"`, `"press"`, `"last"`, `"week"`}

	// Each note's words and its bm25 over every word, as FTS5 scores them.
	type ranked struct {
		path  string
		words int
		score float64
	}
	byPath := map[string]*ranked{}
	count := func(expr string) int {
		var n int
		if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?`, expr).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rows := count(`"filler" OR "week" OR "heavy" OR "bench" OR "press" OR "last"`); 2*count(`"week"`) < rows || 4*count(`"press"`) > rows {
		t.Fatalf("week in %d of %d rows, press in %d: not a question with a word of no weight and one of weight", count(`"week"`), rows, count(`"press"`))
	}
	rows, err := ix.db.QueryContext(ctx, `SELECT f.path, bm25(notes_fts, `+rankWeights+`) FROM notes_fts t JOIN files f ON f.id = t.rowid WHERE notes_fts MATCH ?`, strings.Join(cover, " OR "))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		r := &ranked{}
		if err := rows.Scan(&r.path, &r.score); err != nil {
			t.Fatal(err)
		}
		byPath[r.path] = r
	}
	rows.Close()
	for _, w := range cover {
		rows, err := ix.db.QueryContext(ctx, `SELECT f.path FROM notes_fts t JOIN files f ON f.id = t.rowid WHERE notes_fts MATCH ?`, w)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var p string
			rows.Scan(&p)
			byPath[p].words++
		}
		rows.Close()
	}
	var want []*ranked
	for _, r := range byPath {
		want = append(want, r)
	}
	slices.SortFunc(want, func(a, b *ranked) int {
		return cmp.Or(cmp.Compare(b.words, a.words), cmp.Compare(a.score, b.score), strings.Compare(a.path, b.path))
	})
	if want[5].words < 2 {
		t.Fatalf("the first six notes hold %d words at least: the page would rank notes of one word by their fields", want[5].words)
	}
	for _, limit := range []int{1, 3, 6} {
		r, err := ix.Find(ctx, Query{Text: question, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		var got, wantPaths []string
		for i, h := range r.Hits {
			got = append(got, h.Path)
			wantPaths = append(wantPaths, want[i].path)
		}
		if len(got) != limit || !slices.Equal(got, wantPaths) || r.Total != len(want) {
			t.Errorf("limit %d: %v of %d, want %v of %d", limit, got, r.Total, wantPaths, len(want))
		}
	}
}
