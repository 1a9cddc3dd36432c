// Package history keeps the record of every write margin makes into the
// vault (SPEC §11): what each write replaced and what it wrote, who and
// what it was for (edit.Cause), in the state database, and, when the vault
// is in a git work tree, as commits on refs/margin/history built in the
// object store (git.go). It undoes a change item's writes (undo.go), once
// the later writes that changed the item's lines are undone (touch.go).
//
// It is the edit.Root's Recorder: a write is recorded before it lands and
// settled after, so a process killed in between leaves a record that Open
// settles against the file. It knows nothing of agents or change sets
// beyond the names a Cause carries.
package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/store"
)

// schema holds the history's migration steps. Append, never edit.
var schema = []string{`
-- One row per write margin made into the vault. after is the whole file as
-- margin wrote it (until it is committed, see after_part); before, what it replaced, is kept as the bytes that differ
-- from after (see shrink): the first before_pre and the last before_suf bytes
-- are after's. state is 'writing' from just before the write
-- lands until it is known to have landed ('written'); a process killed in
-- between leaves 'writing', which Open settles against the file.
CREATE TABLE history (
	id         INTEGER PRIMARY KEY,
	at         TEXT    NOT NULL,
	path       TEXT    NOT NULL,
	task       TEXT    NOT NULL DEFAULT '',
	change_set TEXT    NOT NULL DEFAULT '',
	actor      TEXT    NOT NULL DEFAULT '',
	template   TEXT    NOT NULL DEFAULT '',
	model      TEXT    NOT NULL DEFAULT '',
	undo_of    INTEGER NOT NULL DEFAULT 0, -- the write this one reversed
	existed    INTEGER NOT NULL,
	before     BLOB,
	before_pre INTEGER NOT NULL DEFAULT 0,
	before_suf INTEGER NOT NULL DEFAULT 0,
	after      BLOB    NOT NULL,
	removed    INTEGER NOT NULL DEFAULT 0, -- the write removed the note (after is empty)
	in_editor  INTEGER NOT NULL DEFAULT 0,
	state      TEXT    NOT NULL,
	pid        INTEGER NOT NULL, -- the process writing, while 'writing'
	commit_id  TEXT    NOT NULL DEFAULT '' -- '' not committed yet, '-' no repository
);
CREATE INDEX history_at ON history(at);
CREATE INDEX history_task ON history(task, id);
CREATE INDEX history_uncommitted ON history(commit_id, state);

-- The change items a write applied. before/after are that item's part of
-- the write when it applied several (edit.Part), before kept as in history
-- (NULL: the item created the note); after NULL means the whole write.
CREATE TABLE history_items (
	write_id   INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE,
	item       TEXT    NOT NULL,
	before     BLOB,
	before_pre INTEGER NOT NULL DEFAULT 0,
	before_suf INTEGER NOT NULL DEFAULT 0,
	after      BLOB,
	PRIMARY KEY (write_id, item)
) WITHOUT ROWID;
CREATE INDEX history_items_item ON history_items(item, write_id);
`, `
-- A committed write (to git, or '-' where there is none) from which no change
-- item can be undone keeps of after only the bytes between before_pre and
-- before_suf (after_part = 1; see compact): what it wrote and what it
-- replaced, not the whole file again. A journal appended to at every wake
-- was otherwise stored whole at every wake.
ALTER TABLE history ADD COLUMN after_part INTEGER NOT NULL DEFAULT 0;
CREATE INDEX history_whole ON history(id) WHERE after_part = 0 AND existed = 1;
`, `
-- When the writing process started (proc.go), beside its pid: a process
-- killed while writing whose pid the kernel gave to another since is gone
-- all the same, and its writes are settled and committed. '' where the
-- system does not tell: the pid alone says then.
ALTER TABLE history ADD COLUMN pid_start TEXT NOT NULL DEFAULT '';
`, `
-- The later writes that changed the lines a change item's write wrote, or
-- wrote them back (touch.go): the item's undo waits until each of them is
-- undone, for it would take back their change too.
CREATE TABLE history_touches (
	touched_id INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE, -- the item's write
	item       TEXT    NOT NULL,
	write_id   INTEGER NOT NULL REFERENCES history(id) ON DELETE CASCADE, -- the later write
	PRIMARY KEY (touched_id, item, write_id)
) WITHOUT ROWID;
CREATE INDEX history_touches_write ON history_touches(write_id);
CREATE INDEX history_path ON history(path, id);
CREATE INDEX history_undo ON history(undo_of) WHERE undo_of <> 0;
`}

