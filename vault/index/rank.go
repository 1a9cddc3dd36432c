package index

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/margin-md/margin/vault/note"
)

// Column weights of notes_fts and fields_fts for bm25, in their column
// order: a word in the title (or an alias) or the path says more about a
// note than one in its headings or properties, and those more than one in
// its body.
const (
	rankWeights  = "10.0, 6.0, 4.0, 3.0, 1.0, 0.0"
	fieldWeights = "10.0, 6.0, 4.0, 3.0, 0.0"
)

// matchArg is the right side of MATCH: an expression rather than a bare
// parameter, which FTS5 looks at while SQLite plans the statement, so that
// SQLite compiled it again each time it was bound to another query.
const matchArg = "(? || '')"

// scored is a matching note and its bm25 score, lower is better.
type scored struct {
	id    int64
	score float64
}

// search runs a query with text: rank the matching notes, keep the best,
// then find each one's best section.
func (p *queryPlan) search(ctx context.Context, tx readTx) (Result, error) {
	m, err := p.matchesOf(ctx, tx)
	if err != nil || m == nil {
		return Result{}, err
	}
	if m.named, err = p.namedNotes(ctx, tx); err != nil {
		return Result{}, err
	}
	m.first = int64Args(slices.Collect(maps.Keys(m.named)))
	if p.literals != nil {
		if held, err := m.keepLiterals(ctx, tx); err != nil || !held {
			return Result{}, err
		}
	}
	limit := 0 // with a glob to check in Go, every match crosses
	if p.inGlob == nil {
		limit = p.limit + 1 // one more, to tell a cut list
	}
	var cands []scored
	var complete bool // every match is in cands
	total := -1       // of matches, once counted
	switch {
	case p.words == "":
		// Only filters: one tier, every weight 0.
		cands, err = m.rank(ctx, tx, "notes_fts", "0.0", limit)
		complete = limit == 0 || len(cands) < limit
	case p.tiered():
		cands, total, err = p.rankQuestion(m.named, questionReads{
			notesOf: func(table, expr string) ([]int64, error) { return m.notesOf(ctx, tx, table, expr) },
			rankBy:  func(r ranking) ([]scored, error) { return m.rankNotes(ctx, tx, r) },
			rows:    func(phrase string) (int, error) { return rowsHolding(ctx, tx, phrase) },
		})
	default:
		cands, total, complete, err = m.rankTiers(ctx, tx, limit)
	}
	if err != nil {
		return Result{}, err
	}
	var r Result
	switch {
	case complete:
		r.Total = len(cands)
	case total >= 0:
		r.Total = total
	default:
		if r.Total, err = m.count(ctx, tx); err != nil {
			return Result{}, err
		}
	}
	r.Truncated = r.Total > p.limit
	if len(cands) == 0 {
		return r, nil
	}
	r.Hits, err = p.hits(ctx, tx, cands[:min(len(cands), p.limit)])
	return r, err
}

// matches is a search's statements over a search table, named t, in
// pieces: what a row must meet past its MATCH, and the notes the query
// names, which rank first.
type matches struct {
	p     *queryPlan
	id    string   // the note id of a row of t
	path  string   // the path of its note: '' without a glob to check in Go
	joins []string // the tables CROSS JOINed to t
	where []string // the conditions past t's MATCH
	args  []any    // the match, then where's arguments

	named map[int64]bool
	// The ids rank puts first: the named notes, or those of a question
	// sure of a place on the page (see rankNotes).
	first []any
}

