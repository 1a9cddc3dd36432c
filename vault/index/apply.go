package index

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
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
	ix.mu.Lock()
	bulk := ix.bulk
	if bulk != nil {
		bulk.applying.Add(1)
		defer bulk.applying.Done()
	}
	ix.mu.Unlock()
	var ftsRows []ftsRow
	err := ix.write(ctx, func(wc *writeConn, tx *sql.Tx) error {
		// For a statement run with a context that can be cancelled, the
		// driver starts a goroutine to watch it and has SQLite call back
		// every 1,000 instructions: 6% of a cold index's time over its
		// thousands of inserts, each a millisecond or less. The batch's
		// statements run without, and the batch checks ctx between
		// updates instead. (Waiting for the write lock still ends with ctx.)
		stmtCtx := context.WithoutCancel(ctx)
		w, err := newWriter(stmtCtx, wc, tx, batch)
		if err != nil {
			return err
		}
		defer w.close()
		w.bulk = bulk
		if bulk != nil {
			if _, err := tx.ExecContext(stmtCtx, `INSERT OR IGNORE INTO index_state (key, value) VALUES ('fts_pending', 1)`); err != nil {
				return err
			}
		}
		for _, u := range batch {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := u.check(); err != nil {
				return fmt.Errorf("%s: %w", u.Path, err)
			}
			if err := w.apply(stmtCtx, u); err != nil {
				return fmt.Errorf("%s: %w", u.Path, err)
			}
		}
		ftsRows = w.ftsRows
		return w.finish(stmtCtx)
	})
	if err != nil {
		return fmt.Errorf("applying index batch: %w", err)
	}
	if bulk != nil {
		bulk.indexed(ftsRows)
	}
	ix.mu.Lock()
	ix.counts = nil
	ix.gen++
	ix.mu.Unlock()
	return nil
}

// write runs f in a transaction on the write connection and commits it.
// Writes go one at a time (they would queue for SQLite's write lock anyway)
// through one connection, which keeps its prepared inserts and is the only
// one of the pool to hold a writer's page cache.
func (ix *Index) write(ctx context.Context, f func(*writeConn, *sql.Tx) error) error {
	ix.writing.Lock()
	defer ix.writing.Unlock()
	wc, err := ix.writeConn(ctx)
	if err != nil {
		return err
	}
	err = func() error {
		tx, err := wc.conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := f(wc, tx); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("committing: %w", err)
		}
		return nil
	}()
	if err != nil {
		// The connection may be what failed; the next write starts afresh.
		ix.dropWriteConn()
	}
	return err
}

// writeConn is the connection Apply writes on. It is kept from one batch to
// the next so that the multi-row inserts, which take SQLite longer to
// prepare than to run, are prepared once per connection rather than once
// per batch.
type writeConn struct {
	conn  *sql.Conn
	stmts map[string]driver.Stmt // prepared on conn's driver connection, by SQL
}

// writeConn returns the write connection, opening it if need be. The caller
// holds ix.writing.
func (ix *Index) writeConn(ctx context.Context) (*writeConn, error) {
	if ix.wc != nil {
		return ix.wc, nil
	}
	conn, err := ix.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	ix.wc = &writeConn{conn: conn, stmts: make(map[string]driver.Stmt)}
	return ix.wc, nil
}

// dropWriteConn closes the write connection, if open. The caller holds
// ix.writing.
func (ix *Index) dropWriteConn() error {
	wc := ix.wc
	if wc == nil {
		return nil
	}
	ix.wc = nil
	wc.conn.Raw(func(any) error {
		for _, s := range wc.stmts {
			s.Close()
		}
		return nil
	})
	return wc.conn.Close()
}

// exec runs q, prepared once, with args on the driver connection dc of
// the write connection.
func (wc *writeConn) exec(ctx context.Context, dc any, q string, args []driver.NamedValue) error {
	s, ok := wc.stmts[q]
	if !ok {
		var err error
		if s, err = prepareRaw(ctx, dc, q); err != nil {
			return err
		}
		wc.stmts[q] = s
	}
	return execRaw(ctx, s, args)
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
	wc                    *writeConn // tx's
	tx                    *sql.Tx
	nextFile, nextSection int64
	touched               map[string]bool  // paths applied so far in this batch
	ids                   map[string]int64 // file id of each path of the batch the index holds
	stmts                 map[string]*sql.Stmt

	files, notes, sections, checklist, tags, aliases, links *rowBuffer
	buffers                                                 []*rowBuffer

	ftsRows []ftsRow
	// bulk, when set, takes the FTS rows once the batch is committed, and
	// the search tables are not written here.
	bulk *Bulk
}

