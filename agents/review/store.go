package review

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// schema holds the migration steps of the reviews' tables. Append, never edit.
var schema = []string{`
-- One row per run of a review, written before the run starts and again
-- when its note is written: a row left 'running' is a run a crash cut,
-- finished or redone once at the next start.
CREATE TABLE review_runs (
	id                INTEGER PRIMARY KEY,
	name              TEXT    NOT NULL,
	due               TEXT    NOT NULL, -- the scheduled time it runs for; '' by hand
	date              TEXT    NOT NULL, -- the note's date, YYYY-MM-DD
	period_from       TEXT    NOT NULL, -- '' for a review's first run: the whole scope
	period_to         TEXT    NOT NULL,
	started_at        TEXT    NOT NULL,
	finished_at       TEXT    NOT NULL DEFAULT '',
	status            TEXT    NOT NULL, -- running | done
	generated_by      TEXT    NOT NULL DEFAULT '',
	template          TEXT    NOT NULL DEFAULT '',
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	note              TEXT    NOT NULL DEFAULT '',
	detail            TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX review_runs_name ON review_runs(name, id);
-- What each review saw of each note in scope at its last finished run:
-- the next run reads only the notes whose hash differs, and tells moved
-- due dates, checklist progress and new entries from these.
CREATE TABLE review_marks (
	name    TEXT    NOT NULL,
	path    TEXT    NOT NULL,
	hash    TEXT    NOT NULL,
	due     TEXT    NOT NULL,
	done    INTEGER NOT NULL,
	total   INTEGER NOT NULL,
	entries TEXT    NOT NULL, -- JSON array of "date HH:MM" keys
	PRIMARY KEY (name, path)
) WITHOUT ROWID;
-- The definition body each review last adopted as its template's
-- directive: an evolved or hand-edited template version stands until
-- the person edits the definition again.
CREATE TABLE review_directives (
	name TEXT PRIMARY KEY,
	body TEXT NOT NULL
) WITHOUT ROWID;
`}

// Run statuses.
const (
	StatusRunning = "running"
	StatusDone    = "done"
)

// Run is one run of a review, as its row records it.
type Run struct {
	ID               int64
	Name             string
	Due              time.Time // zero for a run by hand
	Date             string
	From, To         time.Time // From zero: the first run, which sees the whole scope
	Started          time.Time
	Finished         time.Time
	Status           string
	GeneratedBy      string
	Template         string
	PromptTokens     int
	CompletionTokens int
	Note             string
	Detail           string
}

// mark is what a run saw of one note.
type mark struct {
	Hash        string
	Due         string
	Done, Total int
	Entries     []string
}

// Store holds the reviews' runs and marks in the vault's state database.
type Store struct{ db *sql.DB }

// OpenStore migrates the reviews' tables in db.
func OpenStore(ctx context.Context, db *sql.DB) (*Store, error) {
	if err := store.Migrate(ctx, db, "reviews", schema); err != nil {
		return nil, fmt.Errorf("opening the reviews' store: %w", err)
	}
	return &Store{db: db}, nil
}

const runColumns = `id, name, due, date, period_from, period_to, started_at, finished_at, status, generated_by, template, prompt_tokens, completion_tokens, note, detail`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var due, from, to, started, finished string
	err := sc.Scan(&r.ID, &r.Name, &due, &r.Date, &from, &to, &started, &finished, &r.Status, &r.GeneratedBy, &r.Template,
		&r.PromptTokens, &r.CompletionTokens, &r.Note, &r.Detail)
	r.Due, r.From, r.To, r.Started, r.Finished = store.Unstamp(due), store.Unstamp(from), store.Unstamp(to), store.Unstamp(started), store.Unstamp(finished)
	return r, err
}

// begin records a run before it starts.
func (s *Store) begin(ctx context.Context, r Run) (int64, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO review_runs (name, due, date, period_from, period_to, started_at, status, template, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.Name, store.Stamp(r.Due), r.Date, store.Stamp(r.From), store.Stamp(r.To), store.Stamp(r.Started), StatusRunning, r.Template, r.Note)
	if err != nil {
		return 0, fmt.Errorf("recording the start of review %s: %w", r.Name, err)
	}
	return res.LastInsertId()
}

// marksUpdate is what a run changes of its review's marks: the notes it
// read again and the notes gone since the last run.
type marksUpdate struct {
	set  map[string]mark
	gone []string
}

