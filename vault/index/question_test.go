package index

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

func TestAsQuestion(t *testing.T) {
	tests := []struct {
		text   string
		words  []string // nil: a keyword query
		phrase string
	}{
		// Keyword queries stay all-words searches.
		{"bench press", nil, ""},
		{"deploy latency budget", nil, ""},
		{"die hard", nil, ""},    // two words: never a question without '?'
		{"the project", nil, ""}, // the same
		{"how to be", nil, ""},   // nothing but stop words
		{"日本語", nil, ""},         // one run, no particle
		{"status:done rating:7", nil, ""},
		// Questions.
		{"how to create internal links between notes", []string{"create", "internal", "links", "notes"}, "create internal links between notes"},
		{"bench press?", []string{"bench", "press"}, "bench press"},
		{"zettelkasten?", []string{"zettelkasten"}, ""},
		{"create internal links notes", []string{"create", "internal", "links", "notes"}, "create internal links notes"}, // four words
		{"what's the \"daily review\" for?", []string{`"daily review"`}, ""},
		{"what is status:done about", []string{"status:done"}, ""},
		{"cómo sincronizo mis notas con el móvil", []string{"sincronizo", "notas", "móvil"}, "sincronizo mis notas con el móvil"},
		{"wie synchronisiere ich die Notizen", []string{"synchronisiere", "Notizen"}, "synchronisiere ich die Notizen"},
		{"wie kann ich mich auf die Prüfung vorbereiten?", []string{"Prüfung", "vorbereiten"}, "Prüfung vorbereiten"}, // object pronouns are stop words too
		{"comment je me prépare pour l'examen", []string{"prépare", "examen"}, "prépare pour l'examen"},
		{"comment exporter l'index en PDF", []string{"exporter", "index", "PDF"}, "exporter l'index en PDF"},
		{"como faço backup das notas", []string{"backup", "notas"}, "backup das notas"},
		{"come posso cercare nelle note", []string{"cercare", "nelle", "note"}, "cercare nelle note"},
		{"как найти заметку по тегу", []string{"найти", "заметку", "тегу"}, "найти заметку по тегу"},
		{"会議のメモはどこ", []string{"会議", "メモ"}, "会議のメモ"},
		{"怎么同步我的笔记", []string{"同步", "笔记"}, "同步我的笔记"},
		{"同步冲突怎么办", []string{"同步", "步冲", "冲突", "办"}, "同步冲突怎么办"},
		{"サーバーの移行はいつ", []string{"サーバー", "移行"}, "サーバーの移行"},
		{"会議にはメモを", []string{"会議", "メモ"}, "会議にはメモ"},    // には, the longest particle
		{"会議のたべもの", []string{"会議", "たべもの"}, "会議のたべもの"}, // の inside a word of hiragana stays
		{"メモをください", []string{"メモ"}, ""},
		{"플러그인을 어떻게 설치하나요", []string{"플러그인", "설치"}, "플러그인을 어떻게 설치"},
	}
	for _, tc := range tests {
		q := asQuestion(tc.text)
		if tc.words == nil {
			if q != nil {
				t.Errorf("asQuestion(%q) = %+v, want a keyword query", tc.text, *q)
			}
			continue
		}
		if q == nil {
			t.Errorf("asQuestion(%q) = keyword query, want the question %q", tc.text, tc.words)
			continue
		}
		if !slices.Equal(q.words, tc.words) || q.phrase != tc.phrase {
			t.Errorf("asQuestion(%q) = %q, phrase %q; want %q, phrase %q", tc.text, q.words, q.phrase, tc.words, tc.phrase)
		}
	}
}

