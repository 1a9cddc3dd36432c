package edit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// AppendUnderSection appends text at the end of the section under heading,
// before the next heading of the same or a higher level. heading is the
// heading's text, matched case-insensitively at any level, or `## Text` to
// match that level only. A missing heading is created at the end of the note
// (level 2 unless given). Checklist and list items join the list the section
// ends with; other text is set off by a blank line.
func AppendUnderSection(src []byte, heading, text string) ([]byte, error) {
	out, err := appendUnderSection(src, heading, text)
	if err == nil {
		err = sameFrontmatter(src, out)
	}
	if err != nil {
		return nil, fmt.Errorf("appending under %q: %w", heading, err)
	}
	return out, nil
}

// sameFrontmatter refuses an append that would change where the body
// starts: a note that opens with a --- line and no frontmatter gets one
// when the text adds a closing --- line, and its first lines with it.
func sameFrontmatter(src, out []byte) error {
	if bodyStart(out) != bodyStart(src) {
		return errors.New("the text has a --- line that would close the note's opening --- line into a frontmatter block")
	}
	return nil
}

// AppendSection appends a new section (`## heading` unless heading gives its
// own `#`s) with body at the end of the note, separated from what precedes it
// by exactly one blank line. Daily log entries are written this way.
func AppendSection(src []byte, heading, body string) ([]byte, error) {
	level, title, err := parseHeadingArg(heading)
	if err != nil {
		return nil, fmt.Errorf("appending section %q: %w", heading, err)
	}
	if level == 0 {
		level = 2
	}
	eol := lineEnding(src)
	// A new section needs no heading of the note, so a note over the parse
	// budget still takes one (its open blocks are not known then).
	o := note.ParseOutline(src)
	out := appendSection(src, o.BodyOffset, eol, o.Closer, level, title, normaliseText(body, eol))
	if err := sameFrontmatter(src, out); err != nil {
		return nil, fmt.Errorf("appending section %q: %w", heading, err)
	}
	return out, nil
}

func appendUnderSection(src []byte, heading, text string) ([]byte, error) {
	level, title, err := parseHeadingArg(heading)
	if err != nil {
		return nil, err
	}
	eol := lineEnding(src)
	text = normaliseText(text, eol)
	if text == "" {
		return nil, errors.New("nothing to append")
	}
	from, lines, hs, closer, err := outline(src)
	if err != nil {
		return nil, err
	}
	h := -1
	for i, hd := range hs {
		if (level == 0 || hd.level == level) && hd.is(title) {
			h = i
			break
		}
	}
	if h < 0 {
		if level == 0 {
			level = 2
		}
		return appendSection(src, from, eol, closer, level, title, text), nil
	}

	first, end := hs[h].last+1, len(lines)
	for _, next := range hs[h+1:] {
		if next.level <= hs[h].level {
			end = next.first
			break
		}
	}
	last := hs[h].last // the section's last non-blank line, the heading if it is empty
	for i := end - 1; i >= first; i-- {
		if !isBlankLine(src, lines[i]) {
			last = i
			break
		}
	}
	l := lines[last]
	ins := ""
	if l.next == len(src) {
		ins = lineBreak(src, eol)
	}
	if closer != "" && end == len(lines) {
		// The section ends in a code or HTML block left open to the end
		// of the note; close it, or the text would land inside it.
		ins += closer + eol + eol
	} else if last > hs[h].last && !(listItemRE.MatchString(text) && endsWithList(src, lines[first:last+1])) {
		ins += eol
	}
	return splice(src, l.next, l.next, ins+text+eol), nil
}

// appendSection appends a heading and text at the end of src, replacing any
// blank lines there by exactly one. A code or HTML block left open at the
// end is closed first, or the new section would be code.
func appendSection(src []byte, from int, eol, closer string, level int, title, text string) []byte {
	cut := len(src)
	for cut > from && strings.ContainsRune(" \t\r\n", rune(src[cut-1])) {
		cut--
	}
	if cut > from { // keep the last line whole, trailing blanks included
		if i := bytes.IndexByte(src[cut:], '\n'); i >= 0 {
			cut += i + 1
		} else {
			cut = len(src)
		}
	} else {
		cut = from
	}
	var b strings.Builder
	b.Write(src[:cut])
	if cut > 0 {
		b.WriteString(lineBreak(src[:cut], eol))
		if closer != "" {
			b.WriteString(closer + eol)
		}
		b.WriteString(eol)
	}
	b.WriteString(strings.Repeat("#", level) + " " + title + eol)
	if text != "" {
		b.WriteString(text + eol)
	}
	return []byte(b.String())
}

