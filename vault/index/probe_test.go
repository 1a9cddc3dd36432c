package index

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

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
		"Заметка: ПРЕСС", "ℌ𝔢𝔩𝔩𝔬 𐐀 Ⓑench", "\u212Aelvin — “quoted” 温度", "cafe\u0301 ДЕНЬ", "노\u0301트 プ\u1ab0ラ",
	}
	p := termProbes([]term{{text: "bench"}, {text: "press"}, {text: "@bench"}, {text: "h"}, {text: "gym"},
		{text: "bench press"}, {text: "é"}, {text: "σημειωση"}, {text: "cafe"}, {text: "노트"}, {text: "プラ"},
		{text: "ⅻ"}, {text: "ａｂｃ"}, {text: "\ufffd"}, {text: "пресс"}, {text: "𐐨"}, {text: "ⓑench"},
		{text: "naive"}, {text: "kelvin"}, {text: "quoted"}, {text: "день"}})
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

// TestRawFormsComplete: every rune that folds to a probe's first rune is
// among the forms held looks for before folding a section, so the look
// never rules out a section that holds the probe.
func TestRawFormsComplete(t *testing.T) {
	for _, c := range []rune{'з', 'σ', 'ω', 'ß', 'ǆ', 'ı', 'ſ', 'ﬀ', 'ⓑ', 'ａ', '𐐨', '노', 'プ', 'เ', 'ឯ', 'ক', 'م', 'ה', '笔', '📅', 'ⅻ'} {
		forms := rawForms(c)
		if forms == nil {
			continue // held folds every section for it
		}
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if utf8.ValidRune(r) && probeFoldRune(r) == c && !slices.Contains(forms, string(r)) {
				t.Errorf("%U folds to %c, but the forms of %c are %q", r, c, c, forms)
			}
		}
	}
	if rawForms('σ') == nil || rawForms('노') == nil || rawForms('з') == nil {
		t.Error("Greek, Hangul and Cyrillic first runes should have forms to look for")
	}
}

// TestMayDropFindsEveryDroppedRune: a text with a rune the probes' fold
// drops is folded before a literal probe is ruled out.
func TestMayDropFindsEveryDroppedRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if utf8.ValidRune(r) && probeFoldRune(r) < 0 && !mayDrop("x"+string(r)+"y") {
			t.Errorf("mayDrop misses %U, which the fold drops", r)
		}
	}
}

// TestIsASCII: a byte of 0x80 or more anywhere, in a word of eight or in
// the bytes after the last, makes a string other than ASCII.
func TestIsASCII(t *testing.T) {
	for n := range 20 {
		s := strings.Repeat("a", n)
		if !isASCII(s) {
			t.Errorf("isASCII(%q) = false", s)
		}
		for i := range n {
			for _, c := range []byte{0x80, 0xff} {
				b := []byte(s)
				b[i] = c
				if isASCII(string(b)) {
					t.Errorf("isASCII(%q) = true", b)
				}
			}
		}
	}
}

// TestComposes: fold asks for NFC after exactly the runes it did when it
// asked unicode.IsMark, so that it folds text as before and an index
// matches the queries of a newer margin.
func TestComposes(t *testing.T) {
	for r := rune(0x0300); r <= unicode.MaxRune; r++ {
		want := unicode.IsMark(r) || 0x1100 <= r && r < 0x1200 || 0x3130 <= r && r < 0x3190
		if got := composes(r); got != want {
			t.Errorf("composes(%U) = %v, want %v", r, got, want)
		}
	}
}
