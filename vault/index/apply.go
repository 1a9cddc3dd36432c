package index

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// State is a file's standing in the index: one of StateIndexed,
// StateSkipped, StateFailed. It is a plain string so that it travels as-is
// in RPC parameters and results.
type State = string

const (
	StateIndexed State = "indexed" // parsed and searchable
	StateSkipped State = "skipped" // deliberately not parsed (for example over the size cap); known by name only
	StateFailed  State = "failed"  // reading or parsing failed
)

// FileStat is what the index remembers of a file so that a walk can tell
// whether it changed: size and modification time are compared first, the
// content hash settles doubtful cases.
type FileStat struct {
	Size    int64
	MtimeNS int64 // modification time, Unix nanoseconds
	Hash    string
	State   State // in Stat results; an Update carries its own State
}

// Update is one change to the index, for one path. Exactly one of these
// forms:
//
//   - Remove: forget Path.
//   - TouchOnly: the file was touched but its content hash is unchanged;
//     record Stat, State and Reason and keep the indexed content. Ignored for
//     a path the index does not know (the next walk reads it in full).
//   - Note set: index the parsed note, whose bytes are Content; State is
//     StateIndexed when empty (a note with broken frontmatter may come as
//     StateFailed with a Reason and is indexed all the same).
//   - otherwise: record the file as State (skipped or failed) with Reason,
//     dropping anything indexed for it before.
type Update struct {
	Path   string
	Stat   FileStat
	State  State
	Reason string
	Note   *note.Note
	// Content is the file's bytes Note was parsed from: the searchable text
	// of each section is cut from it by Note's offsets. Required with Note.
	Content   []byte
	Remove    bool
	TouchOnly bool
}

func (u Update) check() error {
	switch {
	case u.Path == "":
		return errors.New("update without a path")
	case u.Remove || u.TouchOnly:
		return nil
	case u.Note != nil && u.Content == nil:
		return errors.New("update has a note but no content")
	case u.Note != nil && u.Note.Path != u.Path:
		return fmt.Errorf("update carries the note of %s", u.Note.Path)
	case u.Note == nil && u.State != StateSkipped && u.State != StateFailed:
		return fmt.Errorf("update without a note has state %q, want skipped or failed", u.State)
	}
	return nil
}

