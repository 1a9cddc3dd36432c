package note

import (
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Options says how to recognise the vault's special notes. The caller fills
// in the configured defaults; the zero value recognises neither daily notes
// nor task folders.
type Options struct {
	// Daily is the daily-notes folder and file-name format (see
	// ParseMoment). A zero Format means no
	// daily notes.
	Daily DailyFormat
	// TaskFolders are vault-relative folders ("Tasks") whose notes, sub-folders
	// included, are task notes.
	TaskFolders []string
	// TaskTags mark task notes besides `task`, as the TaskNotes plugin's
	// taskTag does: the tag itself or a tag below it (`todo/work`).
	TaskTags []string
	// TaskProperty marks task notes by a frontmatter property, as TaskNotes
	// does when it identifies tasks by property; zero marks none.
	TaskProperty TaskProperty
	// TemplateFolders hold Obsidian's and Templater's templates: their notes
	// are templates, never tasks or daily notes.
	TemplateFolders []string
	// OutputFolder is where margin writes its own files ("Margin"): its
	// notes are margin's, with or without a `margin:` key.
	OutputFolder string
}

// markdown is shared by every Parse: building a goldmark parser sorts and
// indexes its sub-parsers, and Parse is safe for concurrent use.
var markdown = goldmark.DefaultParser()

// Parse parses the markdown file at the vault-relative path with contents
// src. It never fails as a whole: broken frontmatter is reported in
// FrontmatterError and the body still parses; invalid UTF-8 is kept as
// written; a header or body whose markup would cost more than the parse
// budget is not parsed (FrontmatterError, Plain). Every string in the Note
// shares memory with one copy of src.
func Parse(notePath string, src []byte, opts Options) *Note {
	s := string(src)
	n := &Note{Path: notePath, BodyLine: 1}
	p := scratchPool.Get().(*scratch)
	defer p.release()
	p.s, p.n = s, n

	h, hasHeader, _ := FindHeader(s)
	ys, ye := h.Start, h.End
	bodyStart := h.Open // a byte-order mark would hide a first-line heading
	if hasHeader {
		bodyStart = h.Body
	}
	// A body over the parse budget is kept as plain text: only the header
	// needs line numbers then.
	_, n.Plain = budget(src[bodyStart:])
	if n.Plain == "" {
		p.lines(s)
	} else {
		p.lines(s[:bodyStart])
	}
	if hasHeader {
		n.BodyOffset, n.BodyLine = h.Body, p.lineOf(h.Body)
		// yaml.v3 is as costly as goldmark per line; the header has a
		// budget as the body does.
		if _, why := headerBudget(src[ys:ye]); why != "" {
			n.FrontmatterError = "not read: " + why
		} else {
			fm, err := decodeFrontmatter(s[ys:ye], p.lineOf(ys))
			if err != nil && opts.isTemplate(notePath) {
				fm, err = templateFrontmatter(s[ys:ye], fm, err)
			}
			if err != nil {
				n.FrontmatterError = err.Error()
				fm = salvageFrontmatter(s[ys:ye])
			}
			if fm != nil {
				first := p.lineOf(ys)
				for i := range fm.Fields {
					fm.Fields[i].Line += first - 1
				}
			}
			n.Frontmatter = fm
		}
	}
	fm := n.Frontmatter

	n.Title = strings.TrimSpace(fm.String("title"))
	if n.Title == "" {
		n.Title = stem(notePath)
	}
	tags := frontmatterTags(fm)
	for _, t := range tags {
		p.addTag(t)
	}
	n.Kind, n.Date, n.MarginKind = kindOf(notePath, fm, tags, opts)
	n.Aliases = aliases(fm)

	p.base, p.body = bodyStart, src[bodyStart:]
	if n.Plain == "" {
		p.blocks(markdown.Parse(text.NewReader(p.body)))
		p.endBodies()
	}

	if !slices.IsSortedFunc(n.Links, byOffset) {
		slices.SortStableFunc(n.Links, byOffset)
	}
	if n.Kind == KindDaily {
		p.entries()
	}
	if n.Kind == KindTask {
		n.Task = taskOf(fm, n.Title, tags)
	}
	return n
}

func byOffset(a, b Link) int { return a.Offset - b.Offset }

// scratch is the per-call working state of Parse, pooled so that a parse
// reuses the buffers of the last one.
type scratch struct {
	s    string
	n    *Note
	base int    // offset of the text goldmark parsed within s
	body []byte // that text, as goldmark saw it

	newlines []int               // offsets of every '\n' in s, for line numbers
	excluded []span              // code spans, autolinks, raw HTML and link destinations of the current block
	raws     []string            // per Note.Headings entry: its text as written
	outline  bool                // headings only (ParseOutline)
	tagKeys  map[string]struct{} // folded Note.Tags, once there are many (see addTag)
	buf      []byte
}

type span struct{ start, end int }

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// maxPooledLines keeps one huge file (the size cap is 5 MiB) from pinning
// its line index in the pool; ordinary notes have a few hundred lines.
const maxPooledLines = 1 << 14

func (p *scratch) release() {
	p.s, p.n, p.body, p.outline = "", nil, nil, false
	if cap(p.newlines) > maxPooledLines {
		p.newlines = nil
	}
	p.excluded = p.excluded[:0]
	if len(p.tagKeys) > maxPooledLines {
		p.tagKeys = nil
	}
	clear(p.tagKeys)
	p.raws = p.raws[:0]
	p.buf = p.buf[:0]
	clear(p.raws[:cap(p.raws)]) // drop references into the parsed source
	scratchPool.Put(p)
}

// lines records where each line ends. Like LSP, margin counts "\n", "\r\n"
// and a lone "\r" as line ends, so that lines agree with the editor's.
func (p *scratch) lines(s string) {
	p.newlines = p.newlines[:0]
	loneCR := strings.IndexByte(s, '\r') >= 0
	for i := 0; ; {
		// Not both: looking for a '\n' that is far away at every '\r'
		// costs the square of the file.
		var j int
		if loneCR {
			j = strings.IndexAny(s[i:], "\r\n")
		} else {
			j = strings.IndexByte(s[i:], '\n')
		}
		if j < 0 {
			return
		}
		i += j
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++ // one line end for "\r\n", recorded at its '\n'
		}
		p.newlines = append(p.newlines, i)
		i++
	}
}

