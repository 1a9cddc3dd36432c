package index

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The search table does not tokenize text itself: margin hands it words
// already split and folded here, separated by spaces, and FTS5's ascii
// tokenizer only splits them again. So the index and the query are folded
// by the same Go code, whatever the script.
//
// Text is split into pieces of letters, digits and marks (any category, so
// that Indic vowel signs and Thai vowels stay inside their word). A piece
// of a spaced script (Latin, Cyrillic, Greek, Arabic, Indic…) is a word. A
// run of a script written without spaces (Han, kana, Hangul, Thai, Khmer…)
// is indexed as its overlapping character pairs, then its last character
// alone: "한국어" gives "한국 국어 어". A query run of two or more
// characters becomes the phrase of its pairs and so matches anywhere inside
// a run, as a substring search would; a single character is a prefix query
// on the pairs. Hangul is spaced, but particles stick to Korean words
// (노트를), so it is searched as a substring too. A symbol such as 📅 is a
// word of its own.

// folded is one piece of text as the index compares it.
type folded struct {
	text       string // folded
	start, end int    // byte range in the text it was cut from
	unspaced   bool   // a run of a script written without spaces
}

// pieces splits s into folded pieces and calls f for each.
func pieces(s string, f func(folded)) {
	piecesWhile(s, func(p folded) bool { f(p); return true })
}

// piecesWhile is pieces until f returns false.
func piecesWhile(s string, f func(folded) bool) {
	spansWhile(s, func(start, end int, kind int) bool {
		if kind == spanSymbol {
			r, _ := utf8.DecodeRuneInString(s[start:end])
			return f(folded{text: string(r), start: start, end: end})
		}
		return f(folded{text: fold(s[start:end]), start: start, end: end, unspaced: kind == spanUnspaced})
	})
}

// The kinds of piece spansWhile finds.
const (
	spanSpaced   = iota // a word of a spaced script
	spanUnspaced        // a run of an unspaced script
	spanSymbol          // one symbol, its own word
)

// spansWhile calls f with the byte range and kind of each piece of s, not
// folded, until f returns false: pieces without the cost of folding, for
// a caller that folds only the pieces it must.
func spansWhile(s string, f func(start, end int, kind int) bool) {
	classes := bmpClasses()
	start, unspaced, more := -1, false, true
	flush := func(end int) {
		if start >= 0 && more {
			kind := spanSpaced
			if unspaced {
				kind = spanUnspaced
			}
			more = f(start, end, kind)
		}
		start = -1
	}
	for i, r := range s {
		if !more {
			return
		}
		if r < utf8.RuneSelf {
			if asciiWord[r] {
				if start >= 0 && unspaced {
					flush(i)
				}
				if start < 0 {
					start, unspaced = i, false
				}
			} else {
				flush(i)
			}
			continue
		}
		var class int
		if r < 0x10000 {
			class = int(classes[r])
		} else {
			class = runeClass(r)
		}
		switch class {
		case classOther:
			flush(i)
		case classSymbol:
			flush(i)
			if more {
				// The width in s: an invalid byte decodes as U+FFFD,
				// a symbol of three bytes.
				_, n := utf8.DecodeRuneInString(s[i:])
				more = f(i, i+n, spanSymbol)
			}
		case classMark:
			// A mark belongs to the piece before it, whichever script.
			if start < 0 {
				start, unspaced = i, false
			}
		default:
			u := class == classUnspaced
			if start >= 0 && u != unspaced {
				flush(i)
			}
			if start < 0 {
				start, unspaced = i, u
			}
		}
	}
	flush(len(s))
}

var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for r := range t {
		t[r] = 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return t
}()

const (
	classOther = iota
	classSpaced
	classUnspaced
	classMark
	classSymbol
)

// unspacedScripts are written without spaces between words (or, Hangul,
// with particles joined to them), so a word is found as a substring.
var unspacedScripts = []*unicode.RangeTable{unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar, unicode.Tibetan, unicode.Yi, unicode.Bopomofo}

// bmpClasses is runeClass of each rune of the Basic Multilingual Plane,
// where nearly all text is: runeClass asks several Unicode tables per rune.
// Built on first use (a few ms), not when the process starts.
var bmpClasses = sync.OnceValue(func() *[0x10000]uint8 {
	var t [0x10000]uint8
	for r := range t {
		t[r] = uint8(runeClass(rune(r)))
	}
	return &t
})

func runeClass(r rune) int {
	switch {
	case unicode.IsMark(r):
		if r == 0xFE0E || r == 0xFE0F { // emoji presentation selectors
			return classOther
		}
		return classMark
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Co, r):
		if r < 0x0E00 { // Latin to the Indic scripts, before Thai: spaced
			return classSpaced
		}
		if r == 0x30FC || unicode.IsOneOf(unspacedScripts, r) { // ー, the kana length mark, is Common
			return classUnspaced
		}
		return classSpaced
	case unicode.Is(unicode.So, r):
		return classSymbol
	}
	return classOther
}

// fold lower-cases a piece and strips the accents of Latin, Greek and
// Cyrillic letters ("Café" and "cafe" compare equal, "ή" and "η"). Other
// marks are kept: dropping every combining mark would turn kana with a
// voicing mark (プ) into another syllable and strip Indic vowel signs. The
// result is composed (NFC), so Hangul stays in syllables.
func fold(tok string) string {
	if isASCII(tok) {
		return strings.ToLower(tok)
	}
	// Rune by rune from a table below U+2000; only a mark or a Hangul
	// jamo can compose with what precedes it, so only then is NFC asked.
	compose := false
	s := strings.Map(func(r rune) rune {
		if !compose && r >= 0x0300 {
			compose = composes(r)
		}
		if r < 0x2000 {
			return probeFolds[r]
		}
		if caseless(r) {
			return r
		}
		return unicode.ToLower(r)
	}, tok)
	if compose && !norm.NFC.IsNormalString(s) {
		s = norm.NFC.String(s)
	}
	return s
}