// Apply applies batch in one transaction, in order: either all of it is
// visible to readers or none. A batch of a few hundred updates amortises the
// commit and statement preparation; one huge batch holds the write lock (and
// blocks other margin processes' writes) for as long as it takes.
func (ix *Index) Apply(ctx context.Context, batch []Update) error {
	if len(batch) == 0 {
		return nil
	}
	// A connection of its own, so that the buffered inserts can go to the
	// driver directly (see rowBuffer) inside the transaction.
	conn, err := ix.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("applying index batch: %w", err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("applying index batch: %w", err)
	}
	defer tx.Rollback()
	ix.mu.Lock()
	bulk := ix.bulk
	if bulk != nil {
		bulk.applying.Add(1)
		defer bulk.applying.Done()
	}
	ix.mu.Unlock()
	w, err := newWriter(ctx, conn, tx, batch)
	if err != nil {
		return fmt.Errorf("applying index batch: %w", err)
	}
	defer w.close()
	w.bulk = bulk
	if bulk != nil {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO index_state (key, value) VALUES ('fts_pending', 1)`); err != nil {
			return fmt.Errorf("applying index batch: %w", err)
		}
	}
	for _, u := range batch {
		if err := u.check(); err != nil {
			return fmt.Errorf("applying index batch: %s: %w", u.Path, err)
		}
		if err := w.apply(ctx, u); err != nil {
			return fmt.Errorf("applying index batch: %s: %w", u.Path, err)
		}
	}
	if err := w.finish(ctx); err != nil {
		return fmt.Errorf("applying index batch: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("applying index batch: committing: %w", err)
	}
	if bulk != nil {
		bulk.indexed(w.ftsRows)
	}
	ix.mu.Lock()
	ix.counts = nil
	ix.gen++
	ix.mu.Unlock()
	return nil
}

// writer holds the state of one Apply transaction. Ids are allocated here
// rather than by SQLite so that a section's id can be used for its FTS row and
// its links without reading it back; the write lock taken at BEGIN makes that
// safe against other processes. Inserted rows are buffered and written many
// per statement, which costs a fraction of one statement per row.
//
// The FTS table is written last, one row per statement. FTS5 keeps new rows
// in memory until the transaction ends, but it writes them out as a new
// segment at every statement savepoint, and SQLite opens one for every
// multi-row statement once the FTS table is part of the transaction. Mixing
// the two made hundreds of tiny segments per batch and spent most of the
// time merging them.
type writer struct {
	conn                  *sql.Conn // tx's
	tx                    *sql.Tx
	nextFile, nextSection int64
	touched               map[string]bool  // paths applied so far in this batch
	ids                   map[string]int64 // file id of each path of the batch the index holds
	stmts                 []*sql.Stmt

	updateFile, touchFile, deleteFile *sql.Stmt
	sectionRange, deleteSections      *sql.Stmt
	deleteChildren                    []*sql.Stmt

	files, notes, sections, checklist, tags, aliases, links *rowBuffer
	buffers                                                 []*rowBuffer

	insertFTS, deleteFTS *sql.Stmt
	ftsRows              []ftsRow
	// bulk, when set, takes the FTS rows once the batch is committed, and
	// sections_fts is not written here.
	bulk *Bulk
}

type ftsRow struct {
	id                         int64
	title, heading, body, meta string
}

func newWriter(ctx context.Context, conn *sql.Conn, tx *sql.Tx, batch []Update) (*writer, error) {
	w := &writer{conn: conn, tx: tx, touched: make(map[string]bool), ids: make(map[string]int64, len(batch))}
	// One lookup for the whole batch rather than one per update.
	paths := make([]string, len(batch))
	for i, u := range batch {
		paths[i] = u.Path
	}
	err := collect(ctx, tx, `SELECT path, id FROM files WHERE path IN (SELECT value FROM json_each(?))`, []any{jsonArray(paths)},
		func(r *sql.Rows) error {
			var p string
			var id int64
			err := r.Scan(&p, &id)
			w.ids[p] = id
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("finding files: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM files`).Scan(&w.nextFile); err != nil {
		return nil, fmt.Errorf("reading file ids: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) + 1 FROM sections`).Scan(&w.nextSection); err != nil {
		return nil, fmt.Errorf("reading section ids: %w", err)
	}
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = tx.PrepareContext(ctx, q)
		if err == nil {
			w.stmts = append(w.stmts, s)
		} else {
			err = fmt.Errorf("preparing %q: %w", q, err)
		}
		return s
	}
	w.updateFile = prep(`UPDATE files SET size = ?, mtime_ns = ?, hash = ?, state = ?, reason = ?, kind = ? WHERE id = ?`)
	// A touch without a State keeps the recorded state and reason.
	w.touchFile = prep(`UPDATE files SET size = ?1, mtime_ns = ?2, hash = ?3,
		state = COALESCE(NULLIF(?4, ''), state), reason = CASE WHEN ?4 = '' THEN reason ELSE ?5 END WHERE id = ?6`)
	w.deleteFile = prep(`DELETE FROM files WHERE id = ?`)
	w.sectionRange = prep(`SELECT first_section, last_section FROM notes WHERE file_id = ?`)
	w.deleteSections = prep(`DELETE FROM sections WHERE id BETWEEN ? AND ?`)
	w.insertFTS = prep(`INSERT INTO sections_fts (rowid, title, heading, body, meta) VALUES (?, ?, ?, ?, ?)`)
	// An external-content FTS table forgets a row when told the values it
	// indexed, which sections still holds.
	w.deleteFTS = prep(`INSERT INTO sections_fts (sections_fts, rowid, title, heading, body, meta)
		SELECT 'delete', id, title, heading, body, meta FROM sections WHERE id BETWEEN ? AND ?`)
	for _, table := range []string{"notes", "checklist_items", "tags", "aliases", "links"} {
		w.deleteChildren = append(w.deleteChildren, prep(`DELETE FROM `+table+` WHERE file_id = ?`))
	}
	if err != nil {
		w.close()
		return nil, err
	}
	buf := func(insert string, cols ...string) *rowBuffer {
		b := &rowBuffer{table: insert[strings.LastIndexByte(insert, ' ')+1:],
			insert: insert + " (" + strings.Join(cols, ", ") + ") VALUES ", ncols: len(cols)}
		w.buffers = append(w.buffers, b)
		return b
	}
	w.files = buf("INSERT INTO files", "id", "path", "path_key", "stem_key", "size", "mtime_ns", "hash", "state", "reason", "kind")
	w.notes = buf("INSERT INTO notes", "file_id", "title", "kind", "date", "margin_kind", "frontmatter_error",
		"status", "priority", "due", "scheduled", "estimate", "language", "labels", "headings", "first_section", "last_section")
	w.sections = buf("INSERT INTO sections", "id", "file_id", "line", "title", "heading", "body", "meta",
		"date", "listed", "time", "correction", "start_offset", "end_offset")
	w.checklist = buf("INSERT INTO checklist_items", "file_id", "ord", "line", "state", "text",
		"due", "scheduled", "start", "done", "cancelled", "priority", "item_id")
	// The parser de-duplicates tags and aliases case-insensitively, but its
	// folding need not be ours; a second spelling of the same key is dropped.
	w.tags = buf("INSERT OR IGNORE INTO tags", "file_id", "tag_key", "tag", "ord")
	w.aliases = buf("INSERT OR IGNORE INTO aliases", "file_id", "alias_key", "alias", "ord")
	w.links = buf("INSERT INTO links", "file_id", "ord", "section_id", "line", "target", "heading", "target_key", "rel_key")
	return w, nil
}

