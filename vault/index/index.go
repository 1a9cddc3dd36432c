// Package index keeps margin's note index, in a database file of its own:
// which vault files are indexed, skipped or failed; each note's title, kind,
// task fields, headings, daily entries, checklist items, tags, aliases and
// links; and an FTS5 full-text table over notes, whose hits point at the
// note's best section (heading section or daily entry) and line.
//
// It owns that file and its tables (files, notes, sections and the entries
// view, checklist_items, tags, aliases, links, notes_fts, index_state). It must not read the vault, parse markdown or
// decide what to index: the caller walks and watches the vault, parses each
// file with package note and hands the results to Apply. Everything here can
// be rebuilt from the vault, so the schema favours write speed (no foreign key
// checks; Apply deletes a file's rows itself) over enforcing relations.
package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/margin-md/margin/vault/store"
)

// ErrNotFound is returned when a path is not in the index.
var ErrNotFound = errors.New("not in index")

// Index is the note index over one database file. It is safe for concurrent
// use: Apply serialises writers through SQLite's write lock, and reads see
// the last committed batch (a reader and a committing writer wait for each
// other, see store.OpenRebuildable).
type Index struct {
	db   *sql.DB
	file *os.File // the database file, for the cold build's syncs (see Open); nil in memory

	// counts caches Counts, which editors poll through vault/status and
	// which costs a scan of two tables. Apply clears it. Another margin
	// process writing the same database does not, but whatever it indexes
	// this process's watcher sees and applies too.
	mu     sync.Mutex // guards counts, gen, bulk and unsynced
	counts *Counts
	gen    uint64 // bumped by every Apply, so a count read before it is not cached after it
	bulk   *Bulk  // the cold build under way, if any

	writing sync.Mutex // held through every write transaction (see write); guards wc
	wc      *writeConn

	// unsynced are the markers of cold builds that could not sync the
	// file: held until Close, so that no other process trusts the file
	// meanwhile, and the next Open after it rebuilds the index.
	unsynced []*coldMarker

	stmts stmtCache // of searches

	// ranker is a read-only pool on the same file whose connections never
	// wait for a lock, for the half of a long ranking that runs beside a
	// search's own transaction (see rankHalves); nil in memory.
	ranker      *sql.DB
	rankerStmts stmtCache
}

// Close closes the index's database.
func (ix *Index) Close() error {
	ix.writing.Lock()
	err := ix.dropWriteConn()
	ix.writing.Unlock()
	ix.stmts.close()
	if ix.ranker != nil {
		ix.rankerStmts.close()
		err = errors.Join(err, ix.ranker.Close())
	}
	err = errors.Join(err, store.CloseRebuildable(ix.db))
	if ix.file != nil {
		// Only now: closing it while SQLite's connections were open would
		// have dropped their locks.
		err = errors.Join(err, ix.file.Close())
	}
	ix.mu.Lock()
	for _, m := range ix.unsynced {
		m.f.Close()
	}
	ix.unsynced = nil
	ix.mu.Unlock()
	return err
}

