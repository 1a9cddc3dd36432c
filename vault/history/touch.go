package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/edit"
)

// An item's undo puts back what it replaced where the note still holds
// what it wrote. A later write of margin's that changed those lines and
// another that changed them back leave the text as the item wrote it, yet
// undoing the item would take back theirs too. So each write records the
// items whose lines it changed (touch), and the undo of such an item
// waits until those writes are undone (laterWrite).

// touch records, for the write id about to land, which change items'
// writes of the same note it changes the lines of: lines it replaces, or
// that it writes as the item wrote them.
func touch(ctx context.Context, tx *sql.Tx, id int64, rec edit.Record) error {
	if !rec.Existed || rec.Removed {
		return nil
	}
	// The latest write of each item of the note, but this write's own:
	// their undo is of this write.
	rows, err := tx.QueryContext(ctx, `SELECT `+itemWriteColumns+` FROM history h JOIN history_items i ON i.write_id = h.id
		JOIN (SELECT MAX(h2.id) AS id, i2.item AS item FROM history h2 JOIN history_items i2 ON i2.write_id = h2.id
			WHERE h2.path = ? AND h2.state = 'written' AND h2.removed = 0 GROUP BY h2.change_set, i2.item) l
		ON l.id = h.id AND l.item = i.item`, rec.Path)
	if err != nil {
		return fmt.Errorf("reading margin's history: %w", err)
	}
	own := map[string]bool{rec.Cause.Item: true}
	for _, p := range rec.Parts {
		own[p.Item] = true
	}
	var touched []itemWrite
	lb, la := lines(rec.Before), lines(rec.After)
	pre, suf := edit.CommonEndsFunc(lb, la, bytes.Equal)
	// The lines this write changes and the line each side of them: an
	// item's lines meet this write's only if one of these is among them
	// or beside them, in the text the item wrote (changesLines).
	near := slices.Concat(lb[max(pre-1, 0):min(len(lb)-suf+1, len(lb))], la[max(pre-1, 0):min(len(la)-suf+1, len(la))])
	for rows.Next() {
		w, err := scanItemWrite(rows)
		if err != nil {
			rows.Close()
			return fmt.Errorf("reading margin's history: %w", err)
		}
		if w.set == rec.Cause.ChangeSet && own[w.item] {
			continue
		}
		if !slices.ContainsFunc(near, func(l []byte) bool { return bytes.Contains(w.after, l) }) {
			continue
		}
		wr := wroteBy(w.before, w.after)
		if changesLines(wr, lb, pre, len(lb)-suf) || changesLines(wr, la, pre, len(la)-suf) {
			touched = append(touched, w)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading margin's history: %w", err)
	}
	for _, w := range touched {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO history_touches (touched_id, item, write_id) VALUES (?, ?, ?)`,
			w.id, w.item, id); err != nil {
			return err
		}
	}
	return nil
}

// changesLines reports whether text, whose lines from..to a write
// changes, holds there the lines w: the two share a line, or the write
// inserts lines among them.
func changesLines(w wrote, text [][]byte, from, to int) bool {
	start, end, ok := w.in(text)
	switch {
	case !ok:
		return false
	case from == to: // an insertion
		return start < from && from < end
	case start == end: // the item removed lines here
		return from < start && start < to
	}
	return start < to && from < end
}

// laterWrite returns the latest of the writes recorded as changing the
// lines the item's write id wrote that still stands, nil when none does.
func (h *History) laterWrite(ctx context.Context, id int64, item string) (*LaterWrite, error) {
	return h.standing(ctx, `SELECT h.id, h.actor, h.change_set, h.undo_of,
			COALESCE((SELECT group_concat(item, ' ') FROM history_items WHERE write_id = h.id), '')
		FROM history_touches t JOIN history h ON h.id = t.write_id
		WHERE t.touched_id = ? AND t.item = ? AND h.state = 'written' ORDER BY h.id DESC`, id, item)
}

// standing returns the first of the writes query lists (id, actor, change
// set, undo_of, items) that still stands, nil when none does.
func (h *History) standing(ctx context.Context, query string, args ...any) (*LaterWrite, error) {
	rows, err := h.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading margin's history: %w", err)
	}
	type later struct {
		w      LaterWrite
		undoOf int64
	}
	var ls []later
	for rows.Next() {
		var (
			l     later
			items string
		)
		if err := rows.Scan(&l.w.Write, &l.w.Actor, &l.w.ChangeSet, &l.undoOf, &items); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading margin's history: %w", err)
		}
		l.w.Items = strings.Fields(items)
		if l.w.Actor == "" {
			l.w.Actor = "margin"
		}
		ls = append(ls, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading margin's history: %w", err)
	}
	for _, l := range ls {
		ok, err := h.stands(ctx, l.w.Write, l.undoOf)
		if err != nil {
			return nil, err
		}
		if ok {
			return &l.w, nil
		}
	}
	return nil, nil
}

// stands reports whether the change of write id, which reversed write
// undoOf (0: none), is in effect by margin's record: nothing undid it,
// and it is not the undo of a change in effect. An undo of an undo
// redid, and stands.
func (h *History) stands(ctx context.Context, id, undoOf int64) (bool, error) {
	var undone bool
	if err := h.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM history WHERE undo_of = ? AND undo_of <> 0 AND state = 'written')`, id).
		Scan(&undone); err != nil {
		return false, fmt.Errorf("reading margin's history: %w", err)
	}
	if undone {
		return false, nil
	}
	effect := true
	for undoOf != 0 {
		effect = !effect
		err := h.db.QueryRowContext(ctx, `SELECT undo_of FROM history WHERE id = ?`, undoOf).Scan(&undoOf)
		if errors.Is(err, sql.ErrNoRows) {
			break // pruned: a change of its own
		}
		if err != nil {
			return false, fmt.Errorf("reading margin's history: %w", err)
		}
	}
	return effect, nil
}