// lineOf is the 1-based line of byte offset off.
func (p *scratch) lineOf(off int) int {
	i, _ := slices.BinarySearch(p.newlines, off)
	return i + 1
}

// lineStart is the offset of the line holding off; lineEnd is where that
// line ends, before its "\n", "\r\n" or "\r".
func lineStart(s string, off int) int {
	return strings.LastIndexAny(s[:off], "\r\n") + 1
}

func lineEnd(s string, off int) int {
	if end := strings.IndexAny(s[off:], "\r\n"); end >= 0 {
		return off + end
	}
	return len(s)
}

// nextLine is the offset of the line after the one holding off.
func nextLine(s string, off int) int {
	end := lineEnd(s, off)
	if strings.HasPrefix(s[end:], "\r\n") {
		return end + 2
	}
	return min(end+1, len(s))
}

func stem(p string) string {
	base := path.Base(p)
	if ext := path.Ext(base); strings.EqualFold(ext, ".md") {
		base = base[:len(base)-len(ext)]
	}
	return base
}

// frontmatterTags reads `tags` (and Obsidian's older `tag`) as a list or a
// separated string, without leading '#'.
func frontmatterTags(fm *Frontmatter) []string {
	var tags []string
	for _, key := range [...]string{"tags", "tag"} {
		for _, t := range fm.Strings(key) {
			if t = strings.TrimLeft(t, "#"); t != "" {
				tags = append(tags, t)
			}
		}
	}
	return tags
}

// kindOf applies the rules of SPEC §3.1 in order: margin's own files, then
// templates, then tasks, then daily notes.
func kindOf(notePath string, fm *Frontmatter, tags []string, opts Options) (kind Kind, date, marginKind string) {
	if v, ok := fm.Get("margin"); ok {
		return KindMargin, "", strings.TrimSpace(scalarString(v))
	}
	if inFolder(notePath, opts.OutputFolder) {
		return KindMargin, "", ""
	}
	for _, folder := range opts.TemplateFolders {
		if inFolder(notePath, folder) {
			return KindTemplate, "", ""
		}
	}
	if strings.EqualFold(strings.TrimSpace(fm.String("type")), "task") || containsFold(tags, "task") ||
		hasTagUnder(tags, opts.TaskTags) || opts.TaskProperty.marks(fm) {
		return KindTask, "", ""
	}
	for _, folder := range opts.TaskFolders {
		if inFolder(notePath, folder) {
			return KindTask, "", ""
		}
	}
	if d, ok := opts.Daily.Date(notePath); ok {
		return KindDaily, d, ""
	}
	return KindNote, "", ""
}

// TaskProperty is a frontmatter property whose value marks a task note
// (TaskNotes' taskPropertyName and taskPropertyValue: `isTask: true`,
// `category: "[[Task]]"`).
type TaskProperty struct{ Name, Value string }

// marks reports whether fm holds the property with the value, or a list
// holding it. Values compare as written, as TaskNotes compares them.
func (p TaskProperty) marks(fm *Frontmatter) bool {
	if p.Name == "" || p.Value == "" {
		return false
	}
	v, _ := fm.Get(p.Name)
	whole := func(s string) []string { return []string{strings.TrimSpace(s)} }
	return slices.Contains(listValue(v, whole), strings.TrimSpace(p.Value))
}

// hasTagUnder reports whether a tag is one of marks or nested below one.
func hasTagUnder(tags, marks []string) bool {
	for _, m := range marks {
		for _, t := range tags {
			if strings.EqualFold(t, m) || len(t) > len(m) && t[len(m)] == '/' && strings.EqualFold(t[:len(m)], m) {
				return true
			}
		}
	}
	return false
}

