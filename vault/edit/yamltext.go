package edit

import (
	"bytes"
	"fmt"
	"sort"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yamlText maps yaml.v3 node positions to byte offsets and finds where a
// node's text ends, which yaml.v3 does not record. Positions are 1-based lines
// and columns counted in characters, with YAML 1.1's line breaks.
type yamlText struct {
	src   []byte
	lines []int // byte offset where each line starts
	ends  []int // byte offset where each line's content ends (before its break)
}

func newYAMLText(src []byte) *yamlText {
	t := &yamlText{src: src, lines: []int{0}}
	for i := 0; i < len(src); {
		if n := breakLen(src, i); n > 0 {
			t.ends = append(t.ends, i)
			i += n
			t.lines = append(t.lines, i)
			continue
		}
		i++
	}
	t.ends = append(t.ends, len(src))
	return t
}

// breakLen is the length of the line break at i, if any. yaml.v3 counts lines
// by YAML 1.1's breaks: CRLF, CR, LF, NEL, LS and PS.
func breakLen(b []byte, i int) int {
	switch {
	case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
		return 2
	case b[i] == '\r' || b[i] == '\n':
		return 1
	case b[i] == 0xC2 && i+1 < len(b) && b[i+1] == 0x85:
		return 2
	case b[i] == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9):
		return 3
	}
	return 0
}

// offset converts a node's position to a byte offset.
func (t *yamlText) offset(n *yaml.Node) (int, error) {
	li := n.Line - 1
	if li < 0 || li >= len(t.lines) {
		return 0, fmt.Errorf("node position %d:%d is outside the frontmatter", n.Line, n.Column)
	}
	off := t.lines[li]
	for c := 1; c < n.Column; c++ {
		if off >= t.ends[li] {
			return 0, fmt.Errorf("node position %d:%d is past the end of its line", n.Line, n.Column)
		}
		_, w := utf8.DecodeRune(t.src[off:])
		off += w
	}
	return off, nil
}

// lineOf is the 0-based line holding byte off.
func (t *yamlText) lineOf(off int) int {
	return sort.Search(len(t.lines), func(i int) bool { return t.lines[i] > off }) - 1
}

// nextLine is the offset of the line after line li (or the end of the text).
func (t *yamlText) nextLine(li int) int {
	if li+1 < len(t.lines) {
		return t.lines[li+1]
	}
	return len(t.src)
}

// indentOf counts the spaces that start line li, and says whether the line is
// blank (spaces and tabs only).
func (t *yamlText) indentOf(li int) (n int, blank bool) {
	s, e := t.lines[li], t.ends[li]
	for s+n < e && t.src[s+n] == ' ' {
		n++
	}
	return n, len(bytes.Trim(t.src[s+n:e], " \t")) == 0
}

// skipProps skips a node's anchor and tag, and any space, comments and line
// breaks around them. It returns where the node's content starts and where
// its properties end (off itself when it has none).
func (t *yamlText) skipProps(off int) (content, propsEnd int) {
	propsEnd = off
	for off < len(t.src) {
		switch c := t.src[off]; {
		case c == ' ' || c == '\t':
			off++
		case breakLen(t.src, off) > 0:
			off += breakLen(t.src, off)
		case c == '#':
			off = t.ends[t.lineOf(off)]
		case c == '&' || c == '!':
			for off < len(t.src) && !isBlankOrBreak(t.src, off) {
				off++
			}
			propsEnd = off
		default:
			return off, propsEnd
		}
	}
	return off, propsEnd
}

func isBlankOrBreak(b []byte, i int) bool {
	return b[i] == ' ' || b[i] == '\t' || breakLen(b, i) > 0
}

