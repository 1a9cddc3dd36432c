package vectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/margin-md/margin/vault/store"
)

// schema holds the migration steps of the vectors database. Append, never
// edit.
var schema = []string{`
-- One row per embedding model the queue has used; state.model is the
-- current one. A vector's dimensions are its model's.
CREATE TABLE models (
	id          INTEGER PRIMARY KEY,
	fingerprint TEXT    NOT NULL UNIQUE,
	dims        INTEGER NOT NULL DEFAULT 0 -- 0 until its first vector
);

-- The notes the queue has chunked, by path. version is the source's
-- version the chunks were made from; pending is set while some chunk has
-- no vector of the current model, so the queue finds its work by mtime
-- without looking at every chunk.
CREATE TABLE notes (
	id       INTEGER PRIMARY KEY,
	path     TEXT    NOT NULL UNIQUE,
	mtime_ns INTEGER NOT NULL,
	version  TEXT    NOT NULL,
	pending  INTEGER NOT NULL
);
CREATE INDEX notes_pending ON notes(mtime_ns) WHERE pending = 1;

-- A note's chunks, in order; hash is the chunk text's (see hashOf), which
-- the queue re-reads from the source when it embeds: no text is kept here.
CREATE TABLE chunks (
	note_id INTEGER NOT NULL,
	ord     INTEGER NOT NULL,
	line    INTEGER NOT NULL,
	heading TEXT    NOT NULL,
	hash    BLOB    NOT NULL,
	tokens  INTEGER NOT NULL, -- estimated, for the daily budget
	PRIMARY KEY (note_id, ord)
) WITHOUT ROWID;
CREATE INDEX chunks_hash ON chunks(hash);

-- Content-addressed: one vector per chunk text and model, whichever notes
-- hold that text. q8 is the unit vector's int8 components (times scale),
-- bits its sign bits, little-endian words of 64 dimensions.
CREATE TABLE vectors (
	id    INTEGER PRIMARY KEY,
	model INTEGER NOT NULL,
	hash  BLOB    NOT NULL,
	scale REAL    NOT NULL,
	q8    BLOB    NOT NULL,
	bits  BLOB    NOT NULL,
	UNIQUE (model, hash)
);

-- The queue's state, for a restart and for other processes (see
-- Store.Progress): model, model_before, queue_state, queue_note,
-- last_error, resumes.
CREATE TABLE state (
	key   TEXT PRIMARY KEY,
	value ANY
) WITHOUT ROWID;

-- What the queue embedded each local day, for the daily budget.
CREATE TABLE spent (
	day    TEXT    PRIMARY KEY, -- YYYY-MM-DD
	chunks INTEGER NOT NULL,
	tokens INTEGER NOT NULL
) WITHOUT ROWID;
`, `
-- How many chunks there are and how many of them have a vector of the
-- current model, kept by the triggers below in the transaction of each
-- write, so that the embedding's progress (margin status, doctor) reads
-- one row instead of joining every chunk with the vectors (20 ms at 10k
-- notes). Triggers rather than the queue's writes, so that no write path
-- can forget them.
CREATE TABLE tally (
	id       INTEGER PRIMARY KEY CHECK (id = 1),
	chunks   INTEGER NOT NULL,
	embedded INTEGER NOT NULL
);
INSERT INTO tally (id, chunks, embedded)
	SELECT 1, count(*), count(v.id) FROM chunks c
	LEFT JOIN vectors v ON v.model = (SELECT value FROM state WHERE key = 'model') AND v.hash = c.hash;

CREATE TRIGGER tally_chunk_added AFTER INSERT ON chunks BEGIN
	UPDATE tally SET chunks = chunks + 1, embedded = embedded + EXISTS (SELECT 1 FROM vectors
		WHERE model = (SELECT value FROM state WHERE key = 'model') AND hash = NEW.hash);
END;
CREATE TRIGGER tally_chunk_deleted AFTER DELETE ON chunks BEGIN
	UPDATE tally SET chunks = chunks - 1, embedded = embedded - EXISTS (SELECT 1 FROM vectors
		WHERE model = (SELECT value FROM state WHERE key = 'model') AND hash = OLD.hash);
END;
CREATE TRIGGER tally_vector_added AFTER INSERT ON vectors
	WHEN NEW.model = (SELECT value FROM state WHERE key = 'model') BEGIN
	UPDATE tally SET embedded = embedded + (SELECT count(*) FROM chunks WHERE hash = NEW.hash);
END;
CREATE TRIGGER tally_vector_deleted AFTER DELETE ON vectors
	WHEN OLD.model = (SELECT value FROM state WHERE key = 'model') BEGIN
	UPDATE tally SET embedded = embedded - (SELECT count(*) FROM chunks WHERE hash = OLD.hash);
END;
-- useModel sets the model with INSERT OR REPLACE: an insert. A model
-- used before may have vectors left (sweep keeps them until the new one
-- is complete), so this is a full count, once per model change.
CREATE TRIGGER tally_model AFTER INSERT ON state WHEN NEW.key = 'model' BEGIN
	UPDATE tally SET embedded = (SELECT count(*) FROM chunks c
		WHERE EXISTS (SELECT 1 FROM vectors v WHERE v.model = NEW.value AND v.hash = c.hash));
END;
`}

