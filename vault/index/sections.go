package index

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/margin-md/margin/vault/note"
)

// section is one row of the search table: the preamble of a note, a heading
// section, or a daily entry.
type section struct {
	start    int // byte offset of the heading line (or of the body, for the preamble)
	body     int // byte offset after the heading (its underline, for a setext heading); 0: the next line
	line     int
	bodyLine int // line of text's first byte
	heading  string
	title    string // note title and aliases, on the preamble only
	text     string
	listed   bool
	entry    *note.Entry
}

// sectionsOf splits n into sections. Daily entries are sections of their own
// and headings inside an entry stay part of it, so a hit in an entry points at
// the entry; elsewhere every heading starts a section. The first section is
// the preamble, which carries the note's title; an empty preamble is dropped
// (see the end).
// Offsets outside content are clamped: a hand-made or stale note must not
// make indexing panic.
func sectionsOf(n *note.Note, content []byte) []section {
	clamp := func(off int) int { return min(max(off, 0), len(content)) }
	secs := make([]section, 1, 1+len(n.Headings)+len(n.Entries))
	secs[0] = section{start: clamp(n.BodyOffset), line: max(n.BodyLine, 1), title: noteTitle(n)}

	entries := n.Entries
	for i, h := range n.Headings {
		// Emit the entries that begin before this heading.
		for len(entries) > 0 && entries[0].Start <= h.Offset {
			secs = append(secs, entrySection(&entries[0]))
			entries = entries[1:]
		}
		if insideEntry(n.Entries, h.Offset) {
			continue
		}
		secs = append(secs, section{start: clamp(h.Offset), body: clamp(h.Body), line: h.Line, heading: n.Headings[i].Text})
	}
	for i := range entries {
		secs = append(secs, entrySection(&entries[i]))
	}

	for i := range secs {
		s := &secs[i]
		end := len(content)
		if s.entry != nil {
			s.start, end = clamp(s.entry.Start), max(clamp(s.entry.End), clamp(s.entry.Start))
		} else if i+1 < len(secs) {
			end = max(clamp(secs[i+1].start), s.start)
		}
		from := s.start
		switch {
		case s.body > s.start: // skip the heading, underline and all: it is in the heading column
			from = min(s.body, end)
		case i > 0 || s.entry != nil:
			if nl := bytes.IndexByte(content[from:end], '\n'); nl >= 0 {
				from += nl + 1
			} else {
				from = end
			}
		}
		lead := from + len(content[from:end]) - len(bytes.TrimLeftFunc(content[from:end], unicode.IsSpace))
		s.bodyLine = s.line + bytes.Count(content[s.start:lead], []byte{'\n'})
		if s.entry == nil {
			s.text = strings.TrimSpace(string(content[from:end]))
		}
	}

	// A daily note with entries is listed by its entries; any other note by
	// its first section.
	if n.Kind == note.KindDaily && len(n.Entries) > 0 {
		for i := range secs {
			secs[i].listed = secs[i].entry != nil
		}
		// Most daily notes have no preamble, and their title is their date,
		// which date filters cover; an empty row would only cost indexing
		// time.
		if secs[0].text == "" {
			secs = secs[1:]
		}
		return secs
	}
	// An empty preamble (a note that opens with a heading) hands the title
	// to the first heading's section rather than cost a row of its own.
	if secs[0].text == "" && len(secs) > 1 {
		secs[1].title = secs[0].title
		secs = secs[1:]
	}
	secs[0].listed = true
	return secs
}

func entrySection(e *note.Entry) section {
	return section{start: e.Start, line: e.Line, heading: e.Heading, text: e.Text, entry: e}
}

// insideEntry reports whether off falls inside an entry (its own heading
// included).
func insideEntry(entries []note.Entry, off int) bool {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].End > off })
	return i < len(entries) && entries[i].Start <= off
}

// sectionAt returns the index of the section holding byte offset off.
func sectionAt(secs []section, off int) int {
	i := sort.Search(len(secs), func(i int) bool { return secs[i].start > off })
	return max(i-1, 0)
}

func noteTitle(n *note.Note) string {
	if len(n.Aliases) == 0 {
		return n.Title
	}
	return n.Title + "\n" + strings.Join(n.Aliases, "\n")
}

// taskOf returns the task fields of a task note, empty ones if the parser
// gave none, and nil for any other note, so that every note of kind task is
// listed and filtered as a task.
func taskOf(n *note.Note) *note.Task {
	if n.Kind != note.KindTask {
		return nil
	}
	if n.Task == nil {
		return &note.Task{}
	}
	return n.Task
}

// SectionMeta is one section the index stored for a note: its preamble
// (the text before its first heading), a heading's section up to the next
// heading of any level, or a daily entry.
type SectionMeta struct {
	Level   int    // the heading's level; 0 for the preamble
	Heading string // markup stripped ("" for the preamble); an entry's as written
	Line    int    // line of the heading, or of the body for the preamble
	Text    string // the body, heading excluded, trimmed
}

// NoteText is what the index stored of a note's text, so that a reader
// needs neither the file nor a markdown parser to quote it.
type NoteText struct {
	Properties string        // the frontmatter's fields, "key: value" a line; "" without
	Sections   []SectionMeta // in order
}

// Text returns the properties and sections stored for the note at path.
// The error wraps ErrNotFound when path is not an indexed note.
func (ix *Index) Text(ctx context.Context, path string) (NoteText, error) {
	var out NoteText
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return out, fmt.Errorf("reading the text of %s: %w", path, err)
	}
	defer tx.Rollback()
	var headings string
	var first, last int64
	err = tx.QueryRowContext(ctx, `SELECT n.headings, n.first_section, n.last_section, n.properties
		FROM files f JOIN notes n ON n.file_id = f.id WHERE f.path = ?`, path).Scan(&headings, &first, &last, &out.Properties)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return out, fmt.Errorf("reading the text of %s: %w", path, err)
	}
	var hs []HeadingMeta
	if err := json.Unmarshal([]byte(headings), &hs); err != nil {
		return out, fmt.Errorf("reading the text of %s: decoding headings: %w", path, err)
	}
	levels := make(map[int]int, len(hs)) // line → level
	for _, h := range hs {
		levels[h.Line] = h.Level
	}
	err = collect(ctx, tx, `SELECT line, heading, body FROM sections WHERE id BETWEEN ? AND ? ORDER BY id`, []any{first, last}, func(r *sql.Rows) error {
		var s SectionMeta
		err := r.Scan(&s.Line, &s.Heading, &s.Text)
		s.Level = levels[s.Line]
		out.Sections = append(out.Sections, s)
		return err
	})
	if err != nil {
		return NoteText{}, fmt.Errorf("reading the text of %s: %w", path, err)
	}
	return out, nil
}
