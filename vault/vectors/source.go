package vectors

import (
	"context"
	"errors"
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

func (s indexSource) Notes(ctx context.Context) ([]NoteStamp, error) { panic("unimplemented") }

func (s indexSource) Note(ctx context.Context, path string) (Note, error) { panic("unimplemented") }
