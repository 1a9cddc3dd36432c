package note

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
)

// Goldmark knows markdown links, code spans, autolinks and raw HTML but not
// Obsidian's wikilinks and tags, which it leaves as plain text. So each text
// block is handled in two steps: goldmark's inline nodes give the markdown
// links and the ranges that are not prose (code, HTML, link destinations),
// then the block's source lines are scanned for `[[…]]` and `#tag` outside
// those ranges. Inline nodes carry only their start offset (Node.Pos); ends
// are found by scanning from there.

// inlines handles the inline content of one paragraph, text block or heading.
func (p *scratch) inlines(block ast.Node) {
	lines := block.Lines()
	if lines.Len() == 0 {
		return
	}
	blockEnd := p.base + lines.At(lines.Len()-1).Stop
	p.excluded = p.excluded[:0]
	p.collect(block, blockEnd)
	k := 0
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		k = p.scanLine(p.base+seg.Start, p.base+seg.Stop, k)
	}
}

// collect records the non-prose ranges of a block in source order and adds
// its markdown links.
func (p *scratch) collect(n ast.Node, blockEnd int) {
	s := p.s
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Pos() < 0 {
			// Only nodes made by inline parsers have a position, and those
			// are the ones handled below.
			p.collect(c, blockEnd)
			continue
		}
		start := p.base + c.Pos()
		if start >= blockEnd {
			continue
		}
		switch c := c.(type) {
		case *ast.CodeSpan:
			p.exclude(start, codeSpanEnd(s, start, blockEnd))
		case *ast.AutoLink:
			end := blockEnd
			if i := strings.IndexByte(s[start:blockEnd], '>'); i >= 0 {
				end = start + i + 1
			}
			p.exclude(start, end)
		case *ast.RawHTML:
			if segs := c.Segments; segs.Len() > 0 {
				p.exclude(p.base+segs.At(0).Start, p.base+segs.At(segs.Len()-1).Stop)
			}
		case *ast.Link:
			first := len(p.excluded)
			p.collect(c, blockEnd)
			p.markdownLink(c.Destination, start, blockEnd, first, false)
		case *ast.Image:
			first := len(p.excluded)
			p.collect(c, blockEnd)
			p.markdownLink(c.Destination, start, blockEnd, first, true)
		default:
			if c.HasChildren() {
				p.collect(c, blockEnd)
			}
		}
	}
}

func (p *scratch) exclude(start, end int) {
	if start < end {
		p.excluded = append(p.excluded, span{start, end})
	}
}

// codeSpanEnd finds the backtick run closing the code span at start: the
// next run of the same length.
func codeSpanEnd(s string, start, limit int) int {
	n := 0
	for start+n < limit && s[start+n] == '`' {
		n++
	}
	for i := start + n; i < limit; {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < limit && s[j] == '`' {
			j++
		}
		if j-i == n {
			return j
		}
		i = j
	}
	return start + n
}

// scanLine scans the prose of one source line of a block for wikilinks and
// tags. k indexes the first exclusion that may still lie ahead; the updated
// index is returned for the next line.
func (p *scratch) scanLine(start, stop, k int) int {
	ex := p.excluded
	for i := start; i < stop; {
		for k < len(ex) && ex[k].end <= i {
			k++
		}
		limit := stop
		if k < len(ex) && ex[k].start < stop {
			if ex[k].start <= i {
				i = ex[k].end
				continue
			}
			limit = ex[k].start
		}
		i = p.scanProse(start, i, limit)
	}
	return k
}

// scanProse scans s[from:limit], part of a line starting at lineStart, and
// returns where it stopped.
func (p *scratch) scanProse(lineStart, from, limit int) int {
	s := p.s
	for i := from; i < limit; i++ {
		switch s[i] {
		case '[':
			if i+1 < limit && s[i+1] == '[' {
				if end := p.wikilink(lineStart, i, limit); end > 0 {
					i = end - 1
				}
			}
		case '#':
			if i == lineStart || s[i-1] == ' ' || s[i-1] == '\t' {
				if end := tagEnd(s, i+1, limit); end > 0 {
					p.addTag(s[i+1 : end])
					i = end - 1
				}
			}
		}
	}
	return limit
}