// schema holds the migration steps of the index. Append, never edit.
var schema = []string{`
CREATE TABLE files (
	id       INTEGER PRIMARY KEY,
	path     TEXT    NOT NULL UNIQUE,
	path_key TEXT    NOT NULL, -- note.LinkKey(path): what a link by path resolves against
	stem_key TEXT    NOT NULL, -- path_key after its last '/': what a link by name resolves against
	size     INTEGER NOT NULL,
	mtime_ns INTEGER NOT NULL,
	hash     TEXT    NOT NULL,
	state    TEXT    NOT NULL CHECK (state IN ('indexed', 'skipped', 'failed')),
	reason   TEXT    NOT NULL DEFAULT '',
	kind     TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX files_path_key ON files(path_key);
CREATE INDEX files_stem_key ON files(stem_key);

CREATE TABLE notes (
	file_id           INTEGER PRIMARY KEY,
	title             TEXT    NOT NULL,
	kind              TEXT    NOT NULL,
	date              TEXT,
	margin_kind       TEXT    NOT NULL,
	frontmatter_error TEXT    NOT NULL,
	status            TEXT,
	priority          TEXT,
	due               TEXT,
	scheduled         TEXT,
	estimate          INTEGER,
	language          TEXT,
	labels            TEXT,             -- JSON array
	-- Headings are only ever read whole, with their note, so they are a
	-- JSON array of HeadingMeta here rather than rows to insert and index.
	headings          TEXT    NOT NULL,
	-- A note's sections have consecutive ids, so they are found (and
	-- deleted) by this range without an index on sections.file_id.
	first_section     INTEGER NOT NULL,
	last_section      INTEGER NOT NULL
);
CREATE INDEX notes_kind ON notes(kind);
CREATE INDEX notes_date ON notes(date) WHERE date IS NOT NULL;

-- A section is the preamble of a note (before its first heading), a heading
-- section, or a daily entry; its id is its rowid in sections_fts, whose text
-- it holds (title, heading, body, meta). Daily entries are sections with a
-- time, so an entry costs one row, not two.
CREATE TABLE sections (
	id           INTEGER PRIMARY KEY,
	file_id      INTEGER NOT NULL,
	line         INTEGER NOT NULL,
	title        TEXT    NOT NULL,  -- the note's title and aliases, on its first section only
	heading      TEXT    NOT NULL,
	body         TEXT    NOT NULL,
	meta         TEXT    NOT NULL,  -- filter tokens, see metaTokens
	date         TEXT,              -- the day of a daily note, on all its sections
	listed       INTEGER NOT NULL,  -- 1: stands for its entry or note in a query without text
	time         TEXT,              -- entries only, and only they have it
	correction   INTEGER,
	start_offset INTEGER,
	end_offset   INTEGER
);
CREATE VIEW entries AS
	SELECT id, file_id, date, time, correction, heading, line, start_offset, end_offset
	FROM sections WHERE time IS NOT NULL;

CREATE TABLE checklist_items (
	file_id   INTEGER NOT NULL,
	ord       INTEGER NOT NULL,
	line      INTEGER NOT NULL,
	state     TEXT    NOT NULL,
	text      TEXT    NOT NULL,
	due       TEXT    NOT NULL,
	scheduled TEXT    NOT NULL,
	start     TEXT    NOT NULL,
	done      TEXT    NOT NULL,
	cancelled TEXT    NOT NULL,
	priority  TEXT    NOT NULL,
	item_id   TEXT    NOT NULL,
	PRIMARY KEY (file_id, ord)
) WITHOUT ROWID;

CREATE TABLE tags (
	file_id INTEGER NOT NULL,
	tag_key TEXT    NOT NULL, -- lower-case, without '#'
	tag     TEXT    NOT NULL,
	ord     INTEGER NOT NULL, -- position in the note, to give tags back in order
	PRIMARY KEY (file_id, tag_key)
) WITHOUT ROWID;
CREATE INDEX tags_key ON tags(tag_key);

CREATE TABLE aliases (
	file_id   INTEGER NOT NULL,
	alias_key TEXT    NOT NULL, -- note.LinkKey(alias)
	alias     TEXT    NOT NULL,
	ord       INTEGER NOT NULL,
	PRIMARY KEY (file_id, alias_key)
) WITHOUT ROWID;
CREATE INDEX aliases_key ON aliases(alias_key);

CREATE TABLE links (
	file_id    INTEGER NOT NULL,
	ord        INTEGER NOT NULL,
	section_id INTEGER NOT NULL, -- the section (or entry) the link sits in
	line       INTEGER NOT NULL,
	target     TEXT    NOT NULL, -- as written
	heading    TEXT    NOT NULL,
	target_key TEXT    NOT NULL, -- note.LinkKey(target)
	rel_key    TEXT,             -- a target with a folder read relative to the linking note's, when that differs
	PRIMARY KEY (file_id, ord)
) WITHOUT ROWID;
CREATE INDEX links_target ON links(target_key);
CREATE INDEX links_rel ON links(rel_key) WHERE rel_key IS NOT NULL;

-- The search index over sections. It keeps no copy of the text (external
-- content): sections has it. The title column is filled on a note's first
-- section only, so a title match ranks that section without repeating the
-- title everywhere; meta lets FTS5 itself intersect a search with tag and
-- task-field filters.
CREATE VIRTUAL TABLE sections_fts USING fts5(
	title, heading, body, meta,
	content = 'sections', content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
`, `
-- Markers of an unfinished cold build (Bulk), which Open acts on: 'fts_pending'
-- while sections holds rows that sections_fts does not, and 'index:<name>'
-- with the SQL of each index the build dropped.
CREATE TABLE index_state (
	key   TEXT PRIMARY KEY,
	value ANY
) WITHOUT ROWID;
`, `
-- Search by note rather than by section, over text margin folds itself
-- (see searchText): every script is found, the terms of a query may sit in
-- different sections, and a note's tags and properties are indexed once,
-- not once per section. The old rows are dropped; the next walk indexes
-- the vault again.
DELETE FROM files; DELETE FROM notes; DELETE FROM sections; DELETE FROM checklist_items;
DELETE FROM tags; DELETE FROM aliases; DELETE FROM links; DELETE FROM index_state WHERE key = 'fts_pending';
DROP TABLE sections_fts;
DROP VIEW entries;
ALTER TABLE sections DROP COLUMN meta;
ALTER TABLE sections ADD COLUMN body_line INTEGER NOT NULL DEFAULT 0; -- line of the body's first byte
CREATE VIEW entries AS
	SELECT id, file_id, date, time, correction, heading, line, start_offset, end_offset
	FROM sections WHERE time IS NOT NULL;
ALTER TABLE notes ADD COLUMN props TEXT NOT NULL DEFAULT ''; -- frontmatter values, one field a line (see propertiesOf)
ALTER TABLE notes ADD COLUMN meta  TEXT NOT NULL DEFAULT ''; -- filter tokens, see metaTokens
-- One row per note, rowid = file id; contentless (sections and notes hold
-- the text), deleted by rowid.
CREATE VIRTUAL TABLE notes_fts USING fts5(
	title, path, headings, props, body, meta,
	content = '', contentless_delete = 1, tokenize = 'ascii'
);
`, `
-- Filter tokens now start with a noncharacter (see metaMark), so that words
-- are searched without a column filter. The old rows are dropped; the next
-- walk indexes the vault again (which also drops the setext underlines
-- older indexes kept as section text).
DELETE FROM files; DELETE FROM notes; DELETE FROM sections; DELETE FROM checklist_items;
DELETE FROM tags; DELETE FROM aliases; DELETE FROM links; DELETE FROM index_state WHERE key = 'fts_pending';
INSERT INTO notes_fts (notes_fts) VALUES ('delete-all');
`, `
-- A search's first tier (the notes whose title, aliases, path, headings or
-- properties hold the query) is found and ranked in a table of those fields
-- alone: a column filter on notes_fts made FTS5 sift the positions of every
-- match, body and all, for 30 to 80% of the tier's time. Its rows are
-- notes_fts's less the body (see ftsRow.rows). The old rows are dropped;
-- the next walk indexes the vault again, into both.
CREATE VIRTUAL TABLE fields_fts USING fts5(
	title, path, headings, props, meta,
	content = '', contentless_delete = 1, tokenize = 'ascii'
);
DELETE FROM files; DELETE FROM notes; DELETE FROM sections; DELETE FROM checklist_items;
DELETE FROM tags; DELETE FROM aliases; DELETE FROM links; DELETE FROM index_state WHERE key = 'fts_pending';
INSERT INTO notes_fts (notes_fts) VALUES ('delete-all');
`, `
-- A note's properties as written, "key: value" a line (see propertiesOf),
-- so that a quote of a note made of properties alone (a movie, a book, a
-- place) shows them. The old rows are dropped; the next walk indexes the
-- vault again.
ALTER TABLE notes ADD COLUMN properties TEXT NOT NULL DEFAULT '';
DELETE FROM files; DELETE FROM notes; DELETE FROM sections; DELETE FROM checklist_items;
DELETE FROM tags; DELETE FROM aliases; DELETE FROM links; DELETE FROM index_state WHERE key = 'fts_pending';
INSERT INTO notes_fts (notes_fts) VALUES ('delete-all');
INSERT INTO fields_fts (fields_fts) VALUES ('delete-all');
`, `
-- The file line of each line of properties ("2 3 3 5"; NULL without
-- properties), so that a search hit in a note's properties has the line
-- of the match. The old rows are dropped; the next walk indexes the vault
-- again.
ALTER TABLE notes ADD COLUMN property_lines TEXT;
DELETE FROM files; DELETE FROM notes; DELETE FROM sections; DELETE FROM checklist_items;
DELETE FROM tags; DELETE FROM aliases; DELETE FROM links; DELETE FROM index_state WHERE key = 'fts_pending';
INSERT INTO notes_fts (notes_fts) VALUES ('delete-all');
INSERT INTO fields_fts (fields_fts) VALUES ('delete-all');
`}