// finish marks a run done with its note and keeps what it saw, in one
// transaction: the next run starts from exactly these marks. A nil
// update leaves the marks as they were.
func (s *Store) finish(ctx context.Context, r Run, u *marksUpdate) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finishing run %d of review %s: %w", r.ID, r.Name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE review_runs SET finished_at = ?, status = ?, generated_by = ?, template = ?, prompt_tokens = ?, completion_tokens = ?, note = ?, detail = ? WHERE id = ?`,
		store.Stamp(r.Finished), StatusDone, r.GeneratedBy, r.Template, r.PromptTokens, r.CompletionTokens, r.Note, r.Detail, r.ID); err != nil {
		return fmt.Errorf("finishing run %d of review %s: %w", r.ID, r.Name, err)
	}
	if u != nil {
		for _, p := range u.gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM review_marks WHERE name = ? AND path = ?`, r.Name, p); err != nil {
				return fmt.Errorf("finishing run %d of review %s: %w", r.ID, r.Name, err)
			}
		}
		for p, m := range u.set {
			entries, _ := json.Marshal(m.Entries) // a []string always marshals
			if _, err := tx.ExecContext(ctx, `INSERT INTO review_marks (name, path, hash, due, done, total, entries) VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (name, path) DO UPDATE SET hash = excluded.hash, due = excluded.due, done = excluded.done, total = excluded.total, entries = excluded.entries`,
				r.Name, p, m.Hash, m.Due, m.Done, m.Total, string(entries)); err != nil {
				return fmt.Errorf("finishing run %d of review %s: %w", r.ID, r.Name, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finishing run %d of review %s: %w", r.ID, r.Name, err)
	}
	return nil
}

// marks is what the review's last finished run saw, by path.
func (s *Store) marks(ctx context.Context, name string) (map[string]mark, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT path, hash, due, done, total, entries FROM review_marks WHERE name = ?`, name)
	if err != nil {
		return nil, fmt.Errorf("reading the marks of review %s: %w", name, err)
	}
	defer rows.Close()
	out := map[string]mark{}
	for rows.Next() {
		var p, entries string
		var m mark
		if err := rows.Scan(&p, &m.Hash, &m.Due, &m.Done, &m.Total, &entries); err != nil {
			return nil, fmt.Errorf("reading the marks of review %s: %w", name, err)
		}
		if err := json.Unmarshal([]byte(entries), &m.Entries); err != nil {
			return nil, fmt.Errorf("reading the marks of review %s at %s: %w", name, p, err)
		}
		out[p] = m
	}
	return out, rows.Err()
}

// Last is the review's latest finished run; ok is false before its first.
func (s *Store) Last(ctx context.Context, name string) (r Run, ok bool, err error) {
	r, err = scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM review_runs WHERE name = ? AND status = ? ORDER BY id DESC LIMIT 1`, name, StatusDone))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Run{}, false, nil
	case err != nil:
		return Run{}, false, fmt.Errorf("reading the last run of review %s: %w", name, err)
	}
	return r, true, nil
}

// OnDate is the review's latest finished run that wrote the note of date.
func (s *Store) OnDate(ctx context.Context, name, date string) (r Run, ok bool, err error) {
	r, err = scanRun(s.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM review_runs WHERE name = ? AND date = ? AND status = ? ORDER BY id DESC LIMIT 1`, name, date, StatusDone))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Run{}, false, nil
	case err != nil:
		return Run{}, false, fmt.Errorf("reading the run of review %s on %s: %w", name, date, err)
	}
	return r, true, nil
}

// Unfinished lists the runs a crash or a shutdown cut, oldest first.
func (s *Store) Unfinished(ctx context.Context) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM review_runs WHERE status = ? ORDER BY id`, StatusRunning)
	if err != nil {
		return nil, fmt.Errorf("listing unfinished review runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("listing unfinished review runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Runs lists a review's runs, newest first.
func (s *Store) Runs(ctx context.Context, name string) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runColumns+` FROM review_runs WHERE name = ? ORDER BY id DESC`, name)
	if err != nil {
		return nil, fmt.Errorf("listing the runs of review %s: %w", name, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("listing the runs of review %s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// TokensToday sums the model tokens of the review runs started on now's
// day (in now's location), which the agents' daily budget counts.
func (s *Store) TokensToday(ctx context.Context, now time.Time) (int, error) {
	y, m, d := now.Date()
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM review_runs WHERE started_at >= ?`,
		store.Stamp(time.Date(y, m, d, 0, 0, 0, 0, now.Location()))).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("summing today's review tokens: %w", err)
	}
	return n, nil
}

// adopted is the definition body the review last adopted as its
// directive, "" before the first.
func (s *Store) adopted(ctx context.Context, name string) (string, error) {
	var body string
	err := s.db.QueryRowContext(ctx, `SELECT body FROM review_directives WHERE name = ?`, name).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the directive of review %s: %w", name, err)
	}
	return body, nil
}

func (s *Store) adopt(ctx context.Context, name, body string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO review_directives (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body`, name, body)
	if err != nil {
		return fmt.Errorf("recording the directive of review %s: %w", name, err)
	}
	return nil
}

// lastDue is the latest scheduled time a run of the review was started
// for, finished or not (a run a crash cut is Resume's), zero before any.
func (s *Store) lastDue(ctx context.Context, name string) (time.Time, error) {
	var due string
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(due), '') FROM review_runs WHERE name = ? AND due <> ''`, name).Scan(&due)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the runs of review %s: %w", name, err)
	}
	return store.Unstamp(due), nil
}
