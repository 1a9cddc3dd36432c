package edit

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
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
	from := bodyStart(src)
	_, fence := scanHeadings(src, splitLines(src, from))
	out := appendSection(src, from, eol, fence, level, title, normaliseText(body, eol))
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
	from := bodyStart(src)
	lines := splitLines(src, from)
	hs, fence := scanHeadings(src, lines)
	h := -1
	for i, hd := range hs {
		if (level == 0 || hd.level == level) && sameHeading(hd.text, title) {
			h = i
			break
		}
	}
	if h < 0 {
		if level == 0 {
			level = 2
		}
		return appendSection(src, from, eol, fence, level, title, text), nil
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
	if fence != "" && end == len(lines) {
		// The section ends in a code block left open to the end of the
		// note; close it, or the text would land inside it.
		ins += fence + eol + eol
	} else if last > hs[h].last && !(listItemRE.MatchString(text) && endsWithList(src, lines[first:last+1])) {
		ins += eol
	}
	return splice(src, l.next, l.next, ins+text+eol), nil
}

// appendSection appends a heading and text at the end of src, replacing any
// blank lines there by exactly one. A code fence left open at the end is
// closed first, or the new section would be code.
func appendSection(src []byte, from int, eol, fence string, level int, title, text string) []byte {
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
		if fence != "" {
			b.WriteString(fence + eol)
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
	if fm, ok, err := findFrontmatter(src); ok && err == nil {
		return fm.body
	}
	return 0
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

// heading is an ATX or setext heading found in a note's body.
type heading struct {
	level       int
	text        string
	first, last int // indexes of its first and last line (setext headings span two)
}

var (
	atxRE    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$`)
	closeRE  = regexp.MustCompile(`(?:^|[ \t]+)#+$`)
	setextRE = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	fenceRE  = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	hrRE     = regexp.MustCompile(`^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$`)
)

// scanHeadings finds the headings of a note body, skipping fenced code, and
// returns the marker of a fence still open at the end ("" if none). It
// follows CommonMark closely enough for sections: a setext underline counts
// only under a plain paragraph line, so a `---` after a list item or a blank
// line stays a horizontal rule.
func scanHeadings(src []byte, lines []mdLine) (hs []heading, openFence string) {
	var (
		fence     string // the open fence's marker, "" outside code
		para      bool   // the previous line continues a top-level paragraph
		container bool   // the previous lines are a list item or quote, which lines run on into
	)
	for i, l := range lines {
		s := string(src[l.start:l.end])
		if fence != "" {
			if m := fenceRE.FindStringSubmatch(s); m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.Trim(s[len(m[0]):], " \t") == "" {
				fence = ""
			}
			continue
		}
		wasPara := para
		para = false
		switch {
		case strings.Trim(s, " \t") == "":
			container = false
		case fenceRE.MatchString(s):
			container = false
			fence = fenceRE.FindStringSubmatch(s)[1]
		case atxRE.MatchString(s):
			m := atxRE.FindStringSubmatch(s)
			hs = append(hs, heading{level: len(m[1]), text: strings.TrimSpace(closeRE.ReplaceAllString(m[2], "")), first: i, last: i})
			container = false
		case wasPara && setextRE.MatchString(s):
			level := 1
			if strings.Contains(s, "-") {
				level = 2
			}
			prev := string(src[lines[i-1].start:lines[i-1].end])
			hs = append(hs, heading{level: level, text: strings.TrimSpace(prev), first: i - 1, last: i})
		case hrRE.MatchString(s):
			container = false
		case listItemRE.MatchString(s), strings.HasPrefix(strings.TrimLeft(s, " \t"), ">"):
			container = true
		case container:
		case wasPara || !strings.HasPrefix(s, "    ") && !strings.HasPrefix(s, "\t"):
			para = true // a paragraph starts or goes on; four spaces would be code
		}
	}
	return hs, fence
}