// The statements of a writer other than its inserts. A cold index needs
// none of them, so each is prepared on first use.
const (
	updateFileSQL = `UPDATE files SET size = ?, mtime_ns = ?, hash = ?, state = ?, reason = ?, kind = ? WHERE id = ?`
	// A touch without a State keeps the recorded state and reason.
	touchFileSQL = `UPDATE files SET size = ?1, mtime_ns = ?2, hash = ?3,
		state = COALESCE(NULLIF(?4, ''), state), reason = CASE WHEN ?4 = '' THEN reason ELSE ?5 END WHERE id = ?6`
	deleteFileSQL     = `DELETE FROM files WHERE id = ?`
	sectionRangeSQL   = `SELECT first_section, last_section FROM notes WHERE file_id = ?`
	deleteSectionsSQL = `DELETE FROM sections WHERE id BETWEEN ? AND ?`
	insertFTSSQL      = `INSERT INTO notes_fts (rowid, title, path, headings, props, body, meta) VALUES (?, ?, ?, ?, ?, ?, ?)`
	insertFieldsSQL   = `INSERT INTO fields_fts (rowid, title, path, headings, props, meta) VALUES (?, ?, ?, ?, ?, ?)`
)

// childTables hold rows of a note keyed by file_id, which deleteContent
// deletes.
var childTables = []string{"notes", "checklist_items", "tags", "aliases", "links"}

func newWriter(ctx context.Context, wc *writeConn, tx *sql.Tx, batch []Update) (*writer, error) {
	w := &writer{wc: wc, tx: tx, touched: make(map[string]bool), ids: make(map[string]int64, len(batch)),
		stmts: make(map[string]*sql.Stmt), ftsRows: make([]ftsRow, 0, len(batch))}
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
	buf := func(insert string, cols ...string) *rowBuffer {
		b := &rowBuffer{table: insert[strings.LastIndexByte(insert, ' ')+1:],
			insert: insert + " (" + strings.Join(cols, ", ") + ") VALUES ", ncols: len(cols)}
		w.buffers = append(w.buffers, b)
		return b
	}
	w.files = buf("INSERT INTO files", "id", "path", "path_key", "stem_key", "size", "mtime_ns", "hash", "state", "reason", "kind")
	w.notes = buf("INSERT INTO notes", "file_id", "title", "kind", "date", "margin_kind", "frontmatter_error",
		"status", "priority", "due", "scheduled", "estimate", "language", "labels", "headings", "first_section", "last_section",
		"props", "meta", "properties", "property_lines")
	w.sections = buf("INSERT INTO sections", "id", "file_id", "line", "body_line", "title", "heading", "body",
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

// stmt returns q prepared in the writer's transaction.
func (w *writer) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if s, ok := w.stmts[q]; ok {
		return s, nil
	}
	s, err := w.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("preparing %q: %w", q, err)
	}
	w.stmts[q] = s
	return s, nil
}

// exec runs q, prepared by stmt, with args.
func (w *writer) exec(ctx context.Context, q string, args ...any) error {
	s, err := w.stmt(ctx, q)
	if err == nil {
		_, err = s.ExecContext(ctx, args...)
	}
	return err
}

func (w *writer) close() {
	for _, s := range w.stmts {
		s.Close()
	}
}

