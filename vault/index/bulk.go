package index

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/margin-md/margin/vault/store"
)

// Bulk is a cold build of the search tables. Writing notes_fts is half
// the cost of indexing, and SQLite has one writer per database, so while a
// Bulk is open Apply leaves the search tables alone and hands each
// committed batch's search text to other connections, which build
// identical FTS5 tables in scratch databases, one a table, on the other
// core. Finish copies their storage (notes_fts_data, _idx, _docsize, and
// fields_fts's) into the state database in one transaction. The
// secondary indexes of the other tables are dropped meanwhile and built
// again by Finish, in one sorted pass each, which costs a fraction of
// keeping them up to date row by row.
//
// Until Finish, a text search finds none of the notes applied since
// BeginBulk; queries without text see them as soon as their batch commits.
//
// Anything other than new notes while the Bulk is open (a note changed or
// removed, a failed batch, another process writing the search table), and
// Finish rebuilds notes_fts from sections instead of copying, which is
// slower but always right. A failed Finish leaves marker rows (in
// index_state) that the next Open sees: it restores the indexes and
// rebuilds the search table then, so a half-built one is never trusted.
//
// Until Finish, the batches are written without syncing (synchronous=OFF),
// which spares the writer a few fsyncs a batch, a twentieth of a cold
// index's time; a goroutine syncs the file after each batch instead, off
// the writer's path, so that what is left to sync at Finish is little. A
// coldMarker covers the writes not yet synced: should the process die
// before Finish has synced the file, the next Open deletes it and the vault
// is indexed again.
type Bulk struct {
	ix        *Index
	db        string // path of the index database
	marker    *coldMarker
	structure []byte // notes_fts's structure record when the Bulk began
	rows      chan []ftsRow
	built     chan error
	flush     chan struct{} // asks flusher to sync the batches written so far
	flushed   chan error
	applying  sync.WaitGroup // Applies that may still send rows

	mu    sync.Mutex // guards dirty
	dirty bool
}

// ftsStructureID is the rowid of an FTS5 table's structure record in its
// _data table: any write to the table changes it.
const ftsStructureID = 10

// BeginBulk starts a cold build. It returns nil (and no error) when the
// search table already holds something (a Bulk only pays off, and can only
// copy, into an empty one), when another process is building the same
// index, or off Unix, where its marker cannot be locked. Call Finish once
// the batches are applied.
func (ix *Index) BeginBulk(ctx context.Context) (*Bulk, error) {
	var empty bool
	if err := ix.db.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM notes_fts_docsize)`).Scan(&empty); err != nil {
		return nil, fmt.Errorf("starting a cold build: %w", err)
	}
	if !empty {
		return nil, nil
	}
	main, err := ix.path(ctx)
	if err != nil || main == "" { // an in-memory database has no file to put a scratch one beside
		return nil, err
	}
	ix.mu.Lock()
	running := ix.bulk != nil
	ix.mu.Unlock()
	if running {
		return nil, errors.New("starting a cold build: one is already running")
	}
	// One batch may wait for the scratch build: more would only lengthen
	// the wait at Finish and hold more memory.
	b := &Bulk{ix: ix, db: main, rows: make(chan []ftsRow, 1), built: make(chan error, 1),
		flush: make(chan struct{}, 1), flushed: make(chan error, 1)}
	if err := ix.db.QueryRowContext(ctx, `SELECT block FROM notes_fts_data WHERE id = ?`, ftsStructureID).Scan(&b.structure); err != nil {
		return nil, fmt.Errorf("starting a cold build: %w", err)
	}
	if b.marker, err = markCold(main); err != nil || b.marker == nil {
		// nil: another process is building this index; it will finish it.
		return nil, err
	}
	go func() { b.flushed <- b.flusher() }()
	if err := b.removeScratch(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting a cold build: %w", err), b.release(ctx))
	}
	var fields *sql.DB
	notes, err := b.openScratch(ctx, notesScratch)
	if err == nil {
		fields, err = b.openScratch(ctx, fieldsScratch)
	}
	if err == nil {
		err = ix.inTx(ctx, dropIndexes)
	}
	if err == nil {
		err = ix.setSynchronous(ctx, "OFF")
	}
	if err != nil {
		for _, db := range []*sql.DB{notes, fields} {
			if db != nil {
				db.Close()
			}
		}
		b.removeScratch()
		return nil, errors.Join(fmt.Errorf("starting a cold build: %w", err), b.release(ctx))
	}
	ix.mu.Lock()
	ix.bulk = b
	ix.mu.Unlock()
	go func() { b.built <- b.build(notes, fields) }()
	return b, nil
}

// createIndex is how every index that dropIndexes drops is written; it
// recreates them with IF NOT EXISTS, as another process may have already.
const createIndex = "CREATE INDEX "

// dropIndexes drops the secondary indexes of the tables Apply fills and
// records each one's SQL in index_state, in the same transaction, for
// restoreIndexes.
func dropIndexes(ctx context.Context, tx *sql.Tx) error {
	var names, sqls []string
	err := collect(ctx, tx, `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL
		AND tbl_name IN ('files', 'notes', 'checklist_items', 'tags', 'aliases', 'links')`, nil,
		func(r *sql.Rows) error {
			var name, q string
			if err := r.Scan(&name, &q); err != nil {
				return err
			}
			if strings.HasPrefix(q, createIndex) {
				names, sqls = append(names, name), append(sqls, q)
			}
			return nil
		})
	if err != nil {
		return err
	}
	for i, name := range names {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_state (key, value) VALUES (?, ?)`, "index:"+name, sqls[i]); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
			return err
		}
	}
	return nil
}

