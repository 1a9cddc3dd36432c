package vectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// The queue's writes. Each commits in one transaction, so a kill loses
// at most the transaction under way and never leaves a half-written note
// or batch; the in-memory codes follow each commit.

// useModel makes fingerprint the current model. When it was another, every
// note becomes pending again and the old model is recorded as
// model_before, until the queue has re-embedded everything (see record).
// It returns that old model while one is recorded, a change made by an
// earlier run included; "" otherwise.
func (s *Store) useModel(ctx context.Context, fingerprint string) (before string, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("setting the model: %w", err)
	}
	defer tx.Rollback()
	old, err := currentModel(ctx, tx)
	if err != nil {
		return "", err
	}
	if old.id != 0 && old.fingerprint == fingerprint {
		err := tx.QueryRowContext(ctx, `SELECT value FROM state WHERE key = 'model_before'`).Scan(&before)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return before, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO models (fingerprint) VALUES (?) ON CONFLICT DO NOTHING`, fingerprint); err != nil {
		return "", fmt.Errorf("setting the model: %w", err)
	}
	stmts := []struct {
		q    string
		args []any
	}{
		{`INSERT OR REPLACE INTO state (key, value) SELECT 'model', id FROM models WHERE fingerprint = ?`, []any{fingerprint}},
		{`UPDATE notes SET pending = 1`, nil},
	}
	if old.id != 0 {
		stmts = append(stmts, struct {
			q    string
			args []any
		}{`INSERT OR REPLACE INTO state (key, value) VALUES ('model_before', ?)`, []any{old.fingerprint}})
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return "", fmt.Errorf("setting the model: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("setting the model: %w", err)
	}
	if err := s.load(ctx); err != nil {
		return "", fmt.Errorf("setting the model: %w", err)
	}
	return old.fingerprint, nil
}

// noteRow is what the database holds of a chunked note.
type noteRow struct {
	id      int64
	path    string
	version string
}

// stale returns the notes of stamps, sorted by path, whose version the
// database does not hold, and the ids of the notes it holds that stamps
// lack. It walks the database's notes in path order beside stamps rather
// than hold them all in a map: at 100k notes the map was 16 MB at margin
// serve's start, while the in-memory codes load.
func (s *Store) stale(ctx context.Context, stamps []NoteStamp) (todo []NoteStamp, gone []int64, err error) {
	i := 0
	err = collect(ctx, s.db, `SELECT id, path, version FROM notes ORDER BY path`, nil, func(r *sql.Rows) error {
		var id int64
		var path, version sql.RawBytes
		if err := r.Scan(&id, &path, &version); err != nil {
			return err
		}
		for i < len(stamps) && stamps[i].Path < string(path) {
			todo = append(todo, stamps[i])
			i++
		}
		if i == len(stamps) || stamps[i].Path != string(path) {
			gone = append(gone, id)
			return nil
		}
		if stamps[i].Version != string(version) {
			todo = append(todo, stamps[i])
		}
		i++
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("reading chunked notes: %w", err)
	}
	return append(todo, stamps[i:]...), gone, nil
}

// chunkedNote is a note as the queue chunked it.
type chunkedNote struct {
	stamp  NoteStamp
	chunks []chunk
}

// writeNotes replaces the chunks of each of ns (adding the notes it does
// not hold) and marks pending those with a chunk of no vector.
func (s *Store) writeNotes(ctx context.Context, ns []chunkedNote) error {
	s.mu.RLock()
	m := s.model
	s.mu.RUnlock()
	ids := make([]int64, len(ns))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for i, n := range ns {
			err := tx.QueryRowContext(ctx, `INSERT INTO notes (path, mtime_ns, version, pending) VALUES (?, ?, ?, 1)
				ON CONFLICT (path) DO UPDATE SET mtime_ns = excluded.mtime_ns, version = excluded.version, pending = 1
				RETURNING id`, n.stamp.Path, n.stamp.Mtime.UnixNano(), n.stamp.Version).Scan(&ids[i])
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE note_id = ?`, ids[i]); err != nil {
				return err
			}
			for _, c := range n.chunks {
				if _, err := tx.ExecContext(ctx, `INSERT INTO chunks (note_id, ord, line, heading, hash, tokens) VALUES (?, ?, ?, ?, ?, ?)`,
					ids[i], c.ord, c.line, c.heading, c.hash[:], c.tokens); err != nil {
					return err
				}
			}
			if err := settleNote(ctx, tx, m, ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing chunks: %w", err)
	}
	return s.reload(ctx, ids)
}

