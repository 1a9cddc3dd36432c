package vectors

import (
	"context"
	"database/sql"
)

// Store is the vectors database and the in-memory codes Nearest scans. It
// is safe for concurrent use.
type Store struct {
	db *sql.DB
}

// Open opens (creating if needed) the vectors database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	panic("unimplemented")
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Nearest returns the k notes whose chunks are nearest to q (by cosine
// similarity), best first, each by its nearest chunk. allow, unless nil,
// is the paths of the notes it may return: notes outside it are skipped
// before ranking, so k allowed notes come back if k exist. q must have the
// current model's dimensions; ErrNoVectors when nothing is embedded.
func (s *Store) Nearest(ctx context.Context, q []float32, k int, allow []string) ([]Match, error) {
	panic("unimplemented")
}

// Vectors returns the vectors of the note at path, one per embedded chunk
// in the note's order (dequantized: close to, not equal to, what the model
// gave). ErrNotFound when it has none.
func (s *Store) Vectors(ctx context.Context, path string) ([][]float32, error) {
	panic("unimplemented")
}

// Related returns the k notes nearest to the note at path, itself
// excluded: for each other note, its best similarity to any of path's
// chunks. allow is as for Nearest.
func (s *Store) Related(ctx context.Context, path string, k int, allow []string) ([]Match, error) {
	panic("unimplemented")
}

// Progress reads the progress the last queue on this database recorded,
// for a process that runs none (margin status, doctor); State is Stopped
// unless another process's queue is at work.
func (s *Store) Progress(ctx context.Context) (Progress, error) {
	panic("unimplemented")
}
