package index

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// Scope is the notes a query's filters let through, for a search that
// ranks notes by something other than their words (search by meaning):
// the filters apply before that ranking, so a narrow filter still gets
// its best notes.
type Scope struct {
	// All is set when the query filters nothing but margin's outputs,
	// which Except then lists (none when the query keeps them); Paths is
	// nil. Listing the few outputs costs far less than listing every note.
	All    bool
	Except []string
	Paths  []string // without All: every note the filters let through, by path
}

// Allows reports whether the note at path is in the scope.
func (s Scope) Allows(path string) bool {
	if s.All {
		for _, p := range s.Except {
			if p == path {
				return false
			}
		}
		return true
	}
	for _, p := range s.Paths {
		if p == path {
			return true
		}
	}
	return false
}

// Scope returns the notes q's filters let through, its words aside: the
// date range, Glob, Tags, task fields, the key:value filters written in
// its Text, and Outputs.
func (ix *Index) Scope(ctx context.Context, q Query) (Scope, error) {
	text := q.Text
	q.Text = ""
	p, err := plan(q)
	if err != nil {
		return Scope{}, fmt.Errorf("scoping: %w", err)
	}
	_, _, props := matchExpr(text, ModeAll, nil)
	filters := strings.Join(p.scopeFilters(props), " AND ")

	var where []string
	var args []any
	if p.from != "" {
		where = append(where, "n.date BETWEEN ? AND ?")
		args = append(args, p.from, p.to)
	}
	if p.glob != "" {
		if p.exact {
			where = append(where, "f.path = ?")
		} else {
			where = append(where, "f.path GLOB ?")
		}
		args = append(args, p.glob)
	}
	if !p.fields.isZero() {
		where = append(where, "n.kind = 'task'")
		w, a := p.dueWhere()
		where, args = append(where, w...), append(args, a...)
	}
	if filters != "" {
		where = append(where, "n.file_id IN (SELECT "+noteOfRow("t.rowid")+" FROM notes_fts t WHERE t.notes_fts MATCH "+matchArg+")")
		args = append(args, filters)
	}

	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Scope{}, fmt.Errorf("scoping: %w", err)
	}
	defer tx.Rollback()
	var s Scope
	if len(where) == 0 {
		s.All = true
		if p.outputs {
			return s, nil
		}
		where, args = []string{"n.kind = ?"}, []any{string(note.KindMargin)}
	} else if !p.outputs {
		where = append(where, "n.kind <> ?")
		args = append(args, string(note.KindMargin))
	}
	err = collect(ctx, tx, `SELECT f.path FROM notes n JOIN files f ON f.id = n.file_id WHERE `+strings.Join(where, " AND "), args, func(rows *sql.Rows) error {
		var path string
		if err := rows.Scan(&path); err != nil {
			return err
		}
		switch {
		case s.All:
			s.Except = append(s.Except, path)
		case p.inGlob == nil || p.inGlob(path):
			s.Paths = append(s.Paths, path)
		}
		return nil
	})
	if err != nil {
		return Scope{}, fmt.Errorf("scoping: %w", err)
	}
	if !s.All && s.Paths == nil {
		s.Paths = []string{} // nothing passes: not nil, which would read as no filter
	}
	return s, nil
}

// scopeFilters are the FTS5 expressions of the property filters props
// (as matchExpr returns them), the task fields and the tags, built as plan
// builds them for a search by words (which keeps its own copy, so that the
// keyword path stays as it was measured); TestScope holds the two alike.
func (p *queryPlan) scopeFilters(props []string) []string {
	var filters []string
	for _, t := range props {
		filters = append(filters, metaExpr(t))
	}
	if !p.fields.isZero() {
		filters = append(filters, metaExpr(metaKind+string(note.KindTask)))
		if len(p.fields.Status) > 0 {
			filters = append(filters, metaExpr(tokensOf(metaStatus, p.fields.Status)...))
		}
		if len(p.fields.Priority) > 0 {
			filters = append(filters, metaExpr(tokensOf(metaPriority, p.fields.Priority)...))
		}
	}
	for _, k := range p.tags {
		filters = append(filters, metaExpr(metaToken(metaTag, k)))
	}
	return filters
}

// Place is a line of a note, as a search by meaning finds it: the start
// of one of its sections.
type Place struct {
	Path string
	Line int
}

// HitsAt returns a hit for each place, in order: the section holding its
// line, with the section's first words as the snippet. A place whose note
// is no longer indexed has no hit.
func (ix *Index) HitsAt(ctx context.Context, places []Place) ([]Hit, error) {
	if len(places) == 0 {
		return nil, nil
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `SELECT s.heading, s.line, COALESCE(s.date, ''), s.body
		FROM files f JOIN notes n ON n.file_id = f.id
		JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section
		WHERE f.path = ?1
		ORDER BY s.line <= ?2 DESC, CASE WHEN s.line <= ?2 THEN -s.line ELSE s.line END
		LIMIT 1`) // the last section starting at or before the line, else the first
	if err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	defer st.Close()
	out := make([]Hit, 0, len(places))
	for _, pl := range places {
		h := Hit{Path: pl.Path}
		var body string
		err := st.QueryRowContext(ctx, pl.Path, pl.Line).Scan(&h.Heading, &h.Line, &h.Date, &body)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading hits: %w", err)
		}
		h.SectionLine = h.Line
		if h.Heading == "" && body == "" {
			h.Line = 1 // as list does: past the frontmatter may be past the end of the file
		}
		h.Snippet = leadSnippet(body)
		out = append(out, h)
	}
	return out, nil
}