// settleNote clears the pending mark of note id if each of its chunks has
// a vector of m.
func settleNote(ctx context.Context, tx *sql.Tx, m model, id int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE notes SET pending = 0 WHERE id = ? AND NOT EXISTS (
		SELECT 1 FROM chunks c WHERE c.note_id = ? AND NOT EXISTS (
			SELECT 1 FROM vectors v WHERE v.model = ? AND v.hash = c.hash))`, id, id, m.id)
	return err
}

// removeNotes forgets the notes of ids. Their vectors stay until collect:
// a moved note finds them again under its new path.
func (s *Store) removeNotes(ctx context.Context, ids []int64) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM notes WHERE id = ?`, id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE note_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("removing notes: %w", err)
	}
	return s.reload(ctx, ids) // which finds them gone
}

// reload reads the codes of notes ids into memory.
func (s *Store) reload(ctx context.Context, ids []int64) error {
	s.reloading.Lock()
	defer s.reloading.Unlock()
	s.mu.Lock()
	m, loaded := s.model, s.loaded
	s.markWritten(ids) // codes reads them once it has read the rest
	s.mu.Unlock()
	if m.dims == 0 || !loaded {
		return nil
	}
	type note struct {
		path string
		es   []entry
	}
	notes := make(map[int64]note, len(ids))
	for _, id := range ids {
		var n note
		err := s.db.QueryRowContext(ctx, `SELECT path FROM notes WHERE id = ?`, id).Scan(&n.path)
		if errors.Is(err, sql.ErrNoRows) {
			notes[id] = n // gone: removed below
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the vectors of note %d: %w", id, err)
		}
		if n.es, err = loadNote(ctx, s.db, m, id); err != nil {
			return err
		}
		notes[id] = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != m { // the model changed meanwhile, and load read its codes
		return nil
	}
	if s.mem == nil {
		s.mem = newCodes(m.dims, 0)
	}
	for id, n := range notes {
		s.mem.set(id, n.path, n.es)
	}
	return nil
}

// markWritten keeps ids for the load under way, if one may be: see
// Store.written. s.mu is held.
func (s *Store) markWritten(ids []int64) {
	if s.loaded {
		return
	}
	if s.written == nil {
		s.written = make(map[int64]bool)
	}
	for _, id := range ids {
		s.written[id] = true
	}
}

// pendingNotes returns up to limit notes with chunks to embed, the most
// recently edited first.
func (s *Store) pendingNotes(ctx context.Context, limit int) ([]noteRow, error) {
	var out []noteRow
	err := collect(ctx, s.db, `SELECT id, path, version FROM notes WHERE pending = 1 ORDER BY mtime_ns DESC, id LIMIT ?`, []any{limit}, func(r *sql.Rows) error {
		var n noteRow
		err := r.Scan(&n.id, &n.path, &n.version)
		out = append(out, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading pending notes: %w", err)
	}
	return out, nil
}

// missing returns the hashes of note id's chunks with no vector of the
// current model.
func (s *Store) missing(ctx context.Context, id int64) (map[hash]bool, error) {
	s.mu.RLock()
	m := s.model
	s.mu.RUnlock()
	out := make(map[hash]bool)
	err := collect(ctx, s.db, `SELECT c.hash FROM chunks c WHERE c.note_id = ? AND NOT EXISTS (
		SELECT 1 FROM vectors v WHERE v.model = ? AND v.hash = c.hash)`, []any{id, m.id}, func(r *sql.Rows) error {
		var b []byte
		if err := r.Scan(&b); err != nil {
			return err
		}
		out[hash(b)] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading chunks to embed: %w", err)
	}
	return out, nil
}

// embedded is one batch the embedder returned.
type embedded struct {
	hashes  []hash
	vectors [][]float32
	tokens  int       // estimated, for the budget
	notes   []int64   // notes whose pending mark may go
	at      time.Time // for the day the budget counts it on
}

// addVectors stores a batch's vectors under the current model, counts it
// against the day's budget and settles its notes, all in one transaction;
// it returns the counts of chunks embedded and left as it left them.
func (s *Store) addVectors(ctx context.Context, b embedded) (done, left int, err error) {
	s.mu.RLock()
	m := s.model
	s.mu.RUnlock()
	dims := m.dims
	for _, v := range b.vectors {
		if dims == 0 {
			dims = len(v)
		}
		if len(v) != dims || dims == 0 {
			return 0, 0, fmt.Errorf("embedder gave a vector of %d dimensions, %s has %d", len(v), m.fingerprint, dims)
		}
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if m.dims == 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE models SET dims = ? WHERE id = ?`, dims, m.id); err != nil {
				return err
			}
		}
		for i, h := range b.hashes {
			u := normalize(b.vectors[i])
			q8, scale := quantize(u)
			if _, err := tx.ExecContext(ctx, `INSERT INTO vectors (model, hash, scale, q8, bits) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				m.id, h[:], scale, q8, codeBytes(signBits(u))); err != nil {
				return err
			}
		}
		for _, id := range b.notes {
			if err := settleNote(ctx, tx, m, id); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO spent (day, chunks, tokens) VALUES (?, ?, ?)
			ON CONFLICT (day) DO UPDATE SET chunks = chunks + excluded.chunks, tokens = tokens + excluded.tokens`,
			dayOf(b.at), len(b.hashes), b.tokens)
		if err != nil {
			return err
		}
		return readTally(ctx, tx, &done, &left)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("storing vectors: %w", err)
	}
	if m.dims == 0 {
		s.mu.Lock()
		if s.model == m {
			s.model.dims = dims
		}
		s.mu.Unlock()
	}
	return done, left, s.reload(ctx, b.notes)
}

func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// sweep deletes what no note needs: vectors whose text no chunk holds,
// and, once the current model has a vector for every chunk, those of other
// models and the record of the model before.
func (s *Store) sweep(ctx context.Context) error {
	s.mu.RLock()
	m := s.model
	s.mu.RUnlock()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = vectors.hash)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE model != ? AND NOT EXISTS (SELECT 1 FROM notes WHERE pending = 1)`, m.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("collecting unused vectors: %w", err)
	}
	return nil
}

// counts returns how many chunks of current notes have a vector of the
// current model, and how many have none, as the tally keeps them.
func (s *Store) counts(ctx context.Context) (embedded, left int, err error) {
	if err := readTally(ctx, s.db, &embedded, &left); err != nil {
		return 0, 0, fmt.Errorf("counting chunks: %w", err)
	}
	return embedded, left, nil
}

func readTally(ctx context.Context, q querier, embedded, left *int) error {
	return q.QueryRowContext(ctx, `SELECT embedded, chunks - embedded FROM tally`).Scan(embedded, left)
}

// spentOn returns the estimated tokens embedded on day.
func (s *Store) spentOn(ctx context.Context, day string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(tokens), 0) FROM spent WHERE day = ?`, day).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("reading the day's budget: %w", err)
	}
	return n, nil
}

// record keeps the queue's state for other processes (see Progress).
func (s *Store) record(ctx context.Context, p Progress) error {
	kv := map[string]any{
		"queue_state": string(p.State),
		"queue_note":  p.Note,
		"last_error":  p.LastError,
		"resumes":     store.Stamp(p.Resumes),
		"recorded":    store.Stamp(time.Now()),
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for k, v := range kv {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)`, k, v); err != nil {
				return err
			}
		}
		if !p.Reembedding {
			_, err := tx.ExecContext(ctx, `DELETE FROM state WHERE key = 'model_before'`)
			return err
		}
		return nil
	})
}

