package note

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Outline is the heading structure of a markdown file as Parse sees it, for
// code that edits or reads a note by its sections: the writer, the domain
// and template files, the retriever.
type Outline struct {
	// BodyOffset is the first byte after the frontmatter block (after a
	// byte-order mark when there is no block), 0 when there is neither.
	BodyOffset int
	// Sections are the note's headings in order, each with the part of the
	// file it heads.
	Sections []Section
	// Closer is the line that closes a block left open at the end of the
	// file, "" if none: a code fence's marker (``` or ~~~, as long as
	// written), or the end of an HTML block that runs to its end marker
	// ("-->" after "<!--"). Text appended after such a block is code or raw
	// HTML until a line closes it.
	Closer string
	// Plain says why the body was not parsed (see Note.Plain); the outline
	// has no sections then.
	Plain string
}

// Section is one heading and the part of the file it heads.
type Section struct {
	Heading
	// Raw is the heading's text as written, markup kept, without its `#`
	// markers or setext underline; a setext heading of several lines keeps
	// its line breaks.
	Raw string
	// End is where the section ends: the start of the next heading of the
	// same or a higher level (lower number), or the end of the file. Deeper
	// headings stay inside the section.
	End int
}

// BodyText is the section's body, heading excluded, with surrounding white
// space trimmed. src must be the file the outline was made from.
func (s Section) BodyText(src []byte) string {
	return strings.TrimSpace(string(src[s.Body:s.End]))
}

// ParseOutline finds the headings of the markdown file src exactly as Parse
// does (it is the same walk): ATX and setext headings, including those in
// block quotes and list items, and none inside fenced code blocks (``` or
// ~~~ of any length, closed only by a fence of the same character at least
// as long), indented code, HTML blocks or the frontmatter. A body over the
// parse budget has no sections and says why in Plain.
func ParseOutline(src []byte) Outline {
	s := string(src)
	p := scratchPool.Get().(*scratch)
	defer p.release()
	p.s, p.n = s, &Note{}
	h, ok, _ := FindHeader(s)
	bodyStart := h.Open
	if ok {
		bodyStart = h.Body
	}
	o := Outline{BodyOffset: bodyStart}
	if _, o.Plain = budget(src[bodyStart:]); o.Plain != "" {
		return o
	}
	p.lines(s)
	p.base, p.body = bodyStart, src[bodyStart:]
	p.outline = true
	doc := markdown.Parse(text.NewReader(p.body))
	p.blocks(doc)
	p.endBodies()
	hs := p.n.Headings
	o.Sections = make([]Section, len(hs))
	for i, h := range hs {
		end := len(s)
		for _, next := range hs[i+1:] {
			if next.Level <= h.Level {
				end = next.Offset
				break
			}
		}
		o.Sections[i] = Section{Heading: h, Raw: p.raws[i], End: end}
	}
	o.Closer = p.closer(doc)
	return o
}

// closer is what closes a top-level block that runs to the end of the
// body. (A block inside a list item or block quote ends with its container,
// so only a top-level one swallows what is appended after it.)
func (p *scratch) closer(doc ast.Node) string {
	switch c := doc.LastChild().(type) {
	case *ast.FencedCodeBlock:
		return p.openFence(c)
	case *ast.HTMLBlock:
		return p.openHTML(c)
	}
	return ""
}

// openFence is the marker of a fenced code block without a closing fence.
func (p *scratch) openFence(c *ast.FencedCodeBlock) string {
	s := p.s
	// Lines here are goldmark's: a lone '\r' ends none.
	start := strings.LastIndexByte(s[:min(p.base+c.Pos(), len(s))], '\n') + 1
	end := len(s)
	if i := strings.IndexByte(s[start:], '\n'); i >= 0 {
		end = start + i
	}
	// Pos is the opening fence's first marker byte, unless a tab before it
	// made goldmark count columns: then look for the marker on its line.
	at := min(p.base+c.Pos(), len(s))
	if at == len(s) || s[at] != '`' && s[at] != '~' {
		at = start + strings.IndexAny(s[start:end], "`~")
		if at < start {
			return ""
		}
	}
	n := 0
	for at+n < len(s) && s[at+n] == s[at] {
		n++
	}
	// Content lines run to the end of the body only when no fence closed
	// them; a closing fence is a line after them.
	rest := min(end+1, len(s))
	if lines := c.Lines(); lines.Len() > 0 {
		rest = p.base + lines.At(lines.Len()-1).Stop
	}
	if rest < len(s) {
		return ""
	}
	return s[at : at+n]
}

// htmlEnds are the end markers of the HTML blocks that run to one (types 1
// to 5 of CommonMark); any of the four tags closes a type 1 block.
var htmlEnds = map[ast.HTMLBlockType]string{
	ast.HTMLBlockType1: "</pre>",
	ast.HTMLBlockType2: "-->",
	ast.HTMLBlockType3: "?>",
	ast.HTMLBlockType4: ">",
	ast.HTMLBlockType5: "]]>",
}

// openHTML is the end marker of an HTML block still open, "" when it was
// closed (goldmark records no closing line when its first line closes it).
func (p *scratch) openHTML(c *ast.HTMLBlock) string {
	end, ok := htmlEnds[c.HTMLBlockType]
	if !ok || c.HasClosure() || c.Lines().Len() == 0 {
		return ""
	}
	line := c.Lines().At(0)
	first := strings.ToLower(p.s[p.base+line.Start : p.base+line.Stop])
	if c.HTMLBlockType == ast.HTMLBlockType1 {
		for _, tag := range [...]string{"</script>", "</pre>", "</style>", "</textarea>"} {
			if strings.Contains(first, tag) {
				return ""
			}
		}
	} else if strings.Contains(first, end) {
		return ""
	}
	return end
}