// TestQuestionRanking: the default mode ranks a question's notes by the
// phrase, then by how many of its words they hold, then by bm25, where
// all finds nothing and any puts a title holding one word first; with a
// long note in the index too (several search rows per note). A keyword
// query still needs every word.
func TestQuestionRanking(t *testing.T) {
	fixtures := []fixture{
		{path: "phrase.md", kind: note.KindNote, content: "# Merging\n\nTo resolve a sync conflict, keep both files.\n"},
		{path: "three.md", kind: note.KindNote, content: "# Phone\n\nA conflict after sync: resolve it by hand.\n"},
		{path: "two.md", kind: note.KindNote, content: "# Desk\n\nThe sync left a conflict behind.\n"},
		{path: "Sync.md", kind: note.KindNote, content: "# Sync\n\nSync sync sync, every hour, and back.\n"},
		{path: "other.md", kind: note.KindNote, content: "# Other\n\nNothing to see here.\n"},
	}
	const question = "how do I resolve a sync conflict?"
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			ix, _ := openIndex(t)
			var us []Update
			for _, f := range fixtures {
				us = append(us, f.update())
			}
			if long {
				us = append(us, longNote("long.md", 2*ftsChunk, "sync").update())
			}
			apply(t, ix, us...)
			ctx := context.Background()
			find := func(q Query) Result {
				t.Helper()
				r, err := ix.Find(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			if r := find(Query{Text: question, Mode: ModeAll}); r.Total != 0 {
				t.Fatalf("all finds %v, want nothing for this test to mean something", hitKeys(r.Hits))
			}
			if r := find(Query{Text: question, Mode: ModeAny}); len(r.Hits) == 0 || r.Hits[0].Path != "Sync.md" {
				t.Fatalf("any finds %v first, want Sync.md (its title) for this test to mean something", hitKeys(r.Hits))
			}
			want := []string{"phrase.md", "three.md", "two.md", "Sync.md"}
			if long {
				want = append(want, "long.md")
			}
			for _, mode := range []Mode{"", ModeAuto, "AUTO"} {
				r := find(Query{Text: question, Mode: mode})
				var got []string
				for _, h := range r.Hits {
					got = append(got, h.Path)
				}
				if !slices.Equal(got, want) || r.Total != len(want) {
					t.Errorf("mode %q: %v (total %d), want %v", mode, got, r.Total, want)
				}
			}
			// The hit is the section with the phrase, its words marked.
			r := find(Query{Text: question, Limit: 1})
			if len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Snippet, "**sync** **conflict**") || !r.Truncated {
				t.Errorf("first hit %+v, truncated %v; want the phrase marked and the list cut", r.Hits, r.Truncated)
			}
			// A glob checked in Go keeps the order.
			r = find(Query{Text: question, Glob: "[pt]*.md"})
			if got := hitKeys(r.Hits); len(got) != 3 || !strings.HasPrefix(got[0], "phrase.md") || !strings.HasPrefix(got[1], "three.md") || !strings.HasPrefix(got[2], "two.md") {
				t.Errorf("with a glob: %v, want phrase, three, two", got)
			}
			// A quoted phrase must be there, as in all mode; the other
			// words rank the notes that hold it.
			for _, c := range []struct {
				q    string
				want []string // the first hits
				n    int      // of how many
			}{
				{`why is the "sync conflict" back?`, []string{"phrase.md"}, 1},
				{`why is the "sync conflict" status:open?`, nil, 0}, // no other word to rank by: the phrase is one
				{`why is "sync" back?`, []string{"Sync.md"}, len(want)},
			} {
				r := find(Query{Text: c.q})
				var got []string
				for _, h := range r.Hits[:min(len(c.want), len(r.Hits))] {
					got = append(got, h.Path)
				}
				if !slices.Equal(got, c.want) || r.Total != c.n {
					t.Errorf("%s: %v first of %d, want %v of %d", c.q, got, r.Total, c.want, c.n)
				}
			}
			// Keywords need every word, in the default mode too.
			for _, mode := range []Mode{"", ModeAll} {
				if r := find(Query{Text: "resolve conflict", Mode: mode}); r.Total != 2 {
					t.Errorf("mode %q: keywords found %v, want the 2 notes holding both", mode, hitKeys(r.Hits))
				}
			}
		})
	}
}