// Store is the vectors database and the in-memory codes Nearest scans. It
// is safe for concurrent use.
type Store struct {
	db *sql.DB

	loading sync.Mutex // held by the one caller loading the codes
	// reloading is held from reload's read of notes' vectors to their
	// set in mem, so that of two reloads of a note the later read wins.
	reloading sync.Mutex

	mu  sync.RWMutex // guards the fields below
	mem *codes       // of the current model's vectors; nil before it has any
	// loaded is set once mem holds the current model's vectors: the first
	// search reads them (see codes), not Open, so that a process that only
	// reports progress or embeds (margin status, doctor, embed) never
	// waits for them.
	loaded bool
	// written holds the notes written while !loaded, which a load under
	// way may or may not have seen: it reads them again once done. (Loading
	// again instead never finished while the queue kept writing: a load
	// of 400,000 chunks takes longer than the queue's batches.)
	written map[int64]bool
	// loadedHook, if set (by tests), runs between a load's read of the
	// codes and their install, where the queue's writes may land.
	loadedHook func()
	// model is the current model: its id in models, fingerprint and dims.
	model model
}

type model struct {
	id          int64
	fingerprint string
	dims        int
}

// Open opens (creating if needed) the vectors database at path. The codes
// of the current model's vectors are read into memory by the first
// Nearest or Related, not here: 0.5 s for 50,000 chunks, 9 s for 500,000
// on a busy two-core machine, which a process that only reports progress
// or embeds never pays, and a server pays off the path of its first
// requests.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := store.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("opening vectors: %w", err)
	}
	if err := store.Migrate(ctx, db, "vectors", schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening vectors: %w", err)
	}
	s := &Store{db: db}
	if err := s.load(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening vectors: %w", err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Check verifies that the database file is sound, for margin doctor.
func (s *Store) Check(ctx context.Context) error {
	if err := store.Check(ctx, s.db); err != nil {
		return fmt.Errorf("vectors database: %w", err)
	}
	return nil
}

// load reads the current model; its codes are read when first needed. A
// model with no vectors yet (dims 0) has no codes to read.
func (s *Store) load(ctx context.Context) error {
	m, err := currentModel(ctx, s.db)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.model, s.mem, s.loaded, s.written = m, nil, m.dims == 0, nil
	s.mu.Unlock()
	return nil
}

// codes reads the current model's codes into memory unless they are.
func (s *Store) codes(ctx context.Context) error {
	s.mu.RLock()
	loaded := s.loaded
	s.mu.RUnlock()
	if loaded {
		return nil
	}
	s.loading.Lock()
	defer s.loading.Unlock()
	for {
		s.mu.RLock()
		m, loaded := s.model, s.loaded
		s.mu.RUnlock()
		if loaded {
			return nil
		}
		mem, err := loadCodes(ctx, s.db, m)
		if err != nil {
			return fmt.Errorf("loading vectors: %w", err)
		}
		if s.loadedHook != nil {
			s.loadedHook()
		}
		s.mu.Lock()
		var written []int64
		if s.model == m { // else the model changed meanwhile: load its codes
			s.mem, s.loaded = mem, true
			for id := range s.written {
				written = append(written, id)
			}
			s.written = nil
		}
		s.mu.Unlock()
		if err := s.reload(ctx, written); err != nil {
			return fmt.Errorf("loading vectors: %w", err)
		}
	}
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// currentModel reads state.model; the zero model when none was set.
func currentModel(ctx context.Context, q querier) (model, error) {
	var m model
	err := q.QueryRowContext(ctx, `SELECT m.id, m.fingerprint, m.dims FROM state s JOIN models m ON m.id = s.value WHERE s.key = 'model'`).
		Scan(&m.id, &m.fingerprint, &m.dims)
	if errors.Is(err, sql.ErrNoRows) {
		return model{}, nil
	}
	if err != nil {
		return model{}, fmt.Errorf("reading the model: %w", err)
	}
	return m, nil
}

func collect(ctx context.Context, q querier, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