// inFolder reports whether the vault path p lies under folder, compared
// case-insensitively because vaults move between case-insensitive file
// systems and the configuration is typed by hand.
func inFolder(p, folder string) bool {
	folder = strings.Trim(folder, "/")
	if folder == "" || folder == "." {
		return false
	}
	return len(p) > len(folder) && p[len(folder)] == '/' && strings.EqualFold(p[:len(folder)], folder)
}

func aliases(fm *Frontmatter) []string {
	for _, key := range [...]string{"aliases", "alias"} {
		if v, ok := fm.Get(key); ok {
			return listValue(v, splitComma)
		}
	}
	return nil
}

// tagScan is how many tags addTag compares one by one; past it, a set of
// folded tags keeps a note of thousands of tags from costing their square.
const tagScan = 16

func (p *scratch) addTag(t string) {
	t = strings.TrimRight(strings.TrimSpace(t), "/")
	if t == "" {
		return
	}
	tags := p.n.Tags
	if len(tags) < tagScan {
		for _, have := range tags {
			if strings.EqualFold(have, t) {
				return
			}
		}
		p.n.Tags = append(tags, t)
		return
	}
	if p.tagKeys == nil {
		p.tagKeys = make(map[string]struct{}, 2*tagScan)
	}
	if len(p.tagKeys) == 0 {
		for _, have := range tags {
			p.tagKeys[foldTag(have)] = struct{}{}
		}
	}
	k := foldTag(t)
	if _, ok := p.tagKeys[k]; ok {
		return
	}
	p.tagKeys[k] = struct{}{}
	p.n.Tags = append(tags, t)
}

// foldTag is the key under which tags that differ only in case meet.
func foldTag(t string) string { return strings.ToLower(strings.ToUpper(t)) }

// blocks walks the block structure. Code blocks and HTML blocks are skipped
// whole: nothing in them is a heading, link, tag or checklist item. For
// ParseOutline (p.outline) it records the headings only.
// endBodies keeps each heading's body from beginning past the next
// heading (or the end of the file): a setext underline is looked for on
// the line after the heading, which may already be the next one.
func (p *scratch) endBodies() {
	hs := p.n.Headings
	for i := range hs {
		end := len(p.s)
		if i+1 < len(hs) {
			end = hs[i+1].Offset
		}
		hs[i].Body = min(hs[i].Body, max(end, hs[i].Offset))
	}
}

func (p *scratch) blocks(parent ast.Node) {
	for c := parent.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Heading:
			p.heading(c)
			if !p.outline {
				p.inlines(c)
			}
		case *ast.Paragraph, *ast.TextBlock:
			if !p.outline {
				p.inlines(c)
			}
		case *ast.ListItem:
			if !p.outline {
				p.listItem(c)
			}
			p.blocks(c)
		case *ast.FencedCodeBlock, *ast.CodeBlock, *ast.HTMLBlock, *ast.LinkReferenceDefinition:
		default:
			p.blocks(c)
		}
	}
}

func (p *scratch) heading(h *ast.Heading) {
	s := p.s
	lines := h.Lines()
	var raw string
	var at, body int // at is a byte on the heading's (first) line
	if lines.Len() > 0 {
		first, last := lines.At(0), lines.At(lines.Len()-1)
		at = p.base + first.Start
		raw = strings.TrimSpace(s[at : p.base+last.Stop])
		body = nextLine(s, p.base+last.Start)
		if strings.IndexByte(s[lineStart(s, at):at], '#') < 0 {
			body = nextLine(s, body) // a setext heading ends with its underline
		}
	} else {
		// An empty ATX heading. Goldmark counts a tab before it in columns,
		// not bytes, so Pos can overshoot its '#'.
		at = min(p.base+h.Pos(), len(s))
		if at == len(s) || s[at] != '#' {
			at = max(p.base+strings.LastIndexByte(s[p.base:at], '#'), p.base)
		}
		body = nextLine(s, at)
	}
	start := lineStart(s, at)
	p.n.Headings = append(p.n.Headings, Heading{
		Level:  h.Level,
		Text:   p.plainText(h),
		Line:   p.lineOf(start),
		Offset: start,
		Body:   body,
	})
	p.raws = append(p.raws, raw)
}

// plainText is the inline text of a heading with markup stripped.
func (p *scratch) plainText(n ast.Node) string {
	if t, ok := n.FirstChild().(*ast.Text); ok && t.NextSibling() == nil {
		return strings.TrimSpace(p.s[p.base+t.Segment.Start : p.base+t.Segment.Stop])
	}
	p.buf = p.appendText(p.buf[:0], n)
	return strings.TrimSpace(string(p.buf))
}

func (p *scratch) appendText(buf []byte, n ast.Node) []byte {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			buf = append(buf, p.s[p.base+c.Segment.Start:p.base+c.Segment.Stop]...)
			if c.SoftLineBreak() || c.HardLineBreak() {
				buf = append(buf, ' ')
			}
		case *ast.String:
			buf = append(buf, c.Value...)
		case *ast.AutoLink:
			buf = append(buf, c.Label(p.body)...)
		case *ast.RawHTML:
		default:
			buf = p.appendText(buf, c)
		}
	}
	return buf
}