// searchTables are the index's FTS5 tables: notes_fts, every note's text,
// and fields_fts, the fields a search's first tier looks in (see search).
var searchTables = []string{"notes_fts", "fields_fts"}

// Optimize merges the search table's segments into one, which makes
// searches some 10% faster. Apply leaves a few segments per level behind;
// call this after a cold index or a large rescan, not after every batch: it
// rewrites the whole search table (about 0.15 s for 10,000 notes) and holds
// the write lock meanwhile.
func (ix *Index) Optimize(ctx context.Context) error {
	err := ix.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, t := range searchTables {
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+t+`(`+t+`) VALUES ('optimize')`); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM index_state WHERE key = 'fts_unmerged'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("optimizing the search index: %w", err)
	}
	return nil
}

// mergeAfter is how many notes a cold build must hold for MergeCold to
// merge what it leaves: fewer leave a segment or two, not worth a rewrite
// of the table.
const mergeAfter = 1000

// MergeCold optimizes the search table when a cold build (Bulk) of
// mergeAfter notes or more left it in segments and no Optimize merged
// them since, and says whether it did.
// A process that stays up after its first scan calls it: the cold build
// may have been another's (margin status, a command that exits), and its
// segments make every search some 13% slower until then.
func (ix *Index) MergeCold(ctx context.Context) (bool, error) {
	var cold bool
	if err := ix.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM index_state WHERE key = 'fts_unmerged')`).Scan(&cold); err != nil {
		return false, fmt.Errorf("optimizing the search index: %w", err)
	}
	if !cold {
		return false, nil
	}
	return true, ix.Optimize(ctx)
}

// Check verifies that the database file is sound (PRAGMA quick_check) and
// that the search index is sound (FTS5 integrity-check) and covers every note,
// for `margin doctor`. It reads everything: expect a fraction of a second
// for 10,000 notes.
func (ix *Index) Check(ctx context.Context) error {
	if err := store.Check(ctx, ix.db); err != nil {
		return fmt.Errorf("index database: %w", err)
	}
	// The search tables hold no text to compare with; each must hold a
	// first row for every note and none for anything else.
	var notes int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&notes); err != nil {
		return fmt.Errorf("checking the search index: %w", err)
	}
	for _, t := range searchTables {
		if _, err := ix.db.ExecContext(ctx, `INSERT INTO `+t+`(`+t+`) VALUES ('integrity-check')`); err != nil {
			return fmt.Errorf("search index is damaged: %s: %w", t, err)
		}
		var rows int
		if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM `+t+`_docsize WHERE id <= `+chunkMaskSQL).Scan(&rows); err != nil {
			return fmt.Errorf("checking the search index: %w", err)
		}
		if notes != rows {
			return fmt.Errorf("search index is damaged: %d notes, %d rows in %s", notes, rows, t)
		}
	}
	return nil
}
