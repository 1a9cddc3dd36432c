package edit

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrStale refuses an edit of a line that no longer reads as the caller
// expected: the note changed since the caller looked at it.
var ErrStale = errors.New("note changed since it was read")

// mdLine is one line of a note: src[start:end] is its text without the line
// ending, and next is where the following line starts.
type mdLine struct{ start, end, next int }

// splitLines splits src[from:] at '\n' (a '\r' before it belongs to the line
// ending). A final line ending does not start another line.
func splitLines(src []byte, from int) []mdLine {
	var lines []mdLine
	for i := from; i < len(src); {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			// A last line ending in "\r" reads as ended (CommonMark): the
			// "\n" a writer adds after it makes "\r\n" of it; see lineBreak.
			end := len(src)
			if end > i && src[end-1] == '\r' {
				end--
			}
			lines = append(lines, mdLine{i, end, len(src)})
			break
		}
		end := i + j
		if end > i && src[end-1] == '\r' {
			end--
		}
		lines = append(lines, mdLine{i, end, i + j + 1})
		i += j + 1
	}
	return lines
}

// lineBreak is what ends the last line of src before text is added after
// it: nothing when it has its "\n", the "\n" that completes a closing "\r",
// else eol.
func lineBreak(src []byte, eol string) string {
	switch {
	case len(src) == 0 || src[len(src)-1] == '\n':
		return ""
	case src[len(src)-1] == '\r':
		return "\n"
	}
	return eol
}

// lineAt returns 1-based line n of src.
func lineAt(src []byte, n int) (mdLine, error) {
	lines := splitLines(src, 0)
	if n < 1 || n > len(lines) {
		return mdLine{}, fmt.Errorf("line %d: the note has %d lines: %w", n, len(lines), ErrStale)
	}
	return lines[n-1], nil
}

// checkboxRE matches a checklist item up to its box: list marker (bullet or
// ordered, possibly in a blockquote or callout), `[`, the state, `]`.
var checkboxRE = regexp.MustCompile(`^([ \t]*(?:>[ \t]?)*[ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[)([^\]])\]([ \t]|$)`)

// SetCheckbox sets the state of the checklist item on 1-based line: ' ' open,
// 'x' done, '-' cancelled, '/' in progress. expectText is the item's text
// after the box as the caller last saw it (surrounding blanks ignored); if the
// line is no longer a checklist item with that text, the edit is refused with
// an error matching ErrStale.
func SetCheckbox(src []byte, line int, expectText string, state rune) ([]byte, error) {
	switch state {
	case ' ', 'x', '-', '/':
	default:
		return nil, fmt.Errorf("setting checkbox on line %d: state %q is not one of ' ', 'x', '-', '/'", line, state)
	}
	l, err := lineAt(src, line)
	if err != nil {
		return nil, fmt.Errorf("setting checkbox: %w", err)
	}
	text := src[l.start:l.end]
	m := checkboxRE.FindSubmatchIndex(text)
	if m == nil {
		return nil, fmt.Errorf("setting checkbox on line %d: %q is not a checklist item: %w", line, text, ErrStale)
	}
	boxStart, boxEnd := m[4], m[5]
	if got := strings.TrimSpace(string(text[boxEnd+1:])); got != strings.TrimSpace(expectText) {
		return nil, fmt.Errorf("setting checkbox on line %d: item reads %q, expected %q: %w", line, got, strings.TrimSpace(expectText), ErrStale)
	}
	return splice(src, l.start+boxStart, l.start+boxEnd, string(state)), nil
}

// ReplaceLine replaces 1-based line with newLine, keeping its line ending,
// if the line still reads expectOld exactly; otherwise it refuses with an
// error matching ErrStale.
func ReplaceLine(src []byte, line int, expectOld, newLine string) ([]byte, error) {
	if strings.ContainsAny(newLine, "\r\n") {
		return nil, fmt.Errorf("replacing line %d: the new line contains a line break", line)
	}
	l, err := lineAt(src, line)
	if err != nil {
		return nil, fmt.Errorf("replacing line: %w", err)
	}
	if got := string(src[l.start:l.end]); got != strings.TrimSuffix(expectOld, "\r") {
		return nil, fmt.Errorf("replacing line %d: it reads %q, expected %q: %w", line, got, expectOld, ErrStale)
	}
	return splice(src, l.start, l.end, newLine), nil
}

// CommonEnds returns how many elements a and b share at their start, and
// how many more they share at their end: what lies between is where they
// differ.
func CommonEnds[S ~[]E, E comparable](a, b S) (pre, suf int) {
	return CommonEndsFunc(a, b, func(x, y E) bool { return x == y })
}

// CommonEndsFunc is CommonEnds with eq telling equal elements.
func CommonEndsFunc[S ~[]E, E any](a, b S, eq func(E, E) bool) (pre, suf int) {
	for pre < len(a) && pre < len(b) && eq(a[pre], b[pre]) {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && eq(a[len(a)-1-suf], b[len(b)-1-suf]) {
		suf++
	}
	return pre, suf
}
