package index

import (
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// TestProbesAgreeOnASCII: the in-place comparison for ASCII sections finds
// exactly what folding a copy finds.
func TestProbesAgreeOnASCII(t *testing.T) {
	texts := []string{
		"Slept 7h. BENCH 3x5 @ 185, felt heavy",
		"benc", "", "b", "@Bench`", "[[Bench Press]] #gym",
		"bEnCh press\nbench\tPRESS", "no match here at all",
	}
	p := probes{texts: []string{"bench", "press", "@bench", "h", "gym", "bench press", "é"}}
	for _, text := range texts {
		folded := probeFold(text)
		got := p.held(text)
		for i, probe := range p.texts {
			if want := strings.Contains(folded, probe); got[i] != want {
				t.Errorf("held(%q)[%q] = %v, folding a copy says %v", text, probe, got[i], want)
			}
		}
	}
}

// TestASCIIWordsBesideOtherRunes: ASCII words reach FTS5 as written and
// are found in any case, and a word that mixes ASCII with other runes is
// still folded whole.
func TestASCIIWordsBesideOtherRunes(t *testing.T) {
	ix, _ := openIndex(t)
	apply(t, ix, fixture{path: "Notes/mixed.md", kind: note.KindNote,
		content: "# Log\n\nBENCH Press, Café—NOTES 2026-11-24 📅 x_y naïve WORD日本語\n"}.update())
	for _, q := range []string{"bench", "PRESS", "cafe", "café", "notes", "2026", "📅", "x", "y", "naive", "word日本", "日本"} {
		if got := searchPaths(t, ix, Query{Text: q}); !slices.Equal(got, []string{"Notes/mixed.md"}) {
			t.Errorf("Search(%q) = %v, want the note", q, got)
		}
	}
	for _, q := range []string{"caf", "wor", "benchpress"} {
		if got := searchPaths(t, ix, Query{Text: q}); len(got) != 0 {
			t.Errorf("Search(%q) = %v, want nothing", q, got)
		}
	}
}
