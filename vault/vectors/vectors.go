// Package vectors keeps margin's note embeddings, in a database file of its
// own beside the index (FileName in the state dir): each note's chunks (one
// or more per section, prefixed with the note's title and heading path),
// one vector per chunk text and model, and the queue that embeds what is
// missing in the background.
//
// Vectors are content-addressed: a vector is keyed by the hash of its
// chunk's text and the embedder's fingerprint (provider, model,
// dimensions), never by a note or a section. The index can be deleted and
// rebuilt, a note moved or a section edited elsewhere in its note, and
// only chunks whose text changed are embedded again; a new model
// re-embeds everything, and Progress says so.
//
// Nearest neighbours are found in memory over binary codes (one sign bit
// a dimension, 48 bytes a chunk at 384 dimensions) and the best candidates
// rescored with the int8 vectors read back from the database, so memory
// stays flat (a process holding 500,000 chunks peaked at 105 MB, see
// BenchmarkPeakRSS) where float vectors alone would take 770 MB; vec0, the
// alternative, scans its table in SQLite for every query, 17 (bit) to 63
// (float) times slower at 50,000 chunks (see BenchmarkNearest).
//
// It owns that file and its tables. It must not read the vault or parse
// markdown: a Source gives it notes' sections (FromIndex reads them from
// the index), and an Embedder turns text into vectors. It must not decide
// ranking: callers fuse its matches with keyword hits.
package vectors

import (
	"context"
	"errors"
)

// FileName is the vectors database's name in margin's state dir. Unlike
// the index it cannot be rebuilt without the model, so it lives in a file
// of its own that an index rebuild leaves alone.
const FileName = "vectors.db"

// Embedder turns texts into vectors, one per text, in order. llm.Client
// implements it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Fingerprint names the provider, model and dimensions, e.g.
	// "ollama/embeddinggemma/768": vectors of different fingerprints never
	// meet, and a new fingerprint re-embeds every chunk.
	Fingerprint() string
	// MaxTokens is the most tokens one text may hold; chunks are cut to fit.
	MaxTokens() int
}

// ErrNoVectors is returned by Nearest and Related while no vector of the
// current model exists (no model, or nothing embedded yet): the caller
// falls back to keyword search.
var ErrNoVectors = errors.New("no vectors")

// ErrNotFound is returned by Vectors and Related for a note with no
// embedded chunks.
var ErrNotFound = errors.New("note has no vectors")

// Match is one note found near a query vector, by its nearest chunk.
type Match struct {
	Path    string  // the note
	Chunk   int     // the chunk's position in the note, from 0
	Line    int     // line of its section's heading (of the body, for the preamble)
	Heading string  // its section's heading path, " > " between levels; "" for the preamble
	Score   float32 // cosine similarity of the chunk to the query, -1 to 1
}
