package index

import (
	"strings"
	"unicode/utf8"
)

// Snippets are cut in Go from the section text: the search table holds no
// text of its own (see searchText).

// term is a query piece as the index compares it.
type term struct {
	text     string // folded (see fold)
	unspaced bool   // found inside a run of an unspaced script
	prefix   bool   // the user wrote word*
	// phrase: the folded pieces of a phrase, space separated. It marks no
	// piece; it weighs the sections that hold the words together.
	phrase bool
	// lit, a word with symbols, is matched as written (see literal), not
	// piece by piece; text is its runes folded, for the probes.
	lit *literal
}

// match reports whether the folded piece p holds t.
func (t term) match(p folded) bool {
	if t.phrase || t.lit != nil {
		return false
	}
	if t.unspaced {
		return p.unspaced && strings.Contains(p.text, t.text)
	}
	return !p.unspaced && (p.text == t.text || t.prefix && strings.HasPrefix(p.text, t.text))
}

// span is a piece's byte range in the text it was cut from.
type span struct{ start, end int }

// matchesAny reports whether the piece, of spansWhile's kind, matches one
// of terms. Most pieces of most text are ASCII words, which fold to lower
// case: those are compared in place, not folded into a copy first.
func matchesAny(piece string, kind int, terms []term) bool {
	if kind == spanSpaced && isASCII(piece) {
		for _, t := range terms {
			if !t.phrase && !t.unspaced && t.lit == nil && hasLowerASCIIPrefix(piece, t.text) && (t.prefix || len(piece) == len(t.text)) {
				return true
			}
		}
		return false
	}
	p := folded{unspaced: kind == spanUnspaced}
	if kind == spanSymbol {
		r, _ := utf8.DecodeRuneInString(piece) // as piecesWhile has it
		p.text = string(r)
	} else {
		p.text = fold(piece)
	}
	for _, t := range terms {
		if t.match(p) {
			return true
		}
	}
	return false
}

// hasLowerASCIIPrefix reports whether ASCII s, lower-cased, starts with t.
func hasLowerASCIIPrefix(s, t string) bool {
	if len(s) < len(t) {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

// snippetTokens is how many words a snippet shows.
const snippetTokens = 16

// snippet returns the window of body with the most query terms, the terms
// between ** and **, and the byte offset in body of the first matched
// piece (-1 without any); without a match, the start of body.
func snippet(body string, terms []term) (string, int) {
	// The window is sought near the first match: a long section is split
	// up to a few windows past it, not to its end.
	var spans []span
	var matched []bool
	first, stop := -1, -1
	occ := literalSpans(body, terms)
	spansWhile(body, func(start, end int, kind int) bool {
		for len(occ) > 0 && occ[0].end <= start {
			occ = occ[1:]
		}
		inOcc := len(occ) > 0 && start < occ[0].end && end > occ[0].start
		if inOcc && occ[0].start <= start {
			// A piece of a literal's occurrence: the occurrence, symbols
			// and all, is one span, marked whole, and so is the rest of
			// a piece it ends in (node.j* in node.json).
			switch last := len(spans) - 1; {
			case last >= 0 && spans[last].start == occ[0].start:
				spans[last].end = max(spans[last].end, end)
				return true
			case last < 0 || spans[last].end <= occ[0].start:
				start, end = occ[0].start, max(occ[0].end, end)
			}
		}
		m := inOcc || matchesAny(body[start:end], kind, terms)
		if m && first < 0 {
			first, stop = start, len(spans)+3*snippetTokens
		}
		spans, matched = append(spans, span{start, end}), append(matched, m)
		return stop < 0 || len(spans) < stop
	})
	if first < 0 {
		return leadSnippet(body), -1
	}
	return window(body, spans, matched), first
}

// window cuts a snippet out of body, whose pieces are spans, matched
// where a term matches: snippetTokens pieces, the matched ones between **
// and **, from a few words before a match (to show what leads up to it),
// where the most matches are, the earliest among equals. The text's own
// bold is dropped, so that every ** is a match's.
func window(body string, spans []span, matched []bool) string {
	best, bestN := 0, 0
	for i := range spans {
		if !matched[i] {
			continue
		}
		start, n := max(i-3, 0), 0
		for j := start; j < min(start+snippetTokens, len(spans)); j++ {
			if matched[j] {
				n++
			}
		}
		if n > bestN {
			best, bestN = start, n
		}
	}
	end := min(best+snippetTokens, len(spans))
	var b strings.Builder
	if best > 0 {
		b.WriteString("…")
	}
	pos := spans[best].start
	for i := best; i < end; i++ {
		writeUnbold(&b, body[pos:spans[i].start])
		if matched[i] {
			b.WriteString("**" + body[spans[i].start:spans[i].end] + "**")
		} else {
			b.WriteString(body[spans[i].start:spans[i].end])
		}
		pos = spans[i].end
	}
	if end < len(spans) { // a stop past the first match leaves spans after any window
		b.WriteString("…")
	} else {
		writeUnbold(&b, body[pos:])
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// writeUnbold writes the text between two pieces without its runs of two
// or more '*' (markdown's bold), which the match marks would run into:
// "****Supabase** Vector Store**".
func writeUnbold(b *strings.Builder, gap string) {
	for {
		i := strings.Index(gap, "**")
		if i < 0 {
			b.WriteString(gap)
			return
		}
		b.WriteString(gap[:i])
		gap = strings.TrimLeft(gap[i:], "*")
	}
}

// leadSnippet is the first words of a section, for hits without matched
// words.
func leadSnippet(body string) string {
	const max = 160
	// Words up to the first past max runes, not the whole section's.
	var b strings.Builder
	n := 0
	for w := range strings.FieldsSeq(body) {
		if b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		if n += utf8.RuneCountInString(w); n > max {
			break
		}
	}
	s := b.String()
	if n <= max {
		return s
	}
	runes := 0
	for i := range s { // cut at rune max
		if runes == max {
			s = s[:i]
			break
		}
		runes++
	}
	if i := strings.LastIndexByte(s, ' '); i > max/2 {
		return s[:i] + "…"
	}
	return s + "…"
}

// foldedPieces returns the folded pieces of s.
func foldedPieces(s string) []folded {
	var out []folded
	pieces(s, func(p folded) { out = append(out, p) })
	return out
}