// isEmptyScalar reports a scalar with no text at all, such as the value of
// `key:`; its position is where the text would be.
func isEmptyScalar(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "" &&
		n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// end returns the offset just past node n's text, comments after it
// excluded. indent is the indentation of the block collection holding n.
func (t *yamlText) end(n *yaml.Node, indent int) (int, error) {
	start, err := t.offset(n)
	if err != nil {
		return 0, err
	}
	pos, propsEnd := t.skipProps(start)
	switch n.Kind {
	case yaml.AliasNode:
		for pos < len(t.src) && !isBlankOrBreak(t.src, pos) {
			pos++
		}
		return pos, nil
	case yaml.ScalarNode:
		switch {
		case isEmptyScalar(n):
			return propsEnd, nil
		case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
			return t.blockScalarEnd(pos, indent), nil
		case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
			return t.quotedEnd(pos)
		default:
			return t.plainEnd(pos, indent), nil
		}
	case yaml.SequenceNode, yaml.MappingNode:
		if n.Style&yaml.FlowStyle != 0 {
			return t.flowEnd(pos)
		}
		if len(n.Content) == 0 {
			return 0, fmt.Errorf("line %d: empty block collection", n.Line)
		}
		// Block collections are indented with spaces (and `- ` for nested
		// sequences), so the byte column is the indentation.
		return t.end(n.Content[len(n.Content)-1], pos-t.lines[t.lineOf(pos)])
	}
	return 0, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

// plainEnd finds the end of a plain scalar: the rest of its first line, then
// continuation lines indented deeper than its collection, up to a comment.
func (t *yamlText) plainEnd(off, indent int) int {
	li := t.lineOf(off)
	end := t.plainLineEnd(off, t.ends[li])
	for li++; li < len(t.lines); li++ {
		n, blank := t.indentOf(li)
		if blank {
			continue
		}
		if n <= indent {
			break
		}
		first := t.lines[li] + n
		for t.src[first] == ' ' || t.src[first] == '\t' {
			first++
		}
		if t.src[first] == '#' {
			break
		}
		end = t.plainLineEnd(first, t.ends[li])
	}
	return end
}

// plainLineEnd is where plain text starting at off ends on its line: before
// a ` #` comment and trailing blanks.
func (t *yamlText) plainLineEnd(off, lineEnd int) int {
	end := off
	for i := off; i < lineEnd; i++ {
		c := t.src[i]
		if c == '#' && i > off && (t.src[i-1] == ' ' || t.src[i-1] == '\t') {
			break
		}
		if c != ' ' && c != '\t' {
			end = i + 1
		}
	}
	return end
}

// quotedEnd finds the closing quote of a quoted scalar starting at off.
func (t *yamlText) quotedEnd(off int) (int, error) {
	q := t.src[off]
	for i := off + 1; i < len(t.src); i++ {
		switch {
		case q == '"' && t.src[i] == '\\':
			i++
		case t.src[i] == q && q == '\'' && i+1 < len(t.src) && t.src[i+1] == '\'':
			i++ // '' is an escaped quote
		case t.src[i] == q:
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("line %d: unterminated quoted scalar", t.lineOf(off)+1)
}

// blockScalarEnd finds the last content line of a literal or folded scalar
// whose `|` or `>` header is at off.
func (t *yamlText) blockScalarEnd(off, indent int) int {
	li := t.lineOf(off)
	i, content := off+1, -1
	for ; i < t.ends[li]; i++ {
		c := t.src[i]
		if c >= '1' && c <= '9' {
			content = indent + int(c-'0')
		} else if c != '+' && c != '-' {
			break
		}
	}
	end := i
	for li++; li < len(t.lines); li++ {
		n, blank := t.indentOf(li)
		if blank && t.ends[li]-t.lines[li] == n {
			continue // spaces only: part of the scalar whatever its indentation
		}
		if content < 0 {
			if n <= indent {
				break
			}
			content = n
		}
		if n < content {
			break
		}
		end = t.ends[li]
	}
	return end
}

// flowEnd finds the bracket closing the flow collection that opens at off.
func (t *yamlText) flowEnd(off int) (int, error) {
	depth := 0
	tokenStart, afterBlank := true, true
	for i := off; i < len(t.src); i++ {
		c := t.src[i]
		blank := c == ' ' || c == '\t' || breakLen(t.src, i) > 0
		switch {
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			if depth--; depth == 0 {
				return i + 1, nil
			}
		case c == '#' && afterBlank:
			i = t.ends[t.lineOf(i)] - 1
		case (c == '"' || c == '\'') && tokenStart:
			e, err := t.quotedEnd(i)
			if err != nil {
				return 0, err
			}
			i = e - 1
		}
		tokenStart = blank || c == '[' || c == '{' || c == ',' || c == ':' || c == '?'
		afterBlank = blank
	}
	return 0, fmt.Errorf("line %d: unterminated flow collection", t.lineOf(off)+1)
}

// comment returns the `# ...` comment in src[from:to], if there is one.
func (t *yamlText) comment(from, to int) string {
	for i := from; i < to; i++ {
		if t.src[i] == '#' && (i == from || t.src[i-1] == ' ' || t.src[i-1] == '\t') {
			return string(bytes.TrimRight(t.src[i:to], " \t"))
		}
	}
	return ""
}