func (w *writer) close() {
	for _, s := range w.stmts {
		s.Close()
	}
	w.conn.Raw(func(any) error {
		for _, b := range w.buffers {
			if b.full != nil {
				b.full.Close()
			}
		}
		return nil
	})
}

// flush writes every buffered row except the FTS ones.
func (w *writer) flush(ctx context.Context) error {
	for _, b := range w.buffers {
		if err := b.flush(ctx, w.conn); err != nil {
			return err
		}
	}
	return nil
}

// flushFTS indexes the sections written so far.
func (w *writer) flushFTS(ctx context.Context) error {
	if w.bulk != nil {
		return nil
	}
	for _, r := range w.ftsRows {
		if _, err := w.insertFTS.ExecContext(ctx, r.id, r.title, r.heading, r.body, r.meta); err != nil {
			return fmt.Errorf("indexing search text: %w", err)
		}
	}
	w.ftsRows = w.ftsRows[:0]
	return nil
}

// finish writes what is still buffered, the FTS rows last.
func (w *writer) finish(ctx context.Context) error {
	if err := w.flush(ctx); err != nil {
		return err
	}
	return w.flushFTS(ctx)
}

func (w *writer) apply(ctx context.Context, u Update) error {
	// A path seen before in this batch may have rows still buffered; write
	// and index them so that the deletes below find what they delete.
	if w.touched[u.Path] {
		if err := w.finish(ctx); err != nil {
			return err
		}
	}
	w.touched[u.Path] = true
	id := w.ids[u.Path]
	if id == 0 && (u.Remove || u.TouchOnly) {
		return nil
	}

	st, state, kind := u.Stat, u.State, ""
	if u.Note != nil {
		kind = string(u.Note.Kind)
		if state == "" {
			state = StateIndexed
		}
	}
	switch {
	case u.TouchOnly:
		_, err := w.touchFile.ExecContext(ctx, st.Size, st.MtimeNS, st.Hash, state, u.Reason, id)
		if err != nil {
			return fmt.Errorf("updating file: %w", err)
		}
		return nil
	case id != 0:
		if err := w.deleteContent(ctx, id); err != nil {
			return err
		}
	}
	if u.Remove {
		if _, err := w.deleteFile.ExecContext(ctx, id); err != nil {
			return fmt.Errorf("deleting file: %w", err)
		}
		delete(w.ids, u.Path)
		return nil
	}
	if id == 0 {
		id = w.nextFile
		w.nextFile++
		w.ids[u.Path] = id
		key := note.LinkKey(u.Path)
		if err := w.files.add(ctx, w.conn, id, u.Path, key, key[strings.LastIndexByte(key, '/')+1:],
			st.Size, st.MtimeNS, st.Hash, state, u.Reason, kind); err != nil {
			return err
		}
	} else if _, err := w.updateFile.ExecContext(ctx, st.Size, st.MtimeNS, st.Hash, state, u.Reason, kind, id); err != nil {
		return fmt.Errorf("updating file: %w", err)
	}
	if u.Note != nil {
		return w.insertContent(ctx, id, u.Note, u.Content)
	}
	return nil
}

