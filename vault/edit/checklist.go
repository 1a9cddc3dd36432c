package edit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// AppendChecklistItem adds an open checklist item `- [ ] text` to the
// note's own checklist: at the end of the list that holds its checkboxes
// (under `## Steps`, in a callout, or in the body with no heading at
// all), with that list's indentation, quote marks and bullet. When the
// note's checkboxes are in several lists, the last one with an open item
// takes it, else the last one. A note without a checkbox gets a
// `## Checklist` section for it.
func AppendChecklistItem(src []byte, text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if text == "" || strings.ContainsAny(text, "\r\n") {
		return nil, errors.New("adding a checklist item: the item must be one line of text")
	}
	n := note.Parse("note.md", src, note.Options{})
	if n.Plain != "" {
		return nil, fmt.Errorf("adding a checklist item: the note's markup is too costly to find its checklist: %s", n.Plain)
	}
	if len(n.Checklist) == 0 {
		return AppendUnderSection(src, "Checklist", "- [ ] "+text)
	}
	lines := splitLines(src, 0)
	top := -1 // the least indentation of a checkbox: its top-level items
	for _, it := range n.Checklist {
		if it.Line < 1 || it.Line > len(lines) {
			return nil, fmt.Errorf("adding a checklist item: the note's item on line %d is not among its %d lines", it.Line, len(lines))
		}
		if d := readListLine(src, lines[it.Line-1]).indent; top < 0 || d < top {
			top = d
		}
	}
	// The items come in the order of their lines, so each list is found
	// once, from its first top-level item.
	var (
		cur, last, open checklistRun
		hasOpen         bool
	)
	cur.end = -1
	for _, it := range n.Checklist {
		i := it.Line - 1
		if readListLine(src, lines[i]).indent != top {
			continue
		}
		if i > cur.end {
			cur = runFrom(src, lines, i)
			last = cur
		}
		if it.State == ' ' {
			open, hasOpen = cur, true
		}
	}
	run := last
	if hasOpen {
		run = open
	}
	eol := lineEnding(src)
	l := lines[run.end]
	ins := ""
	if l.next == len(src) {
		ins = lineBreak(src, eol)
	}
	return splice(src, l.next, l.next, ins+run.lead+run.marker+"[ ] "+text+eol), nil
}

// checklistRun is a list that holds top-level checkboxes: where it ends,
// and how a new last item of it starts.
type checklistRun struct {
	end    int    // index of its last non-blank line
	lead   string // quote marks and indentation of its items
	marker string // the next item's bullet or number, with its space
}

// runFrom finds the list whose item starts at line first: the items at
// its indentation that follow, with what is nested in them or continues
// them, blank lines between included.
func runFrom(src []byte, lines []mdLine, first int) checklistRun {
	head := readListLine(src, lines[first])
	run := checklistRun{end: first}
	lastItem := head
	// noLazy: the line before was blank or an empty item, after which no
	// paragraph is open for a line to continue lazily.
	noLazy := head.empty
	for i := first + 1; i < len(lines); i++ {
		ll := readListLine(src, lines[i])
		if ll.blank {
			noLazy = true
			continue
		}
		if ll.quotes != head.quotes || ll.indent < head.indent || ll.indent == head.indent && ll.marker == "" {
			break
		}
		// Then only a line indented to the item's content continues it
		// (CommonMark): one less indented is a paragraph after the list,
		// and an item appended below that paragraph would be read as
		// more of it.
		if noLazy && ll.indent != head.indent && ll.indent < head.indent+contentWidth(lastItem.marker) {
			break
		}
		noLazy = ll.empty
		run.end = i
		if ll.indent == head.indent {
			lastItem = ll
		}
	}
	run.lead, run.marker = lastItem.lead, nextMarker(lastItem.marker)
	return run
}

// contentWidth is how far an item's text starts after its marker m (with
// the spaces after it): past five spaces, one of them (CommonMark).
func contentWidth(m string) int {
	bare := strings.TrimRight(m, " \t")
	if gap := len(m) - len(bare); gap == 0 || gap > 4 {
		return len(bare) + 1
	}
	return len(m)
}

// listLine is one line read as a possible list item: its quote marks, the
// indentation after them, and its list marker ("" for none).
type listLine struct {
	lead   string // the quote marks and the indentation, as written
	quotes int    // how many `>`
	indent int    // columns of indentation after the quote marks
	marker string // `-`, `*`, `+`, `1.` or `1)`, with the spaces after it
	blank  bool   // nothing but quote marks and blanks
	empty  bool   // a list marker and nothing after it
}

var (
	quoteRE  = regexp.MustCompile(`^(?:[ \t]*>[ \t]?)*`)
	markerRE = regexp.MustCompile(`^(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]+|$)`)
)

func listLineOf(s string) listLine {
	q := quoteRE.FindString(s)
	rest := s[len(q):]
	body := strings.TrimLeft(rest, " \t")
	ll := listLine{quotes: strings.Count(q, ">"), lead: s[:len(s)-len(body)], blank: body == ""}
	for _, r := range rest[:len(rest)-len(body)] {
		if r == '\t' {
			ll.indent += 4 - ll.indent%4
		} else {
			ll.indent++
		}
	}
	ll.marker = markerRE.FindString(body)
	ll.empty = ll.marker != "" && strings.TrimSpace(body[len(ll.marker):]) == ""
	return ll
}

func readListLine(src []byte, l mdLine) listLine { return listLineOf(string(src[l.start:l.end])) }

// nextMarker is the marker of the item after one with marker m: the same
// bullet, or the next number.
func nextMarker(m string) string {
	bare := strings.TrimRight(m, " \t")
	if bare == "" {
		return "- "
	}
	if d := bare[len(bare)-1]; d == '.' || d == ')' {
		if n, err := strconv.Atoi(bare[:len(bare)-1]); err == nil {
			return strconv.Itoa(n+1) + string(d) + " "
		}
	}
	return bare + " "
}
