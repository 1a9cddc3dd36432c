package index

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Snippets are cut in Go from the section text rather than with FTS5's
// snippet(): that function re-tokenizes every hit's text inside SQLite and
// was half the time of a typical search.

// term is a query word as the index compares it.
type term struct {
	text   string // folded (see fold)
	prefix bool   // the user wrote word*
}

// snippetTokens is how many words a snippet shows.
const snippetTokens = 16

// snippet returns the window of body with the most query terms, the terms
// between ** and **; without any, the start of body.
func snippet(body string, terms []term) string {
	spans := tokenSpans(body)
	matched := make([]bool, len(spans))
	any := false
	for i, sp := range spans {
		if matches(body[sp.start:sp.end], terms) {
			matched[i], any = true, true
		}
	}
	if !any {
		return leadSnippet(body)
	}
	// Windows start a few words before a match, to show what leads up to
	// it; the one with the most matches wins, the earliest among equals.
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
		b.WriteString(body[pos:spans[i].start])
		if matched[i] {
			b.WriteString("**" + body[spans[i].start:spans[i].end] + "**")
		} else {
			b.WriteString(body[spans[i].start:spans[i].end])
		}
		pos = spans[i].end
	}
	if end < len(spans) {
		b.WriteString("…")
	} else {
		b.WriteString(body[pos:])
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// leadSnippet is the first words of a section, for hits without matched
// words.
func leadSnippet(body string) string {
	s := strings.Join(strings.Fields(body), " ")
	const max = 160
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)[:max]
	if i := strings.LastIndexByte(string(r), ' '); i > max/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}

// matches reports whether the token tok is one of terms. Most tokens are
// ASCII and compare without folding, which would allocate.
func matches(tok string, terms []term) bool {
	if !isASCII(tok) {
		tok = fold(tok)
	}
	for _, t := range terms {
		if len(tok) == len(t.text) || t.prefix && len(tok) > len(t.text) {
			if strings.EqualFold(tok[:len(t.text)], t.text) {
				return true
			}
		}
	}
	return false
}

type span struct{ start, end int }

// tokenSpans splits s into tokens the way unicode61 does, keeping where
// each one is.
func tokenSpans(s string) []span {
	out := make([]span, 0, len(s)/5)
	start := -1
	for i, r := range s {
		if r < utf8.RuneSelf && asciiToken[r] || r >= utf8.RuneSelf && isTokenRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(s)})
	}
	return out
}

var asciiToken = func() (t [utf8.RuneSelf]bool) {
	for r := range t {
		t[r] = isTokenRune(rune(r))
	}
	return t
}()

// tokens splits s into folded tokens.
func tokens(s string) []string {
	var out []string
	for _, sp := range tokenSpans(s) {
		out = append(out, fold(s[sp.start:sp.end]))
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isTokenRune reports what unicode61 treats as part of a word: letters,
// digits, marks and private-use characters.
func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r)
}

// fold lower-cases a token and strips its diacritics, as unicode61 with
// remove_diacritics does, so that "Café" and "cafe" compare equal.
func fold(tok string) string {
	if isASCII(tok) {
		return strings.ToLower(tok)
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(tok) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
