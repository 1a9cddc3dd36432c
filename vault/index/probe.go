package index

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// probes tell quickly whether a section likely holds each term, folded,
// in the text folded rune by rune (see appendProbeFold), which is much
// cheaper than splitting it into pieces. They only choose among a note's
// sections; snippet marks the exact matches. A text is folded only when
// looking at it as written cannot tell (see held).
type probes struct {
	texts []string // distinct folded terms
	// literal tells the texts whose every rune folds from itself alone
	// (Hangul, kana, Han, Thai…): in a section they are found as
	// written, or with a dropped accent between their runes.
	literal []bool
	buf     []byte // the last text folded, reused
}

func termProbes(terms []term) *probes {
	p := &probes{}
	for _, t := range terms {
		if slices.Contains(p.texts, t.text) {
			continue
		}
		literal := !isASCII(t.text)
		for _, r := range t.text {
			literal = literal && slices.Equal(rawForms(r), []string{string(r)})
		}
		p.texts, p.literal = append(p.texts, t.text), append(p.literal, literal)
	}
	return p
}

// rawForms returns the encodings of the runes appendProbeFold folds to c;
// nil when there are more than a few (an ASCII letter has its accented
// forms) or c stands for invalid bytes as well. A word is literal when
// each of its runes is its only form. (Looking for the forms of a word's
// first rune before folding a section did not pay: a Greek or Cyrillic
// letter is in nearly every section of its language, and all of them
// start with one of two bytes, which slows strings.Contains.)
func rawForms(c rune) []string {
	if c < utf8.RuneSelf || c == utf8.RuneError {
		return nil
	}
	forms := slices.Clone(foldedFrom()[c])
	// Above the table, a rune folds to its lower case, which is in its
	// case orbit.
	r := c
	for {
		if r >= probeTableEnd && probeFoldRune(r) == c {
			forms = append(forms, r)
		}
		if r = unicode.SimpleFold(r); r == c {
			break
		}
	}
	const most = 6
	if len(forms) > most {
		return nil
	}
	out := make([]string, len(forms))
	for i, f := range forms {
		out[i] = string(f)
	}
	return out
}

// foldedFrom maps each rune of probeFolds' range to the runes of that
// range that fold to it.
var foldedFrom = sync.OnceValue(func() map[rune][]rune {
	m := map[rune][]rune{}
	for r, f := range probeFolds {
		if f >= 0 {
			m[f] = append(m[f], rune(r))
		}
	}
	return m
})

// held reports, for each probe, whether one of texts holds it.
func (p *probes) held(texts ...string) []bool {
	out := make([]bool, len(p.texts))
	for _, text := range texts {
		if isASCII(text) {
			// Most sections are ASCII, where folding is lower case:
			// compare in place rather than fold a copy of every
			// section of every hit.
			for i, t := range p.texts {
				out[i] = out[i] || containsLowerASCII(text, t)
			}
			continue
		}
		folded := false
		// Whether some rune of text folds into ASCII or is dropped, and
		// whether one may be dropped; -1 until looked at.
		intoASCII, drops := -1, -1
		for i, t := range p.texts {
			if out[i] {
				continue
			}
			switch {
			case isASCII(t):
				// An ASCII word in the text as written is in it folded;
				// else only runes that fold into ASCII (é, a dropped
				// accent) can make it.
				if out[i] = containsLowerASCII(text, t); out[i] || !once(&intoASCII, text, foldsIntoASCII) {
					continue
				}
			case p.literal[i]:
				if out[i] = strings.Contains(text, t); out[i] || !once(&drops, text, mayDrop) {
					continue
				}
			}
			if !folded {
				p.buf, folded = appendProbeFold(p.buf[:0], text), true
			}
			out[i] = bytes.Contains(p.buf, []byte(t))
		}
	}
	return out
}

// once returns f(text), computed the first time and kept in *v.
func once(v *int, text string, f func(string) bool) bool {
	if *v < 0 {
		*v = 0
		if f(text) {
			*v = 1
		}
	}
	return *v == 1
}

// mayDrop reports whether text may hold a rune appendProbeFold drops:
// the accents of U+0300–U+036F, U+1AB0–U+1AFF and U+1DC0–U+1DFF, looked
// for by their leading bytes (which a few other runes share).
func mayDrop(text string) bool {
	return strings.IndexByte(text, 0xCC) >= 0 || strings.IndexByte(text, 0xCD) >= 0 ||
		strings.Contains(text, "\xe1\xaa") || strings.Contains(text, "\xe1\xab") || strings.Contains(text, "\xe1\xb7")
}

// foldsIntoASCII reports whether appendProbeFold turns a rune of text
// that is not ASCII into ASCII, or drops it.
func foldsIntoASCII(text string) bool {
	for i := 0; i < len(text); {
		if text[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if probeFoldRune(r) < utf8.RuneSelf {
			return true
		}
		i += n
	}
	return false
}

// exact reports whether held finds in text every term a split of it
// into pieces would match: the probes fold rune by rune, which is what
// fold does to composed text, not to decomposed Hangul or kana.
func (p *probes) exact(text string) bool {
	return isASCII(text) || norm.NFC.IsNormalString(text)
}

// containsLowerASCII reports whether text, its ASCII lower-cased, holds
// the folded probe t as written; a probe with other runes cannot be in
// ASCII text.
func containsLowerASCII(text, t string) bool {
	if t == "" {
		return true
	}
	first := t[0]
	if first >= utf8.RuneSelf {
		return false
	}
	for i := 0; i+len(t) <= len(text); i++ {
		if c := text[i]; c != first && c+('a'-'A') != first {
			continue
		}
		j := 0
		for ; j < len(t); j++ {
			c := text[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != t[j] {
				break
			}
		}
		if j == len(t) {
			return true
		}
	}
	return false
}

// probeTableEnd is where probeFolds ends.
const probeTableEnd = 0x2000

// probeFolds maps each rune below U+2000 to foldRune of it.
var probeFolds = func() (t [probeTableEnd]rune) {
	for r := range t {
		t[r] = foldRune(rune(r))
	}
	return t
}()

// appendProbeFold appends text folded rune by rune to dst, which is what
// fold does to the words of most text (it does not compose or decompose
// Hangul and kana, which fold keeps composed): cheap enough to run over
// every section of a hit.
func appendProbeFold(dst []byte, text string) []byte {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if r >= probeTableEnd && caseless(r) {
			dst = append(dst, text[i:i+n]...)
		} else if f := probeFoldRune(r); f >= 0 {
			dst = utf8.AppendRune(dst, f)
		}
		i += n
	}
	return dst
}

// probeFoldRune is what appendProbeFold makes of r: -1 for a mark it drops.
func probeFoldRune(r rune) rune {
	switch {
	case r < probeTableEnd:
		return probeFolds[r]
	case caseless(r):
		return r
	}
	return unicode.ToLower(r)
}

// caseless reports runes that lower-case to themselves in blocks where
// every rune does: CJK, kana and Hangul syllables, most of the text past
// U+2000, spared unicode.ToLower's search of the case tables.
func caseless(r rune) bool {
	return 0x2E80 <= r && r < 0xA640 || 0xAC00 <= r && r < 0xD7A4
}
