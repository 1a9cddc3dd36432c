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
// leaving out the note itself and the notes it links to or that link to
// it. The error wraps index.ErrNotFound for a path that is not an indexed
// note, vectors.ErrNotFound while the note has no vectors, and
// vectors.ErrNoVectors while nothing is embedded.
func Find(ctx context.Context, ix *index.Index, vs *vectors.Store, path string, limit int) ([]Note, error) {
	linked, err := linkedWith(ctx, ix, path)
	if err != nil {
		return nil, err
	}
	// Ask for as many more as could be left out, so that limit remain.
	ms, err := vs.Related(ctx, path, limit+len(linked), nil)
	if err != nil {
		return nil, err
	}
	out := []Note{}
	for _, m := range ms {
		if linked[m.Path] {
			continue
		}
		out = append(out, Note{Path: m.Path, Heading: m.Heading, Line: m.Line, Score: m.Score})
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// linkedWith is the set of notes path links to, by the index's resolution
// of each link, and the notes that link to path.
func linkedWith(ctx context.Context, ix *index.Index, path string) (map[string]bool, error) {
	meta, err := ix.Note(ctx, path)
	if err != nil {
		return nil, err
	}
	linked := map[string]bool{}
	for _, l := range meta.Links {
		to, err := ix.ResolveLink(ctx, path, l.Target)
		if errors.Is(err, index.ErrNotFound) {
			continue // a link to no note, or to several, rules none out
		}
		if err != nil {
			return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
		}
		linked[to] = true
	}
	back, err := ix.Backlinks(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	for _, b := range back {
		linked[b.From] = true
	}
	return linked, nil
}