// restoreIndexes creates the indexes dropIndexes dropped.
func restoreIndexes(ctx context.Context, tx *sql.Tx) error {
	var sqls []string
	err := collect(ctx, tx, `SELECT value FROM index_state WHERE key LIKE 'index:%'`, nil, func(r *sql.Rows) error {
		var q string
		err := r.Scan(&q)
		sqls = append(sqls, q)
		return err
	})
	if err != nil {
		return err
	}
	for _, q := range sqls {
		if _, err := tx.ExecContext(ctx, createIndex+"IF NOT EXISTS "+strings.TrimPrefix(q, createIndex)); err != nil {
			return fmt.Errorf("restoring an index: %w", err)
		}
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM index_state WHERE key LIKE 'index:%'`)
	return err
}

// path is the index database's file, "" for an in-memory one.
func (ix *Index) path(ctx context.Context) (string, error) {
	var seq int
	var name, file string
	if err := ix.db.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		return "", fmt.Errorf("finding the index database: %w", err)
	}
	return file, nil
}

// A scratchTable is a search table that a cold build makes in a scratch
// database of its own, with the same columns and tokenizer as the
// index's, so that its storage can be copied there as is. (A larger FTS5
// hashsize, 4 or 16 MB rather than 1, made fewer segments but cost as
// much CPU and 10-20 MB more memory.)
type scratchTable struct {
	name   string   // notes_fts or fields_fts
	suffix string   // of its database's path, after the index's
	schema []string // makes it in the scratch database
}

var (
	notesScratch = scratchTable{"notes_fts", "-bulk", []string{
		`CREATE VIRTUAL TABLE notes_fts USING fts5(
			title, path, headings, props, body, meta, content = '', contentless_delete = 1, tokenize = 'ascii')`,
		// FTS5 merges level by level as it goes, four segments at a time
		// by default, rewriting the same data once per level: 8% of a cold
		// index's CPU at 10k notes. Sixteen at a time rewrites it a third
		// as often; the table ends with up to 15 segments a level instead
		// of 3, which costs searches some 15% until later writes merge it
		// further. The setting lives in the scratch table's config, which
		// is not copied.
		`INSERT INTO notes_fts (notes_fts, rank) VALUES ('automerge', 16)`,
	}}
	fieldsScratch = scratchTable{"fields_fts", "-bulk-fields", []string{
		`CREATE VIRTUAL TABLE fields_fts USING fts5(
			title, path, headings, props, meta, content = '', contentless_delete = 1, tokenize = 'ascii')`,
		`INSERT INTO fields_fts (fields_fts, rank) VALUES ('automerge', 16)`,
		// The fields hold many distinct terms and little else, which FTS5
		// keeps in memory at several times the hash size it counts: at
		// the default 1 MB, the help vault's cold index peaked 5 MiB
		// higher than at 128 KiB (103.6 against 98.3 MiB, median of 5).
		`INSERT INTO fields_fts (fields_fts, rank) VALUES ('hashsize', 131072)`,
	}}
	scratchTables = []scratchTable{notesScratch, fieldsScratch}
)

// scratchPath is the path of t's scratch database, beside the index's.
func (b *Bulk) scratchPath(t scratchTable) string { return b.db + t.suffix }

// openScratch opens t's scratch database with one connection and no
// journal, and makes t there: the database is deleted after use, and a
// crash leaves the marker behind.
func (b *Bulk) openScratch(ctx context.Context, t scratchTable) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(OFF)")
	q.Add("_pragma", "synchronous(OFF)")
	q.Add("_pragma", "locking_mode(EXCLUSIVE)")
	q.Add("_pragma", fmt.Sprintf("page_size(%d)", store.RebuildablePageSize))
	db, err := sql.Open("sqlite", store.FileURI(b.scratchPath(t), q))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range t.schema {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// removeScratch removes the scratch databases.
func (b *Bulk) removeScratch() error {
	var err error
	for _, t := range scratchTables {
		err = errors.Join(err, removeDB(b.scratchPath(t)))
	}
	return err
}

// A searchRow is one statement of the scratch build: the arguments of
// insertFTSSQL, or of insertFieldsSQL when fields, its text folded.
type searchRow struct {
	args   []any
	fields bool
}

// fold turns the notes it is sent into search rows until rows is closed,
// on a goroutine of its own: folding is a fifth of the scratch build's
// CPU on a vault in many scripts, where the build is the slowest stage,
// and would otherwise wait for the inserts. It hands them over foldNotes
// notes (or foldBytes of text) at a time and lets go of each note once
// folded, so that it holds little more text than a batch. Once build has
// stopped (quit), it only drains rows, so that Apply never blocks on it.
func (b *Bulk) fold(folded chan<- []searchRow, quit <-chan struct{}) {
	defer close(folded)
	var (
		out         []searchRow
		notes, held int
	)
	add := func(fields bool) func([]any) error {
		return func(args []any) error {
			out = append(out, searchRow{args: args, fields: fields})
			return nil
		}
	}
	toNotes, toFields := add(false), add(true)
	for rows := range b.rows {
		for i := range rows {
			rows[i].rows(toNotes, toFields)
			notes, held = notes+1, held+rows[i].size()
			rows[i] = ftsRow{}
			if notes < foldNotes && held < foldBytes && i < len(rows)-1 {
				continue
			}
			select {
			case folded <- out:
				out, notes, held = nil, 0, 0
			case <-quit:
				for range b.rows {
				}
				return
			}
		}
	}
}

// fold hands build foldNotes notes at a time, or fewer of foldBytes of
// text: a note at a time, build waited on a channel for each of the notes
// of a vault that folds fast; a batch at a time, long notes held twice
// the memory.
const (
	foldNotes = 64
	foldBytes = 1 << 20
)

// build indexes the rows fold sends it until they end: notes_fts on
// this goroutine, fields_fts on one of its own, each in its scratch
// database. On the Obsidian help vault, whose unspaced scripts are indexed
// by character pairs, building both on one connection was the cold
// index's critical path, with the writer's core idle for part of it.
func (b *Bulk) build(notes, fields *sql.DB) error {
	folded, quit := make(chan []searchRow), make(chan struct{})
	go b.fold(folded, quit)
	defer close(quit)
	forFields, fieldsBuilt := make(chan []searchRow, 1), make(chan error, 1)
	go func() {
		// fields_fts is a tenth of the size of notes_fts and read by
		// every search, so it is merged now (20 ms at 10k notes, and 7%
		// off the mean search of the table's segments); notes_fts waits
		// for MergeCold.
		err := insertRows(fields, true, forFields, nil, `INSERT INTO fields_fts (fields_fts) VALUES ('optimize')`)
		for range forFields { // a failed fields_fts must not hold up notes_fts
		}
		fieldsBuilt <- err
	}()
	err := insertRows(notes, false, folded, forFields, "")
	close(forFields)
	return errors.Join(err, <-fieldsBuilt)
}

// insertRows inserts the rows of each batch from in whose fields flag is
// fields (insertFieldsSQL, else insertFTSSQL) into db, in one
// transaction, then runs last, if any, and closes db. Each batch goes on
// to next first, unless next is nil.
func insertRows(db *sql.DB, fields bool, in <-chan []searchRow, next chan<- []searchRow, last string) (err error) {
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := insertFTSSQL
	if fields {
		q = insertFieldsSQL
	}
	// Straight to the driver, as rowBuffer does: database/sql would convert
	// and copy the arguments of each of the (tens of thousands of) rows.
	err = conn.Raw(func(dc any) error {
		insert, err := prepareRaw(ctx, dc, q)
		if err != nil {
			return err
		}
		defer insert.Close()
		args := make([]driver.NamedValue, 7)
		for rows := range in {
			if next != nil {
				next <- rows
			}
			// One row per statement, as in Apply: see writer.
			for _, r := range rows {
				if r.fields != fields {
					continue
				}
				for i, v := range r.args {
					args[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
				}
				if err := execRaw(ctx, insert, args[:len(r.args)]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if last != "" {
		if _, err := tx.ExecContext(ctx, last); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// indexed takes the search text of a committed batch.
func (b *Bulk) indexed(rows []ftsRow) {
	select {
	case b.flush <- struct{}{}:
	default: // a sync is pending, and covers this batch too
	}
	b.rows <- rows
}

// flusher syncs the index database whenever a batch asks it to, until
// flush is closed. It reports the first error, which leaves the marker in
// place.
func (b *Bulk) flusher() error {
	var err error
	for range b.flush {
		if e := syncFile(b.ix.file); err == nil {
			err = e
		}
	}
	return err
}

// spoil makes Finish rebuild rather than copy.
func (b *Bulk) spoil() {
	b.mu.Lock()
	b.dirty = true
	b.mu.Unlock()
}

// Finish ends the cold build, makes the search table whole and syncs the
// index to disk. Applies after (or during) Finish write notes_fts and
// sync as usual.
func (b *Bulk) Finish(ctx context.Context) (err error) {
	ix := b.ix
	ix.mu.Lock()
	ix.bulk = nil
	ix.mu.Unlock()
	b.applying.Wait()
	close(b.rows)
	defer func() { err = errors.Join(err, b.release(ctx)) }()
	// While the scratch table is being finished on the other core. Should
	// this fail, the markers stay and the next Open restores the indexes.
	rerr := ix.inTx(ctx, restoreIndexes)
	berr := <-b.built
	defer b.removeScratch()
	if rerr != nil {
		return fmt.Errorf("finishing the cold build: restoring indexes: %w", rerr)
	}
	b.mu.Lock()
	dirty := b.dirty || berr != nil
	b.mu.Unlock()
	if !dirty {
		copied, err := b.copy(ctx)
		if err != nil {
			return fmt.Errorf("finishing the cold build: %w", err)
		}
		if copied {
			return nil
		}
	}
	if err := ix.rebuild(ctx); err != nil {
		return fmt.Errorf("finishing the cold build: %w", err)
	}
	return nil
}

// release puts the write connection back to synchronous writes, syncs
// what the cold build wrote and removes its marker. Should syncing fail,
// the marker stays, held until the index is closed: the next Open after
// that rebuilds the index.
func (b *Bulk) release(ctx context.Context) error {
	close(b.flush)
	err := <-b.flushed
	if serr := b.ix.setSynchronous(ctx, "NORMAL"); serr != nil {
		// The next write connection starts with it from its DSN.
		b.ix.writing.Lock()
		b.ix.dropWriteConn()
		b.ix.writing.Unlock()
	}
	if err == nil {
		err = b.marker.release(b.ix.file)
	}
	if err != nil {
		b.ix.mu.Lock()
		b.ix.unsynced = append(b.ix.unsynced, b.marker)
		b.ix.mu.Unlock()
		return fmt.Errorf("finishing the cold build: %w", err)
	}
	return nil
}

// setSynchronous sets the write connection's synchronous pragma, which
// SQLite does not allow inside a transaction.
func (ix *Index) setSynchronous(ctx context.Context, level string) error {
	ix.writing.Lock()
	defer ix.writing.Unlock()
	wc, err := ix.writeConn(ctx)
	if err == nil {
		_, err = wc.conn.ExecContext(ctx, `PRAGMA synchronous = `+level)
	}
	return err
}

// copy moves the scratch table into notes_fts unless something else
// wrote notes_fts meanwhile. It runs on a connection of its own: FTS5
// caches a table's structure per connection and notices only other
// connections' commits, so the pool's connections must not be the writer.
func (b *Bulk) copy(ctx context.Context) (bool, error) {
	db, err := store.OpenRebuildable(ctx, b.db)
	if err != nil {
		return false, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	// Like the batches, unsynced: release syncs the file once, after it.
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = OFF`); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, store.BulkCacheSize); err != nil {
		return false, err
	}
	for _, t := range scratchTables {
		if _, err := conn.ExecContext(ctx, `ATTACH DATABASE ? AS scratch_`+t.name, b.scratchPath(t)); err != nil {
			return false, err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE scratch_`+t.name)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var structure []byte
	if err := tx.QueryRowContext(ctx, `SELECT block FROM main.notes_fts_data WHERE id = ?`, ftsStructureID).Scan(&structure); err != nil {
		return false, err
	}
	if string(structure) != string(b.structure) {
		return false, nil
	}
	var copies []string
	for _, t := range scratchTables {
		for _, part := range []string{"_data", "_idx", "_docsize"} {
			table := t.name + part
			copies = append(copies, `DELETE FROM main.`+table, `INSERT INTO main.`+table+` SELECT * FROM scratch_`+t.name+`.`+table)
		}
	}
	for _, q := range append(copies,
		`DELETE FROM main.index_state WHERE key = 'fts_pending'`,
		// See MergeCold; a smaller build leaves a segment or two.
		`INSERT OR REPLACE INTO main.index_state (key, value) SELECT 'fts_unmerged', 1 WHERE (SELECT count(*) FROM main.notes) >= `+fmt.Sprint(mergeAfter),
	) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

// rebuild restores the indexes a cold build dropped, indexes every section
// again and drops the markers of an unfinished cold build.
func (ix *Index) rebuild(ctx context.Context) error {
	err := ix.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := restoreIndexes(ctx, tx); err != nil {
			return err
		}
		if err := rebuildFTS(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM index_state WHERE key = 'fts_pending'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("rebuilding the search index: %w", err)
	}
	return nil
}

// repair finishes a cold build that did not finish.
func (ix *Index) repair(ctx context.Context) error {
	var pending bool
	err := ix.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM index_state WHERE key = 'fts_pending' OR key LIKE 'index:%')`).Scan(&pending)
	if err != nil || !pending {
		return err
	}
	return ix.rebuild(ctx)
}

// inTx runs f in a write transaction.
func (ix *Index) inTx(ctx context.Context, f func(context.Context, *sql.Tx) error) error {
	return ix.write(ctx, func(_ *writeConn, tx *sql.Tx) error { return f(ctx, tx) })
}

func removeDB(path string) error {
	for _, p := range []string{path, path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