// TestQuestionNamesANote: a question whose words, its stop words aside,
// name a note puts that note first, above notes that repeat them.
func TestQuestionNamesANote(t *testing.T) {
	ix, _ := openIndex(t)
	us := []Update{
		fixture{path: "Weekly review.md", kind: note.KindNote, content: "Friday: look back, plan ahead, and write it all down before the weekend starts.\n"}.update(),
		fixture{path: "Weekly review notes.md", kind: note.KindNote, content: "# Weekly review\n\nThe weekly review, my weekly review, a weekly review.\n"}.update(),
		fixture{path: "Archive/Old reading notes from the library/Zettelkasten.md", kind: note.KindNote, content: "Slips, one idea each, linked by number, and filed in the box on the desk.\n"}.update(),
		fixture{path: "Zettelkasten method.md", kind: note.KindNote, content: "# Zettelkasten\n\n## Zettelkasten\n\nZettelkasten, zettelkasten.\n"}.update(),
	}
	for i := range 8 { // so that the words are rare and bm25 weighs them
		us = append(us, fixture{path: fmt.Sprintf("n%d.md", i), kind: note.KindNote, content: "Something else entirely.\n"}.update())
	}
	apply(t, ix, us...)
	for _, c := range []struct{ question, named string }{
		{"how do I do the weekly review", "Weekly review.md"},
		{"what is a zettelkasten?", "Archive/Old reading notes from the library/Zettelkasten.md"}, // one word
	} {
		for _, mode := range []Mode{ModeAll, ModeAuto} {
			r, err := ix.Find(context.Background(), Query{Text: c.question, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case mode == ModeAll && r.Total != 0:
				t.Fatalf("%q: all finds %v, want nothing for this test to mean something", c.question, hitKeys(r.Hits))
			case mode == ModeAuto && (len(r.Hits) != 2 || r.Hits[0].Path != c.named):
				t.Errorf("%q: auto finds %v, want %s first", c.question, hitKeys(r.Hits), c.named)
			}
		}
	}
}

// FuzzAsQuestion: any text reads as a keyword query or as a question
// whose phrase is a part of the text, and searching it fails on nothing.
func FuzzAsQuestion(f *testing.F) {
	for _, s := range []string{"how to create internal links between notes", "会議のメモはどこ", "플러그인을 어떻게 설치하나요",
		`what's "a b"* c:d?`, "l'index de la note ?", "\xff\xfe bad ? utf8", "の の の", "?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q := asQuestion(text)
		if q == nil {
			return
		}
		if len(q.words) == 0 || !strings.Contains(strings.ToValidUTF8(text, ""), q.phrase) {
			t.Fatalf("asQuestion(%q) = %+v", text, *q)
		}
		if _, err := plan(Query{Text: text}); err != nil {
			t.Fatalf("plan(%q): %v", text, err)
		}
	})
}

// A word with symbols in a question is matched as written, as in a keyword
// query: its letters alone are no stop word (c, as in c'est), and the
// question's phrase, which holds it, ranks without being required.
func TestQuestionWithASymbolWord(t *testing.T) {
	ix, _ := openIndex(t)
	apply(t, ix,
		fixture{path: "cpp.md", kind: note.KindNote, content: "A linked list in C++ uses pointers.\n"}.update(),
		fixture{path: "c.md", kind: note.KindNote, content: "A linked list in C uses pointers.\n"}.update(),
		fixture{path: "templates.md", kind: note.KindNote, content: "C++ templates.\n"}.update(),
	)
	tests := []struct {
		query string
		want  []string
	}{
		{"c++ linked list", []string{"cpp.md#"}},
		{"linked list in c++?", []string{"cpp.md#", "templates.md#"}},
		{"how do I make a linked list in c++?", []string{"cpp.md#", "templates.md#"}},
	}
	for _, tc := range tests {
		r, err := ix.Find(context.Background(), Query{Text: tc.query})
		if err != nil {
			t.Fatal(err)
		}
		if got := hitKeys(r.Hits); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.query, got, tc.want)
		}
	}
}