// deleteContent removes everything the index holds about file id except its
// files row.
func (w *writer) deleteContent(ctx context.Context, id int64) error {
	var lo, hi int64
	switch err := w.sectionRange.QueryRowContext(ctx, id).Scan(&lo, &hi); {
	case errors.Is(err, sql.ErrNoRows): // skipped or failed: no note, no sections
	case err != nil:
		return fmt.Errorf("finding sections: %w", err)
	case w.bulk != nil:
		// The sections may not be in sections_fts (yet): Finish rebuilds it.
		w.bulk.spoil()
		if _, err := w.deleteSections.ExecContext(ctx, lo, hi); err != nil {
			return fmt.Errorf("deleting sections: %w", err)
		}
	default:
		if _, err := w.deleteFTS.ExecContext(ctx, lo, hi); err != nil {
			return fmt.Errorf("unindexing sections: %w", err)
		}
		if _, err := w.deleteSections.ExecContext(ctx, lo, hi); err != nil {
			return fmt.Errorf("deleting sections: %w", err)
		}
	}
	for _, s := range w.deleteChildren {
		if _, err := s.ExecContext(ctx, id); err != nil {
			return fmt.Errorf("deleting note data: %w", err)
		}
	}
	return nil
}

func (w *writer) insertContent(ctx context.Context, id int64, n *note.Note, content []byte) error {
	var date any
	if n.Date != "" {
		date = n.Date
	}
	var status, priority, due, scheduled, estimate, language, labels any
	if t := taskOf(n); t != nil {
		status, priority, due, scheduled, estimate, language = t.Status, t.Priority, t.Due, t.Scheduled, t.Estimate, t.Language
		b, err := json.Marshal(nonNil(t.Labels))
		if err != nil {
			return fmt.Errorf("encoding labels: %w", err)
		}
		labels = string(b)
	}
	hs := make([]HeadingMeta, len(n.Headings))
	for i, h := range n.Headings {
		hs[i] = HeadingMeta{Level: h.Level, Text: h.Text, Line: h.Line, Offset: h.Offset}
	}
	headings, err := json.Marshal(hs)
	if err != nil {
		return fmt.Errorf("encoding headings: %w", err)
	}
	secs := sectionsOf(n, content)
	meta := metaTokens(n)
	first := w.nextSection
	if err := w.notes.add(ctx, w.conn, id, n.Title, string(n.Kind), date, n.MarginKind, n.FrontmatterError,
		status, priority, due, scheduled, estimate, language, labels, string(headings), first, first+int64(len(secs))-1); err != nil {
		return err
	}
	for _, s := range secs {
		sid := w.nextSection
		w.nextSection++
		var tm, corr, start, end any
		if e := s.entry; e != nil {
			tm, corr, start, end = e.Time, e.Correction, e.Start, e.End
		}
		if err := w.sections.add(ctx, w.conn, sid, id, s.line, s.title, s.heading, s.text, meta, date, s.listed, tm, corr, start, end); err != nil {
			return err
		}
		w.ftsRows = append(w.ftsRows, ftsRow{sid, s.title, s.heading, s.text, meta})
	}
	for i, l := range n.Links {
		sid := first + int64(sectionAt(secs, l.Offset))
		key := note.LinkKey(l.Target)
		// A target with a folder may be written relative to the linking
		// note's folder; keep that reading when it differs. (A bare name
		// read relative to the folder only breaks ties between notes of that
		// name, which resolve does not do; see there.)
		var rel any
		if strings.Contains(l.Target, "/") {
			if r := note.LinkKey(path.Join(path.Dir(n.Path), l.Target)); r != key {
				rel = r
			}
		}
		if err := w.links.add(ctx, w.conn, id, i, sid, l.Line, l.Target, l.Heading, key, rel); err != nil {
			return err
		}
	}
	for i, c := range n.Checklist {
		if err := w.checklist.add(ctx, w.conn, id, i, c.Line, string(c.State), c.Text,
			c.Due, c.Scheduled, c.Start, c.Done, c.Cancelled, c.Priority, c.ID); err != nil {
			return err
		}
	}
	for i, t := range n.Tags {
		if err := w.tags.add(ctx, w.conn, id, tagKey(t), t, i); err != nil {
			return err
		}
	}
	for i, a := range n.Aliases {
		if err := w.aliases.add(ctx, w.conn, id, note.LinkKey(a), a, i); err != nil {
			return err
		}
	}
	return nil
}

