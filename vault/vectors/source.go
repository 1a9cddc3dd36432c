package vectors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/margin-md/margin/vault/index"
)

// ErrGone is what a Source's Note returns (wrapped) for a note that is no
// longer in the vault: the queue forgets it.
var ErrGone = errors.New("note is gone")

// Source gives the queue the vault's notes and their sections.
type Source interface {
	// Notes lists every note to embed, in any order.
	Notes(ctx context.Context) ([]NoteStamp, error)
	// Note returns the note at path; an error wrapping ErrGone when it is
	// no longer there.
	Note(ctx context.Context, path string) (Note, error)
}

// NoteStamp says which version of a note the source holds.
type NoteStamp struct {
	Path    string
	Mtime   time.Time // the queue embeds the most recently edited notes first
	Version string    // changes whenever the note's text does (a content hash)
}

// Note is a note's text as chunks are made of it.
type Note struct {
	Title    string
	Sections []Section
}

// Section is the preamble of a note, a heading's section or a daily entry.
type Section struct {
	Headings []string // the heading path: the headings above it, then its own; none for the preamble
	Line     int
	Text     string // the body, heading excluded
}

// FromIndex is a Source over the note index, whose sections are the ones
// keyword search points at; the index re-parses nothing to give them.
func FromIndex(ix *index.Index) Source { return indexSource{ix} }

type indexSource struct{ ix *index.Index }

// Notes lists the indexed notes; Version is the file's content hash.
func (s indexSource) Notes(ctx context.Context) ([]NoteStamp, error) {
	var out []NoteStamp
	err := s.ix.Indexed(ctx, func(p string, st index.FileStat) {
		out = append(out, NoteStamp{Path: p, Mtime: time.Unix(0, st.MtimeNS), Version: st.Hash})
	})
	return out, err
}

// Note returns the note's title and sections as the index stored them,
// each section under the path of headings above it.
func (s indexSource) Note(ctx context.Context, path string) (Note, error) {
	meta, err := s.ix.Note(ctx, path)
	if err == nil {
		var text index.NoteText
		if text, err = s.ix.Text(ctx, path); err == nil {
			return noteOf(meta.Title, text), nil
		}
	}
	if errors.Is(err, index.ErrNotFound) {
		return Note{}, fmt.Errorf("%s: %w", path, ErrGone)
	}
	return Note{}, err
}

// noteOf builds a Note from the index's sections: a heading's path is the
// nearest heading of each lower level above it, then its own.
func noteOf(title string, text index.NoteText) Note {
	n := Note{Title: title}
	type open struct {
		level int
		text  string
	}
	var stack []open
	for _, sec := range text.Sections {
		if sec.Heading != "" {
			// An entry's heading has no level in the index: it is a
			// section under the note, not under the heading before it.
			level := sec.Level
			if level == 0 {
				level = 7
				stack = stack[:0]
			}
			for len(stack) > 0 && stack[len(stack)-1].level >= level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, open{level, sec.Heading})
		}
		hs := make([]string, 0, len(stack))
		for _, o := range stack {
			hs = append(hs, o.text)
		}
		if sec.Heading == "" {
			hs = nil
		}
		n.Sections = append(n.Sections, Section{Headings: hs, Line: sec.Line, Text: sec.Text})
	}
	return n
}