// TestQuestionPageIsTheRankingsHead: a page of a question's hits is the
// head of its whole ranking, whatever the page's size cuts (the notes
// sure of a place, and which of the next tier fill the rest), with globs
// (one that SQL's GLOB matches more widely than the vault's), and with a
// long note; and says so in Total and Truncated.
func TestQuestionPageIsTheRankingsHead(t *testing.T) {
	words := []string{"resolve", "sync", "conflict"}
	us := []Update{
		fixture{path: "Resolve a sync conflict.md", kind: note.KindNote, content: "Named by the question, and nothing else.\n"}.update(),
		fixture{path: "p1.md", kind: note.KindNote, content: "To resolve a sync conflict, keep both.\n"}.update(),
		fixture{path: "p2.md", kind: note.KindNote, content: "# Phone\n\nOnce more: resolve a sync conflict by hand, then resolve the rest.\n"}.update(),
	}
	for i := range 60 {
		var b strings.Builder
		if i%7 == 0 {
			fmt.Fprintf(&b, "# %s\n\n", words[i%3])
		}
		for j, w := range words {
			if i>>j&1 == 1 {
				b.WriteString(strings.Repeat(w+" ", 1+(i*(j+2))%4))
			}
		}
		b.WriteString(strings.Repeat("filler ", i*7%40) + "\n")
		us = append(us, fixture{path: fmt.Sprintf("n%02d.md", i), kind: note.KindNote, content: b.String()}.update())
	}
	for i := range 4 { // found by SQL's GLOB "*.md", left out by the vault's
		us = append(us, fixture{path: fmt.Sprintf("Sub/s%d.md", i), kind: note.KindNote, content: "sync conflict: resolve\n"}.update())
	}
	const question = "how do I resolve a sync conflict?"
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long=%v", long), func(t *testing.T) {
			ix, _ := openIndex(t)
			if long {
				us = append(us, longNote("long.md", 2*ftsChunk, "sync conflict").update())
			}
			apply(t, ix, us...)
			for _, glob := range []string{"", "*.md", "n[0-3]*.md"} {
				all, err := ix.Find(context.Background(), Query{Text: question, Glob: glob, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				if all.Total < 30 || all.Total != len(all.Hits) {
					t.Fatalf("glob %q: %d hits of %d, want them all and enough for this test to mean something", glob, len(all.Hits), all.Total)
				}
				for limit := 1; limit <= all.Total+1; limit++ {
					r, err := ix.Find(context.Background(), Query{Text: question, Glob: glob, Limit: limit})
					if err != nil {
						t.Fatal(err)
					}
					want := all.Hits[:min(limit, len(all.Hits))]
					if !slices.Equal(hitKeys(r.Hits), hitKeys(want)) || r.Total != all.Total || r.Truncated != (limit < all.Total) {
						t.Errorf("glob %q, limit %d: %v (total %d, truncated %v), want %v (total %d)",
							glob, limit, hitKeys(r.Hits), r.Total, r.Truncated, hitKeys(want), all.Total)
					}
				}
			}
		})
	}
}

func TestNotesOfRows(t *testing.T) {
	row := func(note, chunk int64) string { return strconv.FormatInt(note|chunk<<chunkShift, 10) }
	for _, tc := range []struct {
		rows []string
		want []int64
	}{
		{nil, []int64{}},
		{[]string{"7"}, []int64{7}},
		{[]string{"1", "22", "333"}, []int64{1, 22, 333}},
		{[]string{"9223372036"}, []int64{9223372036}},
		// Long notes' further rows, after every first row: some of a note
		// whose first row is there, some not, one note's two rows past its
		// first.
		{[]string{"2", "5", "9", row(2, 1), row(3, 1), row(9, 1), row(12, 1), row(3, 2), row(1, 3)}, []int64{1, 2, 3, 5, 9, 12}},
		{[]string{row(4, 1), row(4, 2)}, []int64{4}},
	} {
		list := strings.Join(tc.rows, ",")
		if got := notesOfRows(list); !slices.Equal(got, tc.want) {
			t.Errorf("notesOfRows(%q) = %v, want %v", list, got, tc.want)
		}
	}
}

// TestQuestionMarksItsWordsNotItsStopWords: a snippet marks the words of
// a question, and not the stop words within its phrase.
func TestQuestionMarksItsWordsNotItsStopWords(t *testing.T) {
	ix, _ := openIndex(t)
	apply(t, ix, fixture{path: "Projects.md", kind: note.KindNote,
		content: "To set up a new project, copy a template and a checklist.\n"}.update())
	r, err := ix.Find(context.Background(), Query{Text: "how do I set up a new project?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) != 1 {
		t.Fatalf("%d hits, want Projects.md", len(r.Hits))
	}
	const want = "To **set** **up** a **new** **project**, copy a template and a checklist."
	if got := r.Hits[0].Snippet; got != want {
		t.Errorf("snippet %q, want %q", got, want)
	}
}
