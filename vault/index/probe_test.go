package index

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/margin-md/margin/vault/note"
)

// probeFoldSlow is appendProbeFold the plain way, rune by rune through the
// fold table below U+2000 and unicode.ToLower above.
func probeFoldSlow(text string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x2000 {
			return probeFolds[r]
		}
		return unicode.ToLower(r)
	}, text)
}

// TestProbesAgree: held, in place for ASCII sections and in a reused
// buffer for others, finds exactly what folding a copy of the section's
// parts joined finds.
func TestProbesAgree(t *testing.T) {
	texts := []string{
		"Slept 7h. BENCH 3x5 @ 185, felt heavy",
		"benc", "", "b", "@Bench`", "[[Bench Press]] #gym",
		"bEnCh press\nbench\tPRESS", "no match here at all",
		"Καφέ ΣΗΜΕΊΩΣΗ café NAÏVE", "노트를 정리 プラグイン 笔记 Ⅻ ＡＢＣ", "bad \xff\xfe bytes Bench",
		"Заметка: ПРЕСС", "ℌ𝔢𝔩𝔩𝔬 𐐀 Ⓑench",
	}
	p := termProbes([]term{{text: "bench"}, {text: "press"}, {text: "@bench"}, {text: "h"}, {text: "gym"},
		{text: "bench press"}, {text: "é"}, {text: "σημειωση"}, {text: "cafe"}, {text: "노트"}, {text: "プラ"},
		{text: "ⅻ"}, {text: "ａｂｃ"}, {text: "\ufffd"}, {text: "пресс"}, {text: "𐐨"}, {text: "ⓑench"}})
	for _, text := range texts {
		for cut := 0; cut <= len(text); cut += max(1, len(text)/3) {
			parts := []string{text[:cut], text[cut:]}
			folded := probeFoldSlow(parts[0] + "\n" + parts[1])
			got := p.held(parts...)
			for i, probe := range p.texts {
				if want := strings.Contains(folded, probe); got[i] != want {
					t.Errorf("held(%q)[%q] = %v, folding a copy says %v", parts, probe, got[i], want)
				}
			}
		}
	}
}

// TestCaseless: the blocks fold copies without asking the case tables
// hold no rune with a lower case of its own.
func TestCaseless(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if caseless(r) && unicode.ToLower(r) != r {
			t.Fatalf("caseless(%U), but it lower-cases to %U", r, unicode.ToLower(r))
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