// bodyStart is the offset after the frontmatter, or 0.
func bodyStart(src []byte) int {
	h, _, _ := note.FindHeader(string(src))
	return h.Body
}

// normaliseText trims blank lines around text and gives it the note's line
// ending.
func normaliseText(text, eol string) string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.Trim(text, "\n")
	return strings.ReplaceAll(text, "\n", eol)
}

var atxHeadingArgRE = regexp.MustCompile(`^(#{1,6})(?:[ \t]+(.*))?$`)

// parseHeadingArg splits a heading argument into its level (0 if none was
// given) and text.
func parseHeadingArg(h string) (int, string, error) {
	if strings.ContainsAny(h, "\r\n") {
		return 0, "", errors.New("heading spans lines")
	}
	h = strings.TrimSpace(h)
	level := 0
	if m := atxHeadingArgRE.FindStringSubmatch(h); m != nil {
		level, h = len(m[1]), strings.TrimSpace(m[2])
	}
	if h == "" {
		return 0, "", errors.New("empty heading")
	}
	return level, h, nil
}

func sameHeading(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

func isBlankLine(src []byte, l mdLine) bool {
	return strings.Trim(string(src[l.start:l.end]), " \t") == ""
}

// listItemRE matches a line that starts a list item (bullet or ordered,
// possibly in a blockquote).
var listItemRE = regexp.MustCompile(`^[ \t]*(?:>[ \t]?)*[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)`)

// endsWithList reports whether the last paragraph-like run of lines is a
// list: walking up from the last line through indented continuation lines
// reaches a list item before any unindented non-item line.
func endsWithList(src []byte, lines []mdLine) bool {
	for i := len(lines) - 1; i >= 0; i-- {
		s := string(src[lines[i].start:lines[i].end])
		switch {
		case strings.Trim(s, " \t") == "":
			return false
		case listItemRE.MatchString(s):
			return true
		case s[0] != ' ' && s[0] != '\t':
			return false
		}
	}
	return false
}

// heading is a heading of a note's body, as lines of it.
type heading struct {
	level       int
	raw, text   string // as written; markup stripped
	first, last int    // indexes of its first and last line (setext headings span two or more)
}

// outline finds the headings of src with note.ParseOutline, the index's own
// reading of the note (code fences, HTML blocks and the frontmatter hold
// none), and returns them as lines of the body, with the line that closes
// a code or HTML block left open at the end ("" if none). A note too costly
// to parse is refused rather than edited blind.
func outline(src []byte) (from int, lines []mdLine, hs []heading, closer string, err error) {
	o := note.ParseOutline(src)
	if o.Plain != "" {
		return 0, nil, nil, "", fmt.Errorf("the note's markup is too costly to find its headings: %s", o.Plain)
	}
	lines = splitLines(src, o.BodyOffset)
	// lineOf is the index of the line holding byte off.
	lineOf := func(off int) int {
		i, _ := slices.BinarySearchFunc(lines, off, func(l mdLine, off int) int { return cmp.Compare(l.start, off) })
		if i == len(lines) || lines[i].start > off {
			i--
		}
		return i
	}
	hs = make([]heading, len(o.Sections))
	for i, s := range o.Sections {
		hs[i] = heading{level: s.Level, raw: s.Raw, text: s.Text, first: lineOf(s.Offset), last: lineOf(s.Body - 1)}
	}
	return o.BodyOffset, lines, hs, o.Closer, nil
}

// is reports whether the heading is the one named title, by its text as
// written or as read.
func (h heading) is(title string) bool {
	return sameHeading(h.raw, title) || sameHeading(h.text, title)
}
