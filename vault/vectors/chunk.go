package vectors

import (
	"crypto/sha256"
	"strings"
	"unicode"
	"unicode/utf8"
)

// chunk is one text to embed: part or all of a section, with the note's
// title and heading path in front, so that a chunk on its own says what it
// is about.
type chunk struct {
	ord     int
	line    int
	heading string // the heading path, headingSep between levels
	text    string // prefix and body, as embedded
	hash    hash
	tokens  int // estimated
}

// hash is what a vector is stored under: the chunk's text, nothing of the
// note's path or place, so a moved note or a rebuilt index finds its
// vectors again.
type hash [16]byte

func hashOf(text string) hash {
	sum := sha256.Sum256([]byte(text))
	return hash(sum[:16])
}

const headingSep = " > "

// chunksOf cuts n into chunks of at most maxTokens estimated tokens each,
// prefix included. A section without body text makes no chunk of its own
// (its heading is in the prefix of its subsections); a note with no text at
// all but a title makes one chunk of its title.
func chunksOf(n Note, maxTokens int) []chunk {
	var out []chunk
	for _, s := range n.Sections {
		body := strings.TrimSpace(s.Text)
		if body == "" {
			continue
		}
		heading := strings.Join(s.Headings, headingSep)
		prefix := prefixOf(n.Title, strings.Join(belowTitle(n.Title, s.Headings), headingSep), maxTokens/2)
		for _, part := range splitText(body, maxTokens-estimateTokens(prefix)) {
			text := prefix + part
			out = append(out, chunk{ord: len(out), line: s.Line, heading: heading, text: text, hash: hashOf(text), tokens: estimateTokens(text)})
		}
	}
	if len(out) == 0 && strings.TrimSpace(n.Title) != "" {
		text := fitTokens(strings.TrimSpace(n.Title), maxTokens)
		line := 1
		if len(n.Sections) > 0 {
			line = n.Sections[0].Line
		}
		out = append(out, chunk{line: line, text: text, hash: hashOf(text), tokens: estimateTokens(text)})
	}
	return out
}

// belowTitle drops the first heading of hs when it repeats the title, as
// a note's H1 mostly does: "Bread > Dough", not "Bread > Bread > Dough".
func belowTitle(title string, hs []string) []string {
	if len(hs) > 0 && strings.EqualFold(strings.TrimSpace(hs[0]), strings.TrimSpace(title)) {
		return hs[1:]
	}
	return hs
}

// prefixOf is the line that heads each chunk of a section, "Title > Heading
// > Subheading\n\n", cut to at most limit tokens so that a runaway heading
// leaves room for the body.
func prefixOf(title, heading string, limit int) string {
	p := strings.TrimSpace(title)
	if heading != "" {
		if p != "" {
			p += headingSep
		}
		p += heading
	}
	if p == "" {
		return ""
	}
	return fitTokens(p, limit-1) + "\n\n"
}

// fitTokens returns the longest prefix of s of at most limit tokens.
func fitTokens(s string, limit int) string {
	if estimateTokens(s) <= limit {
		return s
	}
	units := 0
	for i, r := range s {
		units += runeUnits(r)
		if (units+unitsPerToken-1)/unitsPerToken > limit {
			return s[:i]
		}
	}
	return s
}

// splitText cuts s into parts of at most limit tokens each, at the
// coarsest boundary that fits: paragraphs, then lines, then sentences,
// then words, then anywhere between two characters.
func splitText(s string, limit int) []string {
	limit = max(limit, 1)
	if estimateTokens(s) <= limit {
		return []string{s}
	}
	for _, sep := range []string{"\n\n", "\n", ". ", "。", " "} {
		if parts := strings.SplitAfter(s, sep); len(parts) > 1 {
			return pack(parts, limit)
		}
	}
	var out []string
	for s != "" {
		part := fitTokens(s, limit)
		if part == "" { // one character over the limit: it goes alone
			_, n := utf8.DecodeRuneInString(s)
			part = s[:n]
		}
		out = append(out, part)
		s = s[len(part):]
	}
	return out
}

// pack joins consecutive parts while they fit in limit tokens, and splits
// further any part that alone does not. Estimates add up (see
// estimateTokens), so a joined run never exceeds limit.
func pack(parts []string, limit int) []string {
	var out []string
	var cur strings.Builder
	curTokens := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
		curTokens = 0
	}
	for _, p := range parts {
		t := estimateTokens(p)
		if t > limit {
			flush()
			out = append(out, splitText(strings.TrimSpace(p), limit)...)
			continue
		}
		if curTokens+t > limit {
			flush()
		}
		cur.WriteString(p)
		curTokens += t
	}
	flush()
	return out
}

// unitsPerToken: estimates count thirds of a token, so that a run of
// Latin letters costs a token per three (English averages some four
// characters a token) and a CJK character a whole one.
const unitsPerToken = 3

// estimateTokens overestimates the tokens of s for any common tokenizer:
// a token per character of CJK, of punctuation and symbols, a token per
// one and a half letters of other non-Latin scripts (Cyrillic, Greek,
// Arabic, Devanagari often take more than one per character) and per
// three Latin letters or digits; spaces cost nothing of their own. The sum
// over parts of a text is at least the estimate of the whole.
func estimateTokens(s string) int {
	units := 0
	for _, r := range s {
		units += runeUnits(r)
	}
	return (units + unitsPerToken - 1) / unitsPerToken
}

func runeUnits(r rune) int {
	switch {
	case unicode.IsSpace(r):
		return 0
	case r < 0x250 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
		return 1
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return 3
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
		return 2
	default:
		return 3
	}
}