// flush writes every buffered row except the FTS ones.
func (w *writer) flush(ctx context.Context) error {
	for _, b := range w.buffers {
		if err := b.flush(ctx, w.wc); err != nil {
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
		err := r.rows(func(args []any) error { return w.exec(ctx, insertFTSSQL, args...) },
			func(args []any) error { return w.exec(ctx, insertFieldsSQL, args...) })
		if err != nil {
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
		if err := w.exec(ctx, touchFileSQL, st.Size, st.MtimeNS, st.Hash, state, u.Reason, id); err != nil {
			return fmt.Errorf("updating file: %w", err)
		}
		return nil
	case id != 0:
		if err := w.deleteContent(ctx, id); err != nil {
			return err
		}
	}
	if u.Remove {
		if err := w.exec(ctx, deleteFileSQL, id); err != nil {
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
		if err := w.files.add(ctx, w.wc, id, u.Path, key, key[strings.LastIndexByte(key, '/')+1:],
			st.Size, st.MtimeNS, st.Hash, state, u.Reason, kind); err != nil {
			return err
		}
	} else if err := w.exec(ctx, updateFileSQL, st.Size, st.MtimeNS, st.Hash, state, u.Reason, kind, id); err != nil {
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
	sectionRange, err := w.stmt(ctx, sectionRangeSQL)
	if err != nil {
		return err
	}
	switch err := sectionRange.QueryRowContext(ctx, id).Scan(&lo, &hi); {
	case errors.Is(err, sql.ErrNoRows): // skipped or failed: no note, no sections
	case err != nil:
		return fmt.Errorf("finding sections: %w", err)
	case w.bulk != nil:
		// The note may not be in notes_fts (yet): Finish rebuilds it.
		w.bulk.spoil()
		if err := w.exec(ctx, deleteSectionsSQL, lo, hi); err != nil {
			return fmt.Errorf("deleting sections: %w", err)
		}
	default:
		if err := w.exec(ctx, deleteFTSSQL, id); err != nil {
			return fmt.Errorf("unindexing sections: %w", err)
		}
		if err := w.exec(ctx, deleteFieldsSQL, id); err != nil {
			return fmt.Errorf("unindexing sections: %w", err)
		}
		if err := w.exec(ctx, deleteSectionsSQL, lo, hi); err != nil {
			return fmt.Errorf("deleting sections: %w", err)
		}
	}
	for _, table := range childTables {
		if err := w.exec(ctx, `DELETE FROM `+table+` WHERE file_id = ?`, id); err != nil {
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
	props, properties, propertyLines := propertiesOf(n)
	meta := metaTokens(n)
	first := w.nextSection
	if err := w.notes.add(ctx, w.wc, id, n.Title, string(n.Kind), date, n.MarginKind, n.FrontmatterError,
		status, priority, due, scheduled, estimate, language, labels, string(headings), first, first+int64(len(secs))-1,
		props, meta, properties, propertyLines); err != nil {
		return err
	}
	w.ftsRows = append(w.ftsRows, noteRow(id, n.Path, noteTitle(n), props, meta, secs))
	for _, s := range secs {
		sid := w.nextSection
		w.nextSection++
		var tm, corr, start, end any
		if e := s.entry; e != nil {
			tm, corr, start, end = e.Time, e.Correction, e.Start, e.End
		}
		if err := w.sections.add(ctx, w.wc, sid, id, s.line, s.bodyLine, s.title, s.heading, s.text, date, s.listed, tm, corr, start, end); err != nil {
			return err
		}
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
		if err := w.links.add(ctx, w.wc, id, i, sid, l.Line, l.Target, l.Heading, key, rel); err != nil {
			return err
		}
	}
	for i, c := range n.Checklist {
		if err := w.checklist.add(ctx, w.wc, id, i, c.Line, string(c.State), c.Text,
			c.Due, c.Scheduled, c.Start, c.Done, c.Cancelled, c.Priority, c.ID); err != nil {
			return err
		}
	}
	for i, t := range n.Tags {
		if err := w.tags.add(ctx, w.wc, id, tagKey(t), t, i); err != nil {
			return err
		}
	}
	for i, a := range n.Aliases {
		if err := w.aliases.add(ctx, w.wc, id, note.LinkKey(a), a, i); err != nil {
			return err
		}
	}
	return nil
}

// chunkRows is how many rows one buffered INSERT writes. Past a few dozen
// the per-statement overhead is already amortised; the widest table (16
// columns) stays far below SQLite's limit of 32,766 parameters. It is a
// power of two: see flush.
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
	sqls   map[int]string // the INSERT of n rows, by n
}

func (b *rowBuffer) add(ctx context.Context, wc *writeConn, row ...any) error {
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
	return b.flush(ctx, wc)
}

// flush writes the buffered rows. A remainder of fewer than chunkRows rows
// goes out in power-of-two pieces (64 = 32 + 16 + ...), so that every
// INSERT it runs is one of seven per table, each prepared once for the
// write connection.
func (b *rowBuffer) flush(ctx context.Context, wc *writeConn) error {
	if len(b.args) == 0 {
		return nil
	}
	err := wc.conn.Raw(func(dc any) error {
		for args := b.args; len(args) > 0; {
			rows := len(args) / b.ncols
			n := 1 << (bits.Len(uint(rows)) - 1) // the largest power of two ≤ rows
			piece := args[:n*b.ncols]
			args = args[len(piece):]
			// Ordinals count from 1 within each statement.
			for i := range piece {
				piece[i].Ordinal = i + 1
			}
			if err := wc.exec(ctx, dc, b.sql(n), piece); err != nil {
				return err
			}
		}
		return nil
	})
	clear(b.args)
	b.args = b.args[:0]
	if err != nil {
		return fmt.Errorf("writing %s: %w", b.table, err)
	}
	return nil
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
	if q, ok := b.sqls[rows]; ok {
		return q
	}
	row := "(" + placeholders(b.ncols) + ")"
	q := b.insert + strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
	if b.sqls == nil {
		b.sqls = make(map[int]string)
	}
	b.sqls[rows] = q
	return q
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