// Options configure the history.
type Options struct {
	// Keep is how long records are kept (90 days by default); the latest
	// record of each change item is kept longer, so it can still be undone.
	Keep   time.Duration
	Logger *slog.Logger
	// Git is the git program; "" finds it on PATH, "-" means none.
	Git string
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

// History is the record of margin's writes into one vault.
type History struct {
	db     *sql.DB
	root   *edit.Root
	opts   Options
	log    *slog.Logger
	git    *repo // nil: the vault is not in a git work tree, or there is no git
	looked bool  // whether git was looked for (see repo)

	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	closeMu sync.Once
}

// Open migrates the history's tables in db, settles the writes a killed
// process left unknown against root's files, prunes old records, and
// starts committing to git when the vault is in a work tree. Close it
// before db; it records nothing until root.SetRecorder(h).
func Open(ctx context.Context, db *sql.DB, root *edit.Root, opts Options) (*History, error) {
	if opts.Keep <= 0 {
		opts.Keep = 90 * 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := store.Migrate(ctx, db, "history", schema); err != nil {
		return nil, fmt.Errorf("opening margin's history: %w", err)
	}
	h := &History{db: db, root: root, opts: opts, log: opts.Logger,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	if err := h.reconcile(ctx); err != nil {
		return nil, err
	}
	if err := h.prune(ctx); err != nil {
		return nil, err
	}
	go h.commitLoop()
	h.kicked()
	return h, nil
}

// Close stops committing to git once what is recorded is committed (or
// after a few seconds: the rest is committed by the next margin).
func (h *History) Close() error {
	h.closeMu.Do(func() {
		close(h.stop)
		<-h.stopped
	})
	return nil
}

// Begin implements edit.Recorder.
func (h *History) Begin(ctx context.Context, rec edit.Record) (func(bool), error) {
	c := rec.Cause
	tx, err := h.db.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var (
		pre, suf int
		mid      []byte // NULL: the file did not exist
	)
	if rec.Existed {
		pre, suf, mid = shrink(rec.Before, rec.After)
	}
	res, err := tx.Exec(`INSERT INTO history (at, path, task, change_set, actor, template, model, undo_of, existed, before, before_pre, before_suf, after, removed, in_editor, state, pid, pid_start)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'writing', ?, ?)`,
		stamp(h.opts.Now()), rec.Path, c.Task, c.ChangeSet, c.Actor, c.Template, c.Model, c.Undo,
		rec.Existed, mid, pre, suf, nonNil(rec.After), rec.Removed, rec.InEditor, os.Getpid(), self())
	if err != nil {
		return nil, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	if err := touch(context.WithoutCancel(ctx), tx, id, rec); err != nil {
		return nil, err
	}
	items := rec.Parts
	if len(items) == 0 && c.Item != "" {
		items = []edit.Part{{Item: c.Item}}
	}
	for _, p := range items {
		var (
			b, a     any // NULL: the whole write
			pre, suf int
		)
		if p.Before != nil || p.After != nil {
			a = nonNil(p.After)
			if p.Before != nil { // else NULL: the item created the note
				var mid []byte
				pre, suf, mid = shrink(p.Before, p.After)
				b = mid
			}
		}
		if _, err := tx.Exec(`INSERT OR REPLACE INTO history_items (write_id, item, before, before_pre, before_suf, after) VALUES (?, ?, ?, ?, ?, ?)`,
			id, p.Item, b, pre, suf, a); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return func(landed bool) { h.settle(id, landed) }, nil
}

// settle marks a write landed, or forgets one that did not land. A failure
// leaves the record 'writing', which the next Open settles.
func (h *History) settle(id int64, landed bool) {
	var err error
	if landed {
		_, err = h.db.Exec(`UPDATE history SET state = 'written' WHERE id = ?`, id)
		h.kicked()
	} else {
		_, err = h.db.Exec(`DELETE FROM history WHERE id = ?`, id)
	}
	if err != nil {
		h.log.Warn("settling a write in margin's history; the next start settles it", "id", id, "err", err)
	}
}

func (h *History) kicked() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// reconcile settles the writes a process killed between recording and
// settling left: a file holding what margin wrote got it; a file holding
// what it replaced did not; any other file was edited since, and margin's
// write is kept as landed, which undo then refuses unless its text is
// still there.
func (h *History) reconcile(ctx context.Context) error {
	rows, err := h.db.QueryContext(ctx, `SELECT id, pid, pid_start, path, existed, before, before_pre, before_suf, after, removed FROM history WHERE state = 'writing'`)
	if err != nil {
		return fmt.Errorf("reading margin's history: %w", err)
	}
	type open struct {
		id            int64
		pid           int
		start         string
		path          string
		existed       bool
		before, after []byte
		removed       bool
	}
	var todo []open
	for rows.Next() {
		var o open
		var pre, suf int
		if err := rows.Scan(&o.id, &o.pid, &o.start, &o.path, &o.existed, &o.before, &pre, &suf, &o.after, &o.removed); err != nil {
			rows.Close()
			return fmt.Errorf("reading margin's history: %w", err)
		}
		o.before = grow(o.after, pre, suf, o.before)
		todo = append(todo, o)
	}
	rows.Close()
	for _, o := range todo {
		// This process has written nothing yet: a record with its pid is
		// from an earlier process that had it.
		if !mine(o.pid, o.start) && alive(o.pid, o.start) {
			continue // another margin is writing it right now
		}
		cur, err := h.root.ReadFile(o.path)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("settling margin's write of %s: %w", o.path, err)
		}
		asBefore := exists == o.existed && (!exists || bytes.Equal(cur, o.before))
		landed := !asBefore || (exists && !o.removed && bytes.Equal(cur, o.after))
		h.log.Info("settled a write a stopped margin left unknown", "path", o.path, "landed", landed)
		h.settle(o.id, landed)
	}
	return nil
}

// prune forgets records older than Keep, but never the latest record of a
// change item, which undo needs, nor what an undo's refusal reads (touch.go):
// a write that changed an item's lines since, and a write an undo
// reversed, without which an undo of that undo would not count as a redo.
func (h *History) prune(ctx context.Context) error {
	cutoff := stamp(h.opts.Now().Add(-h.opts.Keep))
	_, err := h.db.ExecContext(ctx, `DELETE FROM history WHERE at < ? AND state = 'written'
		AND id NOT IN (SELECT MAX(h.id) FROM history h JOIN history_items i ON i.write_id = h.id GROUP BY h.change_set, i.item)
		AND id NOT IN (SELECT write_id FROM history_touches)
		AND id NOT IN (SELECT undo_of FROM history WHERE undo_of <> 0)`, cutoff)
	if err != nil {
		return fmt.Errorf("pruning margin's history: %w", err)
	}
	return nil
}

// Entry is one write as margin's history lists it.
type Entry struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Path      string    `json:"path"`
	Task      string    `json:"task,omitempty"`
	ChangeSet string    `json:"changeSet,omitempty"`
	Items     []string  `json:"items,omitempty"`
	Actor     string    `json:"actor"`
	Template  string    `json:"template,omitempty"`
	Model     string    `json:"model,omitempty"`
	UndoOf    int64     `json:"undoOf,omitempty"`
	Created   bool      `json:"created,omitempty"` // the write created the file
	Removed   bool      `json:"removed,omitempty"` // the write removed it (an undo of its creation)
	InEditor  bool      `json:"inEditor,omitempty"`
	Commit    string    `json:"commit,omitempty"`
}

// Filter selects entries: by task (its writes, or writes of the note at
// that path), newest first, at most Limit (50 by default).
type Filter struct {
	Task  string
	Limit int
}

// List returns margin's writes, newest first.
func (h *History) List(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	rows, err := h.db.QueryContext(ctx, `SELECT h.id, h.at, h.path, h.task, h.change_set, h.actor, h.template, h.model, h.undo_of,
			h.existed, h.removed, h.in_editor, h.commit_id, COALESCE((SELECT group_concat(item, ' ') FROM history_items WHERE write_id = h.id), '')
		FROM history h WHERE h.state = 'written' AND (? = '' OR h.task = ? OR h.path = ?) ORDER BY h.id DESC LIMIT ?`,
		f.Task, f.Task, f.Task, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("listing margin's history: %w", err)
	}
	defer rows.Close()
	out := []Entry{}
	for rows.Next() {
		var (
			e       Entry
			at      string
			existed bool
			items   string
		)
		if err := rows.Scan(&e.ID, &at, &e.Path, &e.Task, &e.ChangeSet, &e.Actor, &e.Template, &e.Model, &e.UndoOf,
			&existed, &e.Removed, &e.InEditor, &e.Commit, &items); err != nil {
			return nil, fmt.Errorf("listing margin's history: %w", err)
		}
		e.At, _ = time.Parse(time.RFC3339Nano, at)
		e.Created = !existed
		e.Items = strings.Fields(items)
		if e.Commit == "-" {
			e.Commit = ""
		}
		if e.Actor == "" {
			e.Actor = "margin"
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// compact keeps of each committed write without change items only the
// whole lines it changed: what it wrote there, and what it replaced.
// Nothing reads the whole file of such a write again: git has it,
// reconcile reads the writes still 'writing', and an undo of the write
// (UndoWrite) finds those lines in the file as it is then.
func (h *History) compact(ctx context.Context) error {
	rows, err := h.db.QueryContext(ctx, `SELECT id, before, before_pre, before_suf, after FROM history
		WHERE after_part = 0 AND existed = 1 AND commit_id <> '' AND state = 'written'
		  AND NOT EXISTS (SELECT 1 FROM history_items i WHERE i.write_id = history.id)`)
	if err != nil {
		return fmt.Errorf("compacting margin's history: %w", err)
	}
	type part struct {
		id            int64
		before, after []byte
		pre, suf      int
	}
	var parts []part
	for rows.Next() {
		var p part
		if err := rows.Scan(&p.id, &p.before, &p.pre, &p.suf, &p.after); err != nil {
			rows.Close()
			return fmt.Errorf("compacting margin's history: %w", err)
		}
		if p.pre+p.suf > len(p.after) {
			continue // before kept whole (grow): nothing shared to cut
		}
		// The shared ends, cut back to whole lines: the line each end
		// begins or ends within joins both parts.
		pre := bytes.LastIndexByte(p.after[:p.pre], '\n') + 1
		end := len(p.after) - p.suf
		inAfter := end == 0 || p.after[end-1] == '\n'
		inBefore := true // where the shared end begins in before
		switch {
		case len(p.before) > 0:
			inBefore = p.before[len(p.before)-1] == '\n'
		case p.pre > 0:
			inBefore = p.after[p.pre-1] == '\n'
		}
		if p.suf > 0 && !(inAfter && inBefore) {
			if i := bytes.IndexByte(p.after[end:], '\n'); i >= 0 {
				end += i + 1
			} else {
				end = len(p.after)
			}
		}
		p.before = slices.Concat(p.after[pre:p.pre], p.before, p.after[len(p.after)-p.suf:end])
		p.pre, p.suf, p.after = pre, len(p.after)-end, p.after[pre:end]
		parts = append(parts, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("compacting margin's history: %w", err)
	}
	for _, p := range parts {
		if _, err := h.db.ExecContext(ctx, `UPDATE history SET before = ?, before_pre = ?, before_suf = ?, after = ?, after_part = 1
			WHERE id = ? AND after_part = 0`, nonNil(p.before), p.pre, p.suf, nonNil(p.after), p.id); err != nil {
			return fmt.Errorf("compacting margin's history: %w", err)
		}
	}
	return nil
}

// shrink keeps of before only what differs from after: the bytes between
// the longest prefix and suffix the two share (a journal's append keeps
// nothing of what it replaced, a field's splice the old line).
func shrink(before, after []byte) (pre, suf int, mid []byte) {
	pre, suf = edit.CommonEnds(before, after)
	return pre, suf, nonNil(before[pre : len(before)-suf])
}

// grow is the before that shrink kept mid of (the record's existed says
// whether there was one).
func grow(after []byte, pre, suf int, mid []byte) []byte {
	if pre+suf > len(after) {
		return mid // not made by shrink: kept whole
	}
	out := make([]byte, 0, pre+len(mid)+suf)
	out = append(append(append(out, after[:pre]...), mid...), after[len(after)-suf:]...)
	return out
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// nonNil stores an empty file as an empty blob, not NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