// matchesOf turns p's filters into the search's statement pieces; nil when
// the date range or the glob's folder holds no note, so nothing matches.
func (p *queryPlan) matchesOf(ctx context.Context, tx readTx) (*matches, error) {
	m := &matches{p: p, id: "t.rowid", path: "''", args: []any{p.match}}
	// A long note has several search rows (see ftsRow.rows): when there is
	// one, rows map to notes and each note keeps its best row.
	if err := tx.QueryRowContext(ctx, chunkedSQL).Scan(&p.chunked); err != nil {
		return nil, fmt.Errorf("matching: %w", err)
	}
	if p.chunked {
		m.id = noteOfRow("t.rowid")
		if p.words != "" && p.filters != "" {
			// A filter holds for the whole note, wherever its tokens
			// sit, while the words must meet in one row.
			m.args[0] = p.leaveOutputs(p.words)
			m.restrict(`+`+m.id+` IN (SELECT `+noteOfRow("v.rowid")+` FROM notes_fts v WHERE v.notes_fts MATCH `+matchArg+`)`, p.filters)
		}
		if !p.outputs {
			m.restrict(`+` + m.id + ` NOT IN (` + longOutputsSQL + `)`)
		}
	}
	due := p.fields.DueFrom != "" || p.fields.DueTo != ""
	if p.from != "" || due {
		m.joins = append(m.joins, "notes n ON n.file_id = "+m.id)
	}
	if p.from != "" {
		m.restrict("n.date BETWEEN ? AND ?", p.from, p.to)
		// Daily notes sit in a narrow band of file ids (notes are indexed
		// in walk order, and daily notes sort by date), so bounding the
		// rowid lets FTS5 skip the rest of a common word's matches.
		w, a, err := p.idBound(ctx, tx, `SELECT MIN(file_id), MAX(file_id) FROM notes WHERE date BETWEEN ? AND ?`, p.from, p.to)
		if err != nil || w == "" {
			return nil, err
		}
		m.restrict(w, a...)
	}
	if p.prefix != "" {
		w, a, err := p.idBound(ctx, tx, `SELECT MIN(id), MAX(id) FROM files WHERE path >= ? AND path < ?`, p.prefix, prefixEnd(p.prefix))
		if err != nil || w == "" {
			return nil, err
		}
		m.restrict(w, a...)
	}
	if p.glob != "" {
		m.joins = append(m.joins, "files f ON f.id = "+m.id)
		m.path = "f.path"
		if p.exact {
			m.restrict("f.path = ?", p.glob)
		} else {
			m.restrict("f.path GLOB ?", p.glob)
		}
	}
	if due {
		w, a := p.dueWhere()
		m.where, m.args = append(m.where, w...), append(m.args, a...)
	}
	return m, nil
}

// restrict adds the condition w, with its arguments.
func (m *matches) restrict(w string, args ...any) {
	m.where = append(m.where, w)
	m.args = append(m.args, args...)
}

// restrictTo keeps the notes ids. The '+' keeps SQLite from looking each
// up in FTS5.
func (m *matches) restrictTo(ids []int64) {
	m.restrict(`+`+m.id+` IN (SELECT value FROM json_each(?))`, jsonIDs(ids))
}

// from is the statements' tables and conditions over table. CROSS JOIN
// keeps the FTS table as the outer loop: SQLite would otherwise start from
// a selective filter and probe FTS5 per row, which is orders of magnitude
// slower.
func (m *matches) from(table string) string {
	f := ` FROM ` + table + ` t`
	for _, j := range m.joins {
		f += " CROSS JOIN " + j
	}
	return f + " WHERE " + strings.Join(append([]string{table + " MATCH " + matchArg}, m.where...), " AND ")
}

// keepLiterals keeps, of the notes that hold the letters of a word with
// symbols, those that hold it as written; false when none does.
func (m *matches) keepLiterals(ctx context.Context, tx readTx) (bool, error) {
	var cands []int64
	err := collect(ctx, tx, `SELECT DISTINCT `+m.id+m.from("notes_fts"), m.args, func(r *sql.Rows) error {
		var c int64
		cands = append(cands, c)
		return r.Scan(&cands[len(cands)-1])
	})
	if err != nil {
		return false, fmt.Errorf("matching: %w", err)
	}
	held, err := m.p.literals.holding(ctx, tx, m.id, cands)
	if err != nil || len(held) == 0 {
		return false, err
	}
	m.restrictTo(held)
	return true, nil
}