// chunkRows is how many rows one buffered INSERT writes. Past a few dozen
// the per-statement overhead is already amortised; the widest table (16
// columns) stays far below SQLite's limit of 32,766 parameters.
const chunkRows = 64

// rowBuffer collects the rows of one table and inserts them chunkRows at a
// time with one prepared multi-row INSERT. It hands its arguments to the
// driver's statement itself, through sql.Conn.Raw: database/sql would copy
// and convert every argument of every call (a sixth of a cold scan's
// allocations), and these are most of the index's writes.
type rowBuffer struct {
	table  string
	insert string // "INSERT INTO t (a, b) VALUES "
	ncols  int
	args   []driver.NamedValue
	full   driver.Stmt // prepared on first use, for a full chunk
}

func (b *rowBuffer) add(ctx context.Context, c *sql.Conn, row ...any) error {
	for _, v := range row {
		dv, err := driverValue(v)
		if err != nil {
			return fmt.Errorf("writing %s: %w", b.table, err)
		}
		b.args = append(b.args, driver.NamedValue{Ordinal: len(b.args) + 1, Value: dv})
	}
	if len(b.args) < chunkRows*b.ncols {
		return nil
	}
	err := c.Raw(func(dc any) error {
		if b.full == nil {
			s, err := prepareRaw(ctx, dc, b.sql(chunkRows))
			if err != nil {
				return err
			}
			b.full = s
		}
		return execRaw(ctx, b.full, b.args)
	})
	clear(b.args)
	b.args = b.args[:0]
	if err != nil {
		return fmt.Errorf("writing %s: %w", b.table, err)
	}
	return nil
}

func (b *rowBuffer) flush(ctx context.Context, c *sql.Conn) error {
	if len(b.args) == 0 {
		return nil
	}
	err := c.Raw(func(dc any) error {
		s, err := prepareRaw(ctx, dc, b.sql(len(b.args)/b.ncols))
		if err != nil {
			return err
		}
		err = execRaw(ctx, s, b.args)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		return err
	})
	clear(b.args)
	b.args = b.args[:0]
	if err != nil {
		return fmt.Errorf("writing %s: %w", b.table, err)
	}
	return nil
}

func prepareRaw(ctx context.Context, dc any, q string) (driver.Stmt, error) {
	if p, ok := dc.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, q)
	}
	return dc.(driver.Conn).Prepare(q)
}

func execRaw(ctx context.Context, s driver.Stmt, args []driver.NamedValue) error {
	e, ok := s.(driver.StmtExecContext)
	if !ok {
		return errors.New("the SQLite driver cannot execute with a context")
	}
	_, err := e.ExecContext(ctx, args)
	return err
}

// driverValue converts what Apply writes into a value the driver takes, as
// database/sql would.
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, int64, string, bool, float64, []byte:
		return v, nil
	case int:
		return int64(x), nil
	default:
		return driver.DefaultParameterConverter.ConvertValue(v)
	}
}

func (b *rowBuffer) sql(rows int) string {
	row := "(" + placeholders(b.ncols) + ")"
	return b.insert + strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// tagKey folds a tag for filtering: case-insensitive, '#' optional.
func tagKey(tag string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(tag), "#"))
}