// tagEnd returns the end of the tag whose name starts at i, or 0 when there
// is none. A tag name holds letters, digits, '_', '-' and '/' and is not only
// digits (Obsidian: #123 is not a tag).
func tagEnd(s string, i, limit int) int {
	j, named := i, false
scan:
	for j < limit {
		c := s[j]
		if c < utf8.RuneSelf {
			switch {
			case c >= '0' && c <= '9', c == '-', c == '/':
			case isASCIIAlnum(c), c == '_':
				named = true
			default:
				break scan
			}
			j++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[j:limit])
		if !unicode.IsLetter(r) && !unicode.IsMark(r) && !unicode.IsDigit(r) {
			break
		}
		named = named || !unicode.IsDigit(r)
		j += size
	}
	if !named || s[i] == '/' {
		return 0
	}
	return j
}

// wikilink parses `[[…]]` at open (or `![[…]]` when a '!' precedes it) and
// returns the offset after it, or 0 when there is no wikilink. Obsidian keeps
// a wikilink on one line; an inner `[[` starts over there.
func (p *scratch) wikilink(lineStart, open, limit int) int {
	s := p.s
	closeAt := -1
	for j := open + 2; j+1 < limit; j++ {
		if s[j] == ']' && s[j+1] == ']' {
			closeAt = j
			break
		}
		if s[j] == '[' && s[j+1] == '[' {
			return 0
		}
	}
	if closeAt < 0 {
		return 0
	}
	inner := s[open+2 : closeAt]
	if strings.TrimSpace(inner) == "" {
		return 0
	}
	l := Link{Offset: open, End: closeAt + 2}
	if open > lineStart && s[open-1] == '!' {
		l.Embed, l.Offset = true, open-1
	}
	target := inner
	if bar := strings.IndexByte(inner, '|'); bar >= 0 {
		target, l.Alias = inner[:bar], strings.TrimSpace(inner[bar+1:])
		// In a table the pipe is escaped: [[note\|alias]].
		target = strings.TrimSuffix(target, `\`)
	}
	l.Target, l.Heading, l.Block = splitSubpath(target)
	l.Target = strings.TrimSpace(l.Target)
	l.Line = p.lineOf(l.Offset)
	p.n.Links = append(p.n.Links, l)
	return l.End
}

// splitSubpath splits "note#heading", "note#^block" and "note#h1#h2".
func splitSubpath(t string) (target, heading, block string) {
	hash := strings.IndexByte(t, '#')
	if hash < 0 {
		return t, "", ""
	}
	target, sub := t[:hash], strings.TrimSpace(t[hash+1:])
	if b, ok := strings.CutPrefix(sub, "^"); ok {
		return target, "", b
	}
	if i := strings.Index(sub, "#^"); i >= 0 {
		return target, strings.TrimSpace(sub[:i]), sub[i+2:]
	}
	return target, sub, ""
}

// markdownLink adds the `[text](dest)` or `![alt](dest)` link goldmark found
// at start, unless it points outside the vault. first indexes the exclusions
// recorded inside its label.
func (p *scratch) markdownLink(dest []byte, start, blockEnd, first int, image bool) {
	s := p.s
	open := start
	if image {
		open++
	}
	if open >= blockEnd || s[open] != '[' {
		return
	}
	if !image && open+1 < blockEnd && s[open+1] == '[' {
		return // `[[x]](y)`: Obsidian sees the wikilink, which the scan finds
	}
	labelEnd := p.labelClose(open, blockEnd, first)
	if labelEnd < 0 {
		return
	}
	end, dstStart, dstEnd := linkTail(s, labelEnd+1, blockEnd)
	raw := string(dest) // a reference link's destination is elsewhere in the file
	if dstEnd-dstStart == len(dest) {
		raw = s[dstStart:dstEnd]
	}
	p.exclude(labelEnd, end)
	if raw == "" || isExternal(raw) {
		return
	}
	l := Link{
		Alias:    strings.TrimSpace(s[open+1 : labelEnd]),
		Markdown: true,
		Embed:    image,
		Offset:   start,
		End:      end,
		Line:     p.lineOf(start),
	}
	l.Target, l.Heading, l.Block = splitSubpath(raw)
	l.Target, l.Heading, l.Block = decodeDest(l.Target), decodeDest(l.Heading), decodeDest(l.Block)
	p.n.Links = append(p.n.Links, l)
}

// labelClose finds the ']' closing the link label opened at open, skipping
// escapes and the code spans and HTML recorded from index first on.
func (p *scratch) labelClose(open, limit, first int) int {
	s, ex := p.s, p.excluded
	depth := 0
	for i := open; i < limit; i++ {
		for first < len(ex) && ex[first].end <= i {
			first++
		}
		if first < len(ex) && ex[first].start <= i {
			i = ex[first].end - 1
			continue
		}
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// linkTail reads what follows a link label ending at i: `(dest "title")`,
// `[ref]` or nothing (a shortcut reference). It returns the end of the link
// and the destination's range within an inline link (empty otherwise).
func linkTail(s string, i, limit int) (end, dstStart, dstEnd int) {
	if i >= limit {
		return i, i, i
	}
	switch s[i] {
	case '[':
		if j := strings.IndexByte(s[i:limit], ']'); j >= 0 {
			return i + j + 1, i, i
		}
		return i, i, i
	case '(':
	default:
		return i, i, i
	}
	j := skipSpace(s, i+1, limit)
	if j < limit && s[j] == '<' {
		k := j + 1
		for k < limit && s[k] != '>' && s[k] != '\n' {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		if k >= limit || s[k] != '>' {
			return i, i, i
		}
		dstStart, dstEnd, j = j+1, k, k+1
	} else {
		k, depth := j, 0
	dest:
		for k < limit {
			switch c := s[k]; {
			case c == '\\' && k+1 < limit:
				k++
			case c == '(':
				depth++
			case c == ')':
				if depth == 0 {
					break dest
				}
				depth--
			case c <= ' ':
				break dest
			}
			k++
		}
		dstStart, dstEnd, j = j, min(k, limit), min(k, limit)
	}
	j = skipSpace(s, j, limit)
	if j < limit && (s[j] == '"' || s[j] == '\'' || s[j] == '(') {
		closer := s[j]
		if closer == '(' {
			closer = ')'
		}
		k := j + 1
		for k < limit && s[k] != closer {
			if s[k] == '\\' {
				k++
			}
			k++
		}
		if k >= limit {
			return i, i, i
		}
		j = skipSpace(s, k+1, limit)
	}
	if j < limit && s[j] == ')' {
		return j + 1, dstStart, dstEnd
	}
	return i, i, i
}

func skipSpace(s string, i, limit int) int {
	for i < limit && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// isExternal reports whether a link destination leaves the vault: it has a
// URL scheme (https:, mailto:, obsidian:) or is protocol-relative. Obsidian
// file names cannot hold ':', so a vault path never looks like a scheme.
func isExternal(d string) bool {
	if strings.HasPrefix(d, "//") {
		return true
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case c == ':':
			return i > 0
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return false
}

// decodeDest undoes backslash escapes and %-encoding in a markdown link
// destination; a malformed %-sequence is kept as written.
func decodeDest(d string) string {
	if strings.IndexByte(d, '\\') >= 0 {
		var b strings.Builder
		for i := 0; i < len(d); i++ {
			if d[i] == '\\' && i+1 < len(d) && isASCIIPunct(d[i+1]) {
				i++
			}
			b.WriteByte(d[i])
		}
		d = b.String()
	}
	if strings.IndexByte(d, '%') >= 0 {
		if u, err := url.PathUnescape(d); err == nil {
			d = u
		}
	}
	return d
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}
