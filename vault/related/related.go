// Package related finds the notes near a note by meaning that it does not
// already link to or from: the links a person might be missing. Nearness
// is the vectors store's (a note's best chunk against any of this note's
// chunks); links are the index's, resolved as backlinks are.
//
// It owns that rule and nothing else: it must not embed, rank keyword
// hits or read the vault's files.
package related

import (
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/vectors"
)

// Note is a note related to another, by its chunk nearest to that note.
type Note struct {
	Path    string  `json:"path"`
	Heading string  `json:"heading"` // the nearest chunk's heading path, " > " between levels; "" for the preamble
	Line    int     `json:"line"`    // that section's line
	Score   float32 `json:"score"`   // cosine similarity, -1 to 1
}

// Find returns up to limit notes nearest to the note at path, best first,
// leaving out the note itself, the notes it links to or that link to it,
// margin's outputs (reports, journals, change sets) and the vault's
// templates: no note a person links. A template is near every note made
// from it; left in, it was the first related note of each person's note
// of a public vault. The error wraps index.ErrNotFound for a path that is not an indexed
// note, vectors.ErrNotFound while the note has no vectors, and
// vectors.ErrNoVectors while nothing is embedded.
func Find(ctx context.Context, ix *index.Index, vs *vectors.Store, path string, limit int) ([]Note, error) {
	except, err := linkedWith(ctx, ix, path)
	if err != nil {
		return nil, err
	}
	unlinkable, err := ix.NotesOfKind(ctx, note.KindMargin, note.KindTemplate)
	if err != nil {
		return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	ms, err := vs.Related(ctx, path, limit, append(except, unlinkable...))
	if err != nil {
		return nil, err
	}
	out := make([]Note, len(ms))
	for i, m := range ms {
		out[i] = Note{Path: m.Path, Heading: m.Heading, Line: m.Line, Score: m.Score}
	}
	return out, nil
}

// linkedWith is the notes path links to, by the index's resolution of
// each link, and the notes that link to path.
func linkedWith(ctx context.Context, ix *index.Index, path string) ([]string, error) {
	meta, err := ix.Note(ctx, path)
	if err != nil {
		return nil, err
	}
	var linked []string
	for _, l := range meta.Links {
		to, err := ix.ResolveLink(ctx, path, l.Target)
		if errors.Is(err, index.ErrNotFound) {
			continue // a link to no note, or to several, rules none out
		}
		if err != nil {
			return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
		}
		linked = append(linked, to)
	}
	back, err := ix.Backlinks(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	for _, b := range back {
		linked = append(linked, b.From)
	}
	return linked, nil
}