// rank returns the notes whose rows in table match, in order, scored by
// score, at most limit (0: all); with rowids (lo, hi), only those of rows
// lo to hi. tx is the search's or one beside it.
//
// Within a tier, the notes m.first names first, then by score; ties in
// the index's order. Without a glob to check in Go, SQLite keeps the best
// rows itself (a bounded sort, no row crossing to Go but those), and
// counts the rest without ranking them. The '+' keeps SQLite from looking
// the first notes up in FTS5 one by one.
func (m *matches) rank(ctx context.Context, tx readTx, table, score string, limit int, rowids ...int64) ([]scored, error) {
	q := m.from(table)
	var within []any
	if len(rowids) == 2 {
		q += " AND t.rowid BETWEEN ? AND ?"
		within = []any{rowids[0], rowids[1]}
	}
	lim := ""
	if limit > 0 {
		lim = fmt.Sprintf(" LIMIT %d", limit)
	}
	if m.p.chunked {
		// Materialized: bm25 cannot run inside the aggregate.
		q = `WITH m AS MATERIALIZED (SELECT ` + m.id + ` AS note, ` + m.path + ` AS path, ` + score + ` AS score` + q +
			`) SELECT note, path, min(score) FROM m GROUP BY note ORDER BY +note IN (` + placeholders(len(m.first)) + `) DESC, 3, note` + lim
	} else {
		q = `SELECT ` + m.id + `, ` + m.path + `, ` + score + q + ` ORDER BY +` + m.id + ` IN (` + placeholders(len(m.first)) + `) DESC, 3, ` + m.id + lim
	}
	var out []scored
	err := collect(ctx, tx, q, slices.Concat(m.args, within, m.first), func(rows *sql.Rows) error {
		var c scored
		var path string
		if err := rows.Scan(&c.id, &path, &c.score); err != nil {
			return err
		}
		if m.p.inGlob == nil || m.p.inGlob(path) {
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("matching: %w", err)
	}
	return out, nil
}

// notesOf lists the notes matching expr, an expression of the query's
// words, in the search table, with the query's filters, and without
// margin's outputs unless the query keeps them, as the search's match:
// sorted by id, each once.
func (m *matches) notesOf(ctx context.Context, tx readTx, table, expr string) ([]int64, error) {
	a := slices.Clone(m.args)
	a[0] = m.p.leaveOutputs(m.p.withFilters(expr))
	if m.p.inGlob == nil {
		// In one row: a row crossing to Go costs more than finding it.
		// The rows' ids, made notes in Go (notesOfRows) rather than by
		// SQLite's DISTINCT, which builds an index of each list.
		var list sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT group_concat(t.rowid)`+m.from(table), a...).Scan(&list); err != nil {
			return nil, fmt.Errorf("matching: %w", err)
		}
		return notesOfRows(list.String), nil
	}
	var ids []int64
	err := collect(ctx, tx, `SELECT DISTINCT `+m.id+`, `+m.path+m.from(table), a, func(rows *sql.Rows) error {
		var n int64
		var path string
		if err := rows.Scan(&n, &path); err != nil {
			return err
		}
		if m.p.inGlob(path) {
			ids = append(ids, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("matching: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// notesOfRows reads group_concat's list of search rows as their notes,
// sorted and each once: a long note's rows past its first have its id
// with a chunk's bits. A common word makes the list as long as the vault:
// read digit by digit, 94,000 ids cost a quarter of splitting the list
// and parsing each (2 against 8 ms).
func notesOfRows(list string) []int64 {
	ids := make([]int64, 0, len(list)/7+1)
	var n int64
	digits := false
	for i := range len(list) {
		if c := list[i]; c != ',' {
			n, digits = n*10+int64(c-'0'), true
			continue
		}
		if digits {
			ids = append(ids, n&chunkMask)
		}
		n, digits = 0, false
	}
	if digits {
		ids = append(ids, n&chunkMask)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// rowsHolding counts notes_fts's rows holding phrase, whatever a query's
// filters, as bm25 counts them for its idf; every row for "".
func rowsHolding(ctx context.Context, tx readTx, phrase string) (n int, err error) {
	if phrase == "" {
		err = tx.QueryRowContext(ctx, `SELECT count(*) FROM notes_fts_docsize`).Scan(&n)
	} else {
		err = tx.QueryRowContext(ctx, `SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?`, phrase).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("counting rows: %w", err)
	}
	return n, nil
}

// rankNotes ranks by bm25 the notes of a question that r names: those
// sure of a place first, whatever their score, then the best of the
// others, at most r.limit in all; in fields_fts when r.fields, else in
// notes_fts. m stays as it was.
func (m *matches) rankNotes(ctx context.Context, tx readTx, r ranking) ([]scored, error) {
	q := *m
	q.where, q.args = slices.Clone(m.where), slices.Clone(m.args)
	words := r.words
	if words == nil {
		words = m.p.cover
	}
	switch {
	case r.all:
		q.args[0] = m.p.leaveOutputs(m.p.withFilters(strings.Join(words, " AND ")))
	case r.words != nil:
		q.args[0] = m.p.leaveOutputs(m.p.withFilters(strings.Join(slices.Concat(r.words, m.p.required), " OR ")))
	}
	if r.ids != nil {
		q.restrictTo(r.ids)
	}
	q.first = int64Args(r.first)
	if r.fields {
		return q.rank(ctx, tx, "fields_fts", `bm25(fields_fts, `+fieldWeights+`)`, r.limit)
	}
	return q.rank(ctx, tx, "notes_fts", `bm25(notes_fts, `+rankWeights+`)`, r.limit)
}

// rankTiers ranks the notes of a keyword query in two tiers, by score
// within each: first the notes whose title, aliases, path, headings or
// properties hold the query, found and scored in fields_fts, which holds
// only those; then those that hold it only in their text, scored in
// notes_fts. bm25 reads the size of each row it scores, which costs more
// than finding and counting the matches, so the second tier, for a common
// word nearly every note, is scored only when the first does not fill the
// page. The body's share of the score is the price: within the first tier
// it does not order. total is the number of matches when counted, else -1;
// complete says that cands holds every match.
func (m *matches) rankTiers(ctx context.Context, tx readTx, limit int) (cands []scored, total int, complete bool, err error) {
	cands, err = m.rank(ctx, tx, "fields_fts", `bm25(fields_fts, `+fieldWeights+`)`, limit)
	if err != nil || limit > 0 && len(cands) >= m.p.limit {
		return cands, -1, false, err // the second tier is not read
	}
	// The second tier is every match but the first tier's notes, which
	// are few here (they did not fill the page): rank them all and drop
	// those in Go, rather than have SQLite look each match up in the
	// first tier (a fifth of the ranking's cost).
	more, total, err := m.rankText(ctx, tx, limit)
	if err != nil {
		return nil, -1, false, err
	}
	inFirst := make(map[int64]bool, len(cands))
	for _, c := range cands {
		inFirst[c.id] = true
	}
	for _, c := range more {
		if !inFirst[c.id] {
			cands = append(cands, c)
		}
	}
	return cands, total, limit == 0 || len(more) < limit, nil
}

// rankText ranks every match in notes_fts, at most limit (0: all); total
// is their number when counted, else -1.
func (m *matches) rankText(ctx context.Context, tx readTx, limit int) ([]scored, int, error) {
	score := `bm25(notes_fts, ` + rankWeights + `)`
	// Counted first where ranking may cost: the count is the total, and
	// says whether to rank in halves on two cores. (bm25 reads each
	// match's size, a microsecond or more a match, where counting costs a
	// tenth of that.)
	total := -1
	if limit > 0 && !m.p.chunked && tx.ranker != nil {
		if err := tx.QueryRowContext(ctx, `SELECT count(*)`+m.from("notes_fts"), m.args...).Scan(&total); err != nil {
			return nil, -1, fmt.Errorf("counting matches: %w", err)
		}
	}
	if total < rankInHalves {
		more, err := m.rank(ctx, tx, "notes_fts", score, limit)
		return more, total, err
	}
	// The halves hold as many matches each: a word of daily logs is in
	// daily notes, which are a band of ids.
	var mid int64
	if err := tx.QueryRowContext(ctx, `SELECT t.rowid`+m.from("notes_fts")+` ORDER BY t.rowid LIMIT 1 OFFSET ?`,
		append(slices.Clone(m.args), total/2)...).Scan(&mid); err != nil {
		return nil, -1, fmt.Errorf("matching: %w", err)
	}
	more, err := rankHalves(ctx, tx, m.named, limit, mid, func(tx readTx, lo, hi int64) ([]scored, error) {
		return m.rank(ctx, tx, "notes_fts", score, limit, lo, hi)
	})
	return more, total, err
}

// count counts the matching notes.
func (m *matches) count(ctx context.Context, tx readTx) (int, error) {
	count := "count(*)"
	if m.p.chunked {
		count = "count(DISTINCT " + m.id + ")"
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT `+count+m.from("notes_fts"), m.args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting matches: %w", err)
	}
	return n, nil
}

// hits is the hits of the notes cands, at their best sections, in cands'
// order.
func (p *queryPlan) hits(ctx context.Context, tx readTx, cands []scored) ([]Hit, error) {
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	best, err := bestSections(ctx, tx, ids, p.terms)
	if err != nil {
		return nil, err
	}
	var hits []Hit
	for _, c := range cands {
		if h, ok := best[c.id]; ok {
			h.Rank = -c.score
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// rankInHalves is how many matches make the second tier ranked in two
// halves at once (see rankHalves): some 1.3 ms of bm25 on this project's
// 2-core machine, against the tenth of a millisecond a second transaction
// costs.
const rankInHalves = 1000

// rankHalves ranks the matches in two halves, of the ids below mid and
// from mid on, the upper on a connection beside tx's, and returns the best
// limit of both, in rank's order (the named notes first, then by score,
// then by id). A common word can match most notes, every one of which
// bm25 must score: "tired", in 3,794 of the generated vault's 10,000
// notes, was ranked in 0.64 of the time, and found in about 0.8.
//
// The other transaction sees what tx sees: tx holds its read lock, so no
// write can commit until both end. For the same reason it must not wait
// for a lock: a writer that holds the pending lock waits for tx, and tx
// for it. So it fails at once instead; should it fail for that or any
// other reason, tx ranks that half itself.
func rankHalves(ctx context.Context, tx readTx, named map[int64]bool, limit int, mid int64,
	rank func(tx readTx, lo, hi int64) ([]scored, error)) ([]scored, error) {
	const first, last = 0, math.MaxInt64
	type half struct {
		hits []scored
		err  error
	}
	upper := make(chan half, 1)
	go func() {
		var h half
		h.err = tx.beside(ctx, func(b readTx) (err error) {
			h.hits, err = rank(b, mid, last)
			return err
		})
		upper <- h
	}()
	hits, err := rank(tx, first, mid-1)
	u := <-upper
	if err != nil {
		return nil, err
	}
	if u.err != nil {
		if u.hits, err = rank(tx, mid, last); err != nil {
			return nil, err
		}
	}
	hits = append(hits, u.hits...)
	slices.SortFunc(hits, func(a, b scored) int {
		if named[a.id] != named[b.id] {
			if named[a.id] {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id))
	})
	return hits[:min(len(hits), limit)], nil
}

// namedKey is query text as a note's name or alias would be keyed, "" for
// text that names no note (several words in quotes, a filter).
func namedKey(text string) string {
	t := strings.TrimSpace(text)
	if t == "" || strings.ContainsAny(t, `"*:`) {
		return ""
	}
	return note.LinkKey(t)
}

// namedNotes returns the ids of the notes whose file name or alias is the
// query text: the note a person names ranks first.
func (p *queryPlan) namedNotes(ctx context.Context, tx readTx) (map[int64]bool, error) {
	if len(p.named) == 0 {
		return nil, nil
	}
	out := map[int64]bool{}
	for _, k := range p.named {
		err := collect(ctx, tx, `SELECT id FROM files WHERE stem_key = ?1 UNION SELECT file_id FROM aliases WHERE alias_key = ?1`,
			[]any{k}, func(r *sql.Rows) error {
				var id int64
				err := r.Scan(&id)
				out[id] = true
				return err
			})
		if err != nil {
			return nil, fmt.Errorf("finding the named note: %w", err)
		}
	}
	return out, nil
}

// bestSections reads the sections of the notes ids and returns, per note,
// the hit at its best section: the one whose terms weigh most, a term
// weighing less the more of the note's sections hold it (its heading and,
// for the first, the note's title count), the earliest among equals; its
// line is that of the first match in it.
//
// A section that holds every term weighs most whatever the weights, so a
// note's sections are read in order only until one does. The first, with
// the title, does for most hits: on the Obsidian help vault the rest, whose
// bodies were most of what a search read, stay unread for three hits in
// four.
func bestSections(ctx context.Context, tx readTx, ids []int64, terms []term) (map[int64]Hit, error) {
	probes := termProbes(terms)
	notes := make(map[int64]*hitNote, len(ids))
	// The first section's body only; the others' are read by rest. The
	// columns after the body (date, body_line) with it: a record's columns
	// are read in order, and a long body runs over pages. In no order: an
	// ORDER BY would copy every row into a sorter first.
	err := collect(ctx, tx, `SELECT n.file_id, f.path, s.id, s.line, s.title, s.heading, s.id = n.first_section,
			CASE WHEN s.id = n.first_section THEN s.body END,
			CASE WHEN s.id = n.first_section THEN COALESCE(s.date, '') END,
			CASE WHEN s.id = n.first_section THEN s.body_line END
		FROM notes n JOIN files f ON f.id = n.file_id JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section
		WHERE n.file_id IN (`+placeholders(len(ids))+`)`, int64Args(ids), func(r *sql.Rows) error {
		var id int64
		var path, title string
		var first bool
		var body, date sql.NullString
		var bodyLine sql.NullInt64
		var s hitSection
		if err := r.Scan(&id, &path, &s.id, &s.line, &title, &s.heading, &first, &body, &date, &bodyLine); err != nil {
			return err
		}
		s.held = probes.held(title, s.heading)
		if first {
			s.title = title
			s.read(probes, body.String, date.String, int(bodyLine.Int64))
		}
		n := notes[id]
		if n == nil {
			n = &hitNote{path: path}
			notes[id] = n
		}
		n.secs = append(n.secs, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	out := make(map[int64]Hit, len(notes))
	var inProperties []int64
	for id, n := range notes {
		slices.SortFunc(n.secs, func(a, b hitSection) int { return cmp.Compare(a.id, b.id) }) // in the note's order
		best := 0
		if !n.secs[0].holdsAll() {
			if best, err = n.rest(ctx, tx, probes); err != nil {
				return nil, fmt.Errorf("reading hits: %w", err)
			}
		}
		s := n.secs[best]
		h := Hit{Path: n.path, Heading: s.heading, Line: s.line, SectionLine: s.line, Date: s.date}
		at := -1
		if s.inBody || !probes.exact(s.body) {
			// Else the match is in the title or heading: the body need
			// not be split to find none in it.
			h.Snippet, at = snippet(s.body, terms)
		}
		if at >= 0 {
			h.Line = s.bodyLine + strings.Count(s.body[:at], "\n")
		} else {
			h.Snippet = titledSnippet(s.title, leadSnippet(s.body), terms)
			if s.heading == "" && s.body == "" {
				// Nothing follows the frontmatter: the line after it may
				// be past the end of the file.
				h.Line = 1
			}
		}
		out[id] = h
		if len(terms) > 0 && !slices.Contains(s.held, true) {
			inProperties = append(inProperties, id)
		}
	}
	if len(inProperties) > 0 {
		if err := propertyHits(ctx, tx, inProperties, terms, out); err != nil {
			return nil, fmt.Errorf("reading hits: %w", err)
		}
	}
	return out, nil
}

// titledSnippet is the snippet of a note found by its title (or an
// alias): the one that holds a term, marked, then lead, the start of the
// text; lead alone when no title holds a term.
func titledSnippet(titles, lead string, terms []term) string {
	for t := range strings.SplitSeq(titles, "\n") {
		if snip, at := snippet(t, terms); at >= 0 {
			if lead == "" {
				return snip
			}
			return snip + " — " + lead
		}
	}
	return lead
}

// propertyHits moves the hits of the notes ids, whose sections hold none
// of the terms, to the property that does: its line, and a snippet of the
// properties around it.
func propertyHits(ctx context.Context, tx readTx, ids []int64, terms []term, hits map[int64]Hit) error {
	return collect(ctx, tx, `SELECT file_id, properties, property_lines FROM notes
		WHERE file_id IN (`+placeholders(len(ids))+`) AND property_lines IS NOT NULL`, int64Args(ids), func(r *sql.Rows) error {
		var id int64
		var props, lines string
		if err := r.Scan(&id, &props, &lines); err != nil {
			return err
		}
		snip, at := snippet(props, terms)
		if at < 0 {
			return nil
		}
		fileLines := strings.Fields(lines)
		i := strings.Count(props[:at], "\n")
		if i >= len(fileLines) {
			return nil
		}
		line, err := strconv.Atoi(fileLines[i])
		if err != nil {
			return fmt.Errorf("property lines %q: %w", lines, err)
		}
		h := hits[id]
		h.Line, h.Snippet = line, snip
		hits[id] = h
		return nil
	})
}

// A hitNote is a note bestSections looks into, its sections in order.
type hitNote struct {
	path string
	secs []hitSection
}

// A hitSection is a section of a hit; its body is read once held knows
// what its title and heading hold.
type hitSection struct {
	id                  int64
	title               string // title and aliases, a line each; the first section's only
	heading, body, date string
	line, bodyLine      int
	held                []bool // by probe
	inBody              bool   // some probe is in the body, not only the title or heading
}

// read takes the section's body and the columns after it, and adds what
// the body holds.
func (s *hitSection) read(p *probes, body, date string, bodyLine int) {
	s.body, s.date, s.bodyLine = body, date, bodyLine
	for i, h := range p.held(body) {
		s.inBody = s.inBody || h
		s.held[i] = s.held[i] || h
	}
}

func (s *hitSection) holdsAll() bool { return !slices.Contains(s.held, false) }

// rest reads the bodies of the note's sections after the first, in order,
// until one holds every probe, and returns the index of the best section.
func (n *hitNote) rest(ctx context.Context, tx readTx, p *probes) (int, error) {
	if len(n.secs) == 1 {
		return 0, nil
	}
	// The same rows as bestSections', in the same transaction.
	rows, err := tx.QueryContext(ctx, `SELECT body, COALESCE(date, ''), body_line FROM sections WHERE id BETWEEN ? AND ? ORDER BY id`,
		n.secs[1].id, n.secs[len(n.secs)-1].id)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for i := 1; i < len(n.secs) && rows.Next(); i++ {
		var body, date string
		var bodyLine int
		if err := rows.Scan(&body, &date, &bodyLine); err != nil {
			return 0, err
		}
		if n.secs[i].read(p, body, date, bodyLine); n.secs[i].holdsAll() {
			return i, nil
		}
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	// No section holds every probe: the best holds the most of them (a
	// page footer that holds one rare word is not the hit), and among
	// those, each probe weighs more the fewer of the note's sections hold
	// it.
	df := make([]int, len(p.texts))
	for _, s := range n.secs {
		for i, h := range s.held {
			if h {
				df[i]++
			}
		}
	}
	best, bestHeld, bestWeight := 0, 0, 0.0
	for j, s := range n.secs {
		held, weight := 0, 0.0
		for i, h := range s.held {
			if h {
				held, weight = held+1, weight+1/float64(df[i])
			}
		}
		if held > bestHeld || held == bestHeld && weight > bestWeight+1e-9 {
			best, bestHeld, bestWeight = j, held, weight
		}
	}
	return best, nil
}

// propTerm is a key:value filter: a key of letters, digits, '_' and '-',
// starting with a letter, and a value that is not the rest of a URL.
var propTerm = regexp.MustCompile(`^(\pL[\pL\pN_-]*):([^/].*)$`)

// matchExpr turns user text into an FTS5 MATCH expression in which every
// word is a quoted string, so nothing the user types is FTS5 syntax; lists
// the terms it searches for (synonyms included) to mark in snippets; and
// returns the meta tokens of its key:value filters. The expression is ""
// when the text holds no searchable word.
func matchExpr(text string, mode Mode, expand map[string][]string) (string, []term, []string) {
	x := &textExpr{syn: make(map[string][]string, len(expand))}
	for k, v := range expand {
		key := pieceKey(foldedPieces(k))
		x.syn[key] = append(x.syn[key], v...)
	}
	if mode == ModePhrase {
		ps := foldedPieces(text)
		if len(ps) == 0 {
			return "", nil, nil
		}
		prefix := strings.HasSuffix(strings.TrimSpace(text), "*")
		return x.word(text, ps, prefix, false), x.terms, nil
	}
	var exprs, props []string
	for _, w := range words(text) {
		if toks, ok := propFilter(w); ok {
			props = append(props, toks...)
			continue
		}
		ps := foldedPieces(w.text)
		if len(ps) == 0 {
			continue
		}
		exprs = append(exprs, x.word(w.text, ps, w.prefix, w.quoted))
	}
	op := " AND "
	if mode == ModeAny {
		op = " OR "
	}
	return strings.Join(exprs, op), x.terms, props
}

// propFilter returns the meta tokens of w when it is a key:value filter
// with a value to search for.
func propFilter(w word) ([]string, bool) {
	m := propTerm.FindStringSubmatch(w.text)
	if m == nil || w.quoted {
		return nil, false
	}
	// Obsidian's tag: operator (tag:work, tag:#work) is the tag filter,
	// nested tags included; a `tag:` property is a tag too.
	if strings.EqualFold(m[1], "tag") {
		if k := tagKey(strings.Trim(m[2], `"`)); k != "" {
			return []string{metaToken(metaTag, k)}, true
		}
	}
	var toks []string
	for _, v := range foldedPieces(strings.Trim(m[2], `"`)) {
		toks = append(toks, propToken(m[1], v))
	}
	return toks, len(toks) > 0
}

// textExpr is matchExpr's reading of a text: the synonyms of its
// expansions by key, and the terms found so far.
type textExpr struct {
	syn   map[string][]string
	terms []term
}

// add adds the terms of the pieces ps.
func (x *textExpr) add(ps []folded, prefix bool) {
	for i, p := range ps {
		x.terms = append(x.terms, term{text: p.text, unspaced: p.unspaced, prefix: prefix && i == len(ps)-1})
	}
	if len(ps) > 1 { // the section holding the words together is the better hit
		x.terms = append(x.terms, term{text: pieceKey(ps), phrase: true})
	}
}

// synonyms returns the expressions of the synonyms of ps, and adds their
// terms.
func (x *textExpr) synonyms(ps []folded) []string {
	var alts []string
	for _, s := range x.syn[pieceKey(ps)] {
		if sp := foldedPieces(s); len(sp) > 0 {
			alts = append(alts, phrase(sp, false))
			x.add(sp, false)
		}
	}
	return alts
}

// word returns the expression of a word of the text, its pieces ps, and
// adds its terms; a word not quoted matches its synonyms too. A word with
// symbols is matched as written (see literal): the expression finds the
// notes that hold its letters, and its term keeps those that hold it.
func (x *textExpr) word(text string, ps []folded, prefix, quoted bool) string {
	expr := phrase(ps, prefix)
	l := literalOf(text, prefix)
	if l == nil {
		x.add(ps, prefix)
	} else {
		x.terms = append(x.terms, term{text: string(l.runes), lit: l})
	}
	if quoted {
		return expr
	}
	alts := x.synonyms(ps)
	if len(alts) == 0 {
		return expr
	}
	if l != nil {
		l.alts = strings.Join(alts, " OR ")
	}
	return "(" + expr + " OR " + strings.Join(alts, " OR ") + ")"
}

func pieceKey(ps []folded) string {
	ts := make([]string, len(ps))
	for i, p := range ps {
		ts[i] = p.text
	}
	return strings.Join(ts, " ")
}

// phrase quotes the pieces ps as one FTS5 string. Tokens hold only letters,
// digits, marks and symbols, so they need no escaping.
func phrase(ps []folded, prefix bool) string {
	toks, prefix := queryTokens(ps, prefix)
	s := `"` + strings.Join(toks, " ") + `"`
	if prefix {
		s += "*"
	}
	return s
}

type word struct {
	text           string
	quoted, prefix bool
}

// words splits query text into whitespace-separated words and "quoted
// phrases"; an unclosed quote runs to the end. A key:"quoted value" stays
// one word.
func words(text string) []word {
	var ws []word
	for {
		text = strings.TrimLeftFunc(text, unicode.IsSpace)
		if text == "" {
			return ws
		}
		if text[0] == '"' {
			end := strings.IndexByte(text[1:], '"')
			if end < 0 {
				end = len(text) - 1
			}
			w := word{text: text[1 : 1+end], quoted: true}
			text = text[min(len(text), end+2):]
			w.prefix = strings.HasPrefix(text, "*")
			ws = append(ws, w)
			continue
		}
		end := strings.IndexFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
		if end < 0 {
			end = len(text)
		}
		if end < len(text) && text[end] == '"' && strings.HasSuffix(text[:end], ":") {
			// key:"a value": through the closing quote.
			if close := strings.IndexByte(text[end+1:], '"'); close >= 0 {
				end += close + 2
			} else {
				end = len(text)
			}
		}
		w := word{text: text[:end], prefix: strings.HasSuffix(text[:end], "*")}
		ws = append(ws, w)
		text = text[end:]
	}
}