// composes reports whether r may compose with, or be reordered around,
// what precedes it: a mark or a Hangul jamo. Below U+10000 it reads the
// table of rune classes, where unicode.IsMark searches its tables rune by
// rune (the search text of the help vault's Chinese and Korean notes
// folded 7% faster); the table counts the emoji presentation selectors as
// other, not as marks.
func composes(r rune) bool {
	if r < 0x10000 {
		return bmpClasses()[r] == classMark || r == 0xFE0E || r == 0xFE0F ||
			0x1100 <= r && r < 0x1200 || 0x3130 <= r && r < 0x3190
	}
	return unicode.IsMark(r)
}

// foldRune is what fold makes of r alone, worked out the long way: lower
// case, decomposed, accents dropped, composed again; -1 when nothing is
// left.
func foldRune(r rune) rune {
	if isAccent(r) {
		return -1
	}
	var b strings.Builder
	for _, d := range norm.NFD.String(string(r)) {
		if !isAccent(d) {
			if d == 'ς' { // final sigma, so σημείωσης matches ΣΗΜΕΙΩΣΗΣ
				d = 'σ'
			}
			b.WriteRune(unicode.ToLower(d))
		}
	}
	f := []rune(norm.NFC.String(b.String()))
	if len(f) != 1 {
		return unicode.ToLower(r)
	}
	return f[0]
}

// isAccent reports the combining marks that fold removes: the blocks of
// diacritics used by Latin, Greek and Cyrillic.
func isAccent(r rune) bool {
	return 0x0300 <= r && r <= 0x036F || 0x1AB0 <= r && r <= 0x1AFF || 0x1DC0 <= r && r <= 0x1DFF ||
		0x20D0 <= r && r <= 0x20FF || 0xFE20 <= r && r <= 0xFE2F
}

// searchText is s as the search table indexes it: its pieces, space
// separated, unspaced runs as their pairs and last character. Words of
// ASCII letters and digits are written as they stand: FTS5's ascii
// tokenizer splits ASCII text at the same bytes pieces does and
// lower-cases it, so only the words around other runes need folding here,
// and ASCII text comes back as it is, uncopied. b is scratch space.
func searchText(b *strings.Builder, s string) string {
	if isASCII(s) {
		return s
	}
	b.Reset()
	b.Grow(len(s) + len(s)/4)
	for len(s) > 0 {
		k := 0
		for k < len(s) && s[k] < utf8.RuneSelf {
			k++
		}
		if k == len(s) {
			b.WriteString(s)
			b.WriteByte(' ')
			break
		}
		// The word holding s[k] runs between ASCII separators; pieces
		// flushes at each of them, so it folds alone to what it would
		// in its text.
		start, end := k, k
		for start > 0 && inWord(s[start-1]) {
			start--
		}
		for end < len(s) && inWord(s[end]) {
			end++
		}
		if start > 0 {
			b.WriteString(s[:start])
			b.WriteByte(' ')
		}
		foldedText(b, s[start:end])
		s = s[end:]
	}
	return b.String()
}

// inWord: the byte is not an ASCII separator.
func inWord(c byte) bool { return c >= utf8.RuneSelf || asciiWord[c] }

func foldedText(b *strings.Builder, s string) {
	pieces(s, func(p folded) {
		if !p.unspaced {
			b.WriteString(p.text)
			b.WriteByte(' ')
			return
		}
		prev := -1
		for i := range p.text {
			if prev >= 0 {
				_, n := utf8.DecodeRuneInString(p.text[i:])
				b.WriteString(p.text[prev : i+n])
				b.WriteByte(' ')
			}
			prev = i
		}
		b.WriteString(p.text[prev:])
		b.WriteByte(' ')
	})
}

func isASCII(s string) bool {
	// Eight bytes at a time: a cold index asks this of all the text it
	// writes, and byte by byte it was 1% of the build.
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// QuestionTerms splits free text, such as a question, into the terms of a
// search for any of them, as written: the words of spaced scripts, for the
// caller to sift, and the overlapping character pairs of each run of an
// unspaced script, whose words have no spaces between them to split at:
// "指针和数组有什么区别" holds 指针 and 数组 among its pairs. A run of one
// character is left out: alone between two stops it is a particle.
func QuestionTerms(text string) (words, pairs []string) {
	spansWhile(text, func(start, end int, kind int) bool {
		switch kind {
		case spanUnspaced:
			rs := []rune(text[start:end])
			for j := 0; j+1 < len(rs); j++ {
				pairs = append(pairs, string(rs[j:j+2]))
			}
		default:
			words = append(words, text[start:end])
		}
		return true
	})
	return words, pairs
}

// queryTokens turns the pieces of a query word (or phrase) into the tokens
// of one FTS5 phrase, and reports whether its last token must match as a
// prefix. An unspaced run becomes its pairs; inside a phrase, a run that
// another piece follows also takes its last character, as the index has
// it between the run and the next piece.
func queryTokens(ps []folded, prefix bool) ([]string, bool) {
	var toks []string
	for i, p := range ps {
		last := i == len(ps)-1
		if !p.unspaced {
			toks = append(toks, p.text)
			continue
		}
		rs := []rune(p.text)
		if len(rs) == 1 {
			toks = append(toks, p.text)
			if last {
				prefix = true // the character starts a pair, or ends a run
			}
			continue
		}
		for j := 0; j+1 < len(rs); j++ {
			toks = append(toks, string(rs[j:j+2]))
		}
		if !last {
			toks = append(toks, string(rs[len(rs)-1]))
		}
	}
	return toks, prefix
}