// Progress reads the progress the last queue on this database recorded,
// for a process that runs none (margin status, doctor). State and Note
// are as that queue last recorded them: a queue killed while embedding
// leaves Embedding behind, until the next one runs.
func (s *Store) Progress(ctx context.Context) (Progress, error) {
	var p Progress
	s.mu.RLock()
	p.Model = s.model.fingerprint
	s.mu.RUnlock()
	var err error
	if p.Embedded, p.Left, err = s.counts(ctx); err != nil {
		return p, err
	}
	if p.TokensToday, err = s.spentOn(ctx, dayOf(time.Now())); err != nil {
		return p, err
	}
	p.State = Stopped
	err = collect(ctx, s.db, `SELECT key, CAST(value AS TEXT) FROM state WHERE key IN ('queue_state', 'queue_note', 'last_error', 'resumes', 'model_before')`, nil, func(r *sql.Rows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		switch k {
		case "queue_state":
			p.State = State(v)
		case "queue_note":
			p.Note = v
		case "last_error":
			p.LastError = v
		case "resumes":
			p.Resumes = store.Unstamp(v)
		case "model_before":
			p.ModelBefore, p.Reembedding = v, true
		}
		return nil
	})
	if err != nil {
		return p, fmt.Errorf("reading the queue's state: %w", err)
	}
	return p, nil
}

func dayOf(t time.Time) string { return t.Format(time.DateOnly) }

// nextDay is the midnight after t, when a spent budget renews.
func nextDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, t.Location())
}
