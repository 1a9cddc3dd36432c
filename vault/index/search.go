package index

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/margin-md/margin/vault/note"
)

// Mode says how the words of a query's text combine.
type Mode string

const (
	// ModeAuto, the default, is all for a keyword query and, for a
	// question, any word but its stop words, ranked by how many of them a
	// note holds (see asQuestion).
	ModeAuto   Mode = "auto"
	ModeAll    Mode = "all"    // every word
	ModeAny    Mode = "any"    // at least one word
	ModePhrase Mode = "phrase" // the words in order, adjacent
)

// Query is a search over the index. Text, the date range, Glob, Tags and
// Fields all restrict; a query without Text lists the entries or notes that
// pass the other filters.
type Query struct {
	// Text is searched case- and accent-insensitively in titles, aliases,
	// paths, headings, property values and text; words of scripts written
	// without spaces (Han, kana, Hangul, Thai, Khmer…) match anywhere in a
	// run of that script. Words in double quotes are a phrase; a word ending
	// in '*' matches as a prefix; key:value (a key starting with a letter,
	// key:"a value" for several words) keeps the notes whose property key
	// holds those words, except tag:name (or tag:#name), which is the tag
	// filter, as in Obsidian. Nothing else is syntax: any other character is
	// searched for, or ignored as punctuation; a word with symbols (c++,
	// .net, node.js) matches as written (see literal).
	Text string
	Mode Mode // auto, all, any or phrase, case-insensitive; empty means auto
	// Expand maps a word (or, in phrase mode, the whole phrase) to the words
	// or phrases it also matches, e.g. the vocabulary of a domain. Keys are
	// matched case-insensitively.
	Expand map[string][]string

	From, To string   // YYYY-MM-DD, inclusive; either restricts the search to daily notes
	Glob     string   // vault path glob: '*' and '?' stay within a folder, "**" crosses folders; case-sensitive
	Tags     []string // every tag must be on the note ('#' optional, case-insensitive; "a" also matches "a/b")
	Fields   TaskFilter
	Limit    int // at most this many hits; 0 means DefaultLimit
	// Outputs keeps margin's own outputs (notes of kind margin: reports,
	// journals, change sets), which a search leaves out otherwise: they
	// restate the notes they were written from and crowded them out.
	Outputs bool
}

// TaskFilter restricts a query to task notes with these fields. The zero
// value does not restrict.
type TaskFilter struct {
	Status   []string // any of these, case-insensitive
	Priority []string // any of these; P0–P3, high/medium/low are folded the way the parser folds them
	DueFrom  string   // YYYY-MM-DD, inclusive; a task without a due date never matches a due bound
	DueTo    string
}

func (f TaskFilter) isZero() bool {
	return len(f.Status) == 0 && len(f.Priority) == 0 && f.DueFrom == "" && f.DueTo == ""
}

// DefaultLimit is the number of hits of a query without a Limit.
const DefaultLimit = 50

// Hit is one matching note, at its best section (or, without query text,
// one listed entry or note).
type Hit struct {
	Path    string `json:"path"`
	Heading string `json:"heading"` // the section's heading as written; "" for text before the first heading
	Line    int    `json:"line"`    // 1-based line of the first match in the section (else of its heading, or of the note body; 1 when nothing follows the frontmatter)
	// SectionLine is the line of the section's heading (or of the note body
	// for text before the first heading): where the section starts.
	SectionLine int     `json:"section_line"`
	Snippet     string  `json:"snippet"` // a short excerpt, matched words between ** and **
	Date        string  `json:"date,omitempty"`
	Rank        float64 `json:"rank,omitempty"`
}

// Result is the answer to a query: the best hits, how many notes (or, without
// text, entries and notes) matched in all, and whether Hits was cut to the
// limit.
type Result struct {
	Hits      []Hit `json:"hits"`
	Total     int   `json:"total"`
	Truncated bool  `json:"truncated"`
}

// Search runs q and returns its hits; see Find.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	r, err := ix.Find(ctx, q)
	return r.Hits, err
}

// Find runs q. With text, every matching note is counted and ranked: a
// note named by the query and the notes whose title, aliases, path,
// headings or properties hold it come first, then those that hold it only
// in their text, by BM25 within each (title and aliases weighing most, then
// path, headings, properties, body; Rank is the BM25 score); each hit is
// the note's best section. A question in auto mode matches the notes that
// hold any of its words but stop words, and ranks them by the note it
// names, its phrase, then how many of its words they hold, then BM25 (see
// asQuestion). Without text, hits are entries and notes ordered by date,
// then path and line, and Rank is 0.
func (ix *Index) Find(ctx context.Context, q Query) (Result, error) {
	p, err := plan(q)
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	if p.nothing {
		return Result{}, nil
	}
	r, err := ix.find(ctx, p)
	// The texts the statement caches lacked are prepared now that the
	// search holds no lock (see stmtCache).
	ix.stmts.fill(ctx, ix.db)
	if ix.ranker != nil {
		ix.rankerStmts.fill(ctx, ix.ranker)
	}
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	return r, nil
}

// find runs p in one read transaction, so the ids found first still exist
// when their details are read.
func (ix *Index) find(ctx context.Context, p *queryPlan) (Result, error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Result{}, err
	}
	defer tx.Rollback()
	rt := ix.reading(tx)
	if p.match == "" {
		return p.list(ctx, rt)
	}
	return p.search(ctx, rt)
}

// queryPlan is a validated Query turned into SQL pieces. With text, kind,
// tag, task-field and property filters become meta tokens in the MATCH expression and
// the rest become SQL conditions; without text, all are SQL conditions.
type queryPlan struct {
	terms []term // the user's words and their synonyms, for snippets
	match string // FTS5 expression of the user's words and the meta filters; "" lists
	// The parts of match: the user's words and the filters (kind, task
	// fields, tags, properties); each "" when the query has none.
	words, filters string

	named   []string // the query text (and a question's phrase) as link keys: the notes of those names rank first
	nothing bool     // the query can match nothing (text without a searchable word)
	chunked bool     // some note has several search rows
	limit   int

	// A question's words, each an FTS5 expression, and its phrase: the
	// notes holding the phrase rank first, then by how many of the words
	// they hold (see rankQuestion). Both empty for other queries.
	cover    []string
	required []string // a question's quoted phrases, which every note holds (they are filters)
	phrase   string

	from, to string // date range, "" when not restricted
	glob     string // SQL GLOB pattern
	inGlob   func(path string) bool
	prefix   string // literal prefix of glob, to range over files.path
	exact    bool   // glob has no wildcard
	tags     []string
	fields   TaskFilter
	outputs  bool // margin's own outputs are not left out

	literals *literals // what the query's words with symbols ask of the matches; nil without any
}

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func plan(q Query) (*queryPlan, error) {
	p := &queryPlan{limit: q.Limit, fields: q.Fields, outputs: q.Outputs}
	if p.limit <= 0 {
		p.limit = DefaultLimit
	}
	mode, err := parseMode(q.Mode)
	if err != nil {
		return nil, err
	}
	if err := p.restrict(q); err != nil {
		return nil, err
	}
	if strings.TrimSpace(q.Text) == "" {
		return p, nil
	}
	user, props, required := p.readText(q, mode)
	if user == "" && len(props) == 0 {
		p.nothing = true
		return p, nil
	}
	p.filters = strings.Join(p.filterExprs(props, required), " AND ")
	if user == "" {
		p.match = p.filters
	} else {
		// No column filter on the words: no word can match a filter
		// token (see metaMark).
		p.words = "(" + user + ")"
		p.match = p.words
		if p.filters != "" {
			p.match += " AND " + p.filters
		}
	}
	p.match = p.leaveOutputs(p.match)
	return p, nil
}

// restrict checks and folds q's date range, glob, tags and task fields
// into p.
func (p *queryPlan) restrict(q Query) error {
	for _, d := range []struct{ name, v string }{{"from", q.From}, {"to", q.To}, {"due from", q.Fields.DueFrom}, {"due to", q.Fields.DueTo}} {
		if d.v != "" && !dateRE.MatchString(d.v) {
			return fmt.Errorf("%s date %q is not YYYY-MM-DD", d.name, d.v)
		}
	}
	if q.From != "" || q.To != "" {
		p.from, p.to = q.From, q.To
		if p.to == "" {
			p.to = "9999-12-31"
		}
	}
	if q.Glob != "" {
		var err error
		p.glob, p.exact, p.inGlob, err = translateGlob(q.Glob)
		if err != nil {
			return err
		}
		p.prefix = q.Glob[:strings.IndexAny(q.Glob+"*", "*?[")]
	}
	for _, t := range q.Tags {
		if k := tagKey(t); k != "" {
			p.tags = append(p.tags, k)
		}
	}
	// Fold into fresh slices: the caller's Query stays as it was.
	p.fields.Status, p.fields.Priority = nil, nil
	for _, s := range q.Fields.Status {
		p.fields.Status = append(p.fields.Status, strings.ToLower(strings.TrimSpace(s)))
	}
	for _, pr := range q.Fields.Priority {
		p.fields.Priority = append(p.fields.Priority, foldPriority(pr))
	}
	return nil
}

// readText reads q's text, in mode, as a question or as keywords: it
// sets the terms, the names and, for a question, the words to rank by, and
// returns the FTS5 expression of the user's words, the meta tokens of its
// key:value filters, and a question's quoted phrases, which every note
// holds.
func (p *queryPlan) readText(q Query, mode Mode) (user string, props, required []string) {
	if k := namedKey(q.Text); k != "" {
		p.named = append(p.named, k)
	}
	var qn *question
	if mode == ModeAuto {
		qn = asQuestion(q.Text)
	}
	if qn != nil {
		x := qn.expr(q.Expand)
		// With the quoted phrases among the words, a note that holds
		// them and no other word matches too.
		user, p.terms, props, required = strings.Join(slices.Concat(x.cover, x.required), " OR "), x.terms, x.props, x.required
		p.cover, p.required, p.phrase = x.cover, x.required, x.phrase
		// "how do I plan a trip" names the note Plan a trip.
		name := qn.phrase
		if name == "" && len(qn.words) == 1 {
			name = qn.words[0]
		}
		if k := namedKey(name); k != "" && !slices.Contains(p.named, k) {
			p.named = append(p.named, k)
		}
	} else {
		if mode == ModeAuto {
			mode = ModeAll
		}
		user, p.terms, props = matchExpr(q.Text, mode, q.Expand)
	}
	p.literals = literalsOf(q.Text, mode, q.Expand, p.terms)
	return user, props, required
}

// filterExprs is the expressions of the query's filters: required, a
// question's quoted phrases, which hold for the whole note as filters do;
// props, the meta tokens of key:value filters; the task fields and tags.
func (p *queryPlan) filterExprs(props, required []string) []string {
	filters := required
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

// outputsToken is the filter token of margin's outputs.
const outputsToken = metaKind + string(note.KindMargin)

// leaveOutputs returns the MATCH expression match without margin's
// outputs unless the query keeps them. FTS5 drops the outputs' rows as it
// merges its lists, where a condition on each match in SQL made counting
// a common word 6 times slower. Only a note's first row holds the token
// (see longOutputsSQL).
func (p *queryPlan) leaveOutputs(match string) string {
	if p.outputs {
		return match
	}
	return "(" + match + ") NOT " + metaExpr(outputsToken)
}

// longOutputsSQL selects margin's outputs that have search rows past
// their first, which lack the filter token: few, most often none.
const longOutputsSQL = `SELECT id & ` + chunkMaskSQL + ` FROM notes_fts_docsize WHERE id > ` + chunkMaskSQL + `
	AND (id & ` + chunkMaskSQL + `) IN (SELECT file_id FROM notes WHERE kind = '` + string(note.KindMargin) + `')`

func tokensOf(prefix string, values []string) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = metaToken(prefix, v)
	}
	return out
}

// metaExpr matches a note that has any of the filter tokens toks, which
// only its meta column can hold (see metaMark).
func metaExpr(toks ...string) string {
	return `("` + strings.Join(toks, `" OR "`) + `")`
}

// idBound runs q, which selects the lowest and highest file id of some
// notes, and returns the condition bounding the search to them; "" when
// there are no such notes, so nothing can match.
func (p *queryPlan) idBound(ctx context.Context, tx readTx, q string, args ...any) (string, []any, error) {
	var lo, hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&lo, &hi); err != nil {
		return "", nil, fmt.Errorf("bounding the search: %w", err)
	}
	if !lo.Valid {
		return "", nil, nil
	}
	if p.chunked { // the rows past a long note's first are above every file id
		return "t.rowid >= ?", []any{lo.Int64}, nil
	}
	return "t.rowid BETWEEN ? AND ?", []any{lo.Int64, hi.Int64}, nil
}

// prefixEnd is a string above every string that starts with prefix:
// U+10FFFF is the highest code point, and SQLite compares UTF-8 bytewise.
func prefixEnd(prefix string) string {
	return prefix + "\U0010FFFF"
}

func (p *queryPlan) dueWhere() ([]string, []any) {
	var where []string
	var args []any
	if p.fields.DueFrom != "" {
		where = append(where, "n.due >= ?")
		args = append(args, p.fields.DueFrom)
	}
	if p.fields.DueTo != "" {
		where = append(where, "n.due <> '' AND n.due <= ?")
		args = append(args, p.fields.DueTo)
	}
	return where, args
}

// list runs a query without text. It starts from notes, where every filter
// has an index to use, and reaches a note's sections by their id range.
func (p *queryPlan) list(ctx context.Context, tx readTx) (Result, error) {
	where, args := p.listWhere()
	// The first table is the one whose index narrows the query: files for
	// a glob with a literal prefix, else notes (date, kind or tags).
	from := `notes n CROSS JOIN files f ON f.id = n.file_id`
	if p.prefix != "" {
		from = `files f CROSS JOIN notes n ON n.file_id = f.id`
	}
	tables := from + ` CROSS JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section
		WHERE ` + strings.Join(where, " AND ")
	q := `SELECT s.id, f.path FROM ` + tables + ` ORDER BY s.date IS NULL, s.date, f.path, s.line`
	if p.inGlob == nil {
		q += fmt.Sprintf(" LIMIT %d", p.limit+1) // one more, to tell a cut list
	}
	var r Result
	var ids []int64
	err := collect(ctx, tx, q, args, func(rows *sql.Rows) error {
		var id int64
		var path string
		if err := rows.Scan(&id, &path); err != nil {
			return err
		}
		if p.inGlob == nil || p.inGlob(path) {
			r.Total++
			if len(ids) < p.limit {
				ids = append(ids, id)
			}
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("listing: %w", err)
	}
	if r.Total > p.limit && p.inGlob == nil {
		// The LIMIT stopped the count: count the rest.
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+tables, args...).Scan(&r.Total); err != nil {
			return r, fmt.Errorf("listing: %w", err)
		}
	}
	r.Truncated = r.Total > len(ids)
	if len(ids) == 0 {
		return r, nil
	}
	r.Hits, err = listedHits(ctx, tx, ids)
	return r, err
}

// listWhere is the conditions of a list over notes n, files f and sections
// s, and their arguments.
func (p *queryPlan) listWhere() ([]string, []any) {
	// The unary + keeps SQLite from building a throwaway index on listed
	// for every query instead of using the id range.
	where := []string{"+s.listed = 1"}
	var args []any
	if !p.outputs {
		where = append(where, "n.kind <> ?")
		args = append(args, string(note.KindMargin))
	}
	if p.from != "" {
		where = append(where, "n.date BETWEEN ? AND ?")
		args = append(args, p.from, p.to)
	}
	if p.glob != "" {
		if p.exact {
			where = append(where, "f.path = ?")
			args = append(args, p.glob)
		} else {
			where = append(where, "f.path GLOB ?")
			args = append(args, p.glob)
			if p.prefix != "" {
				where = append(where, "f.path >= ? AND f.path < ?")
				args = append(args, p.prefix, prefixEnd(p.prefix))
			}
		}
	}
	for _, k := range p.tags {
		// "k/" < every "k/…" < "k0", since '0' follows '/'.
		where = append(where, "n.file_id IN (SELECT file_id FROM tags WHERE tag_key = ? OR (tag_key > ? AND tag_key < ?))")
		args = append(args, k, k+"/", k+"0")
	}
	if !p.fields.isZero() {
		where = append(where, "n.kind = 'task'")
		if len(p.fields.Status) > 0 {
			where = append(where, "n.status IN ("+placeholders(len(p.fields.Status))+")")
			args = append(args, stringArgs(p.fields.Status)...)
		}
		if len(p.fields.Priority) > 0 {
			where = append(where, "n.priority IN ("+placeholders(len(p.fields.Priority))+")")
			args = append(args, stringArgs(p.fields.Priority)...)
		}
		w, a := p.dueWhere()
		where, args = append(where, w...), append(args, a...)
	}
	return where, args
}

// listedHits reads the hits of the listed sections ids, in their order.
func listedHits(ctx context.Context, tx readTx, ids []int64) ([]Hit, error) {
	hits := make(map[int64]Hit, len(ids))
	err := collect(ctx, tx, `SELECT s.id, f.path, s.heading, s.line, COALESCE(s.date, ''), s.body
		FROM sections s JOIN files f ON f.id = s.file_id
		WHERE s.id IN (`+placeholders(len(ids))+`)`, int64Args(ids), func(rows *sql.Rows) error {
		var id int64
		var body string
		var h Hit
		if err := rows.Scan(&id, &h.Path, &h.Heading, &h.Line, &h.Date, &body); err != nil {
			return err
		}
		h.SectionLine = h.Line
		if h.Heading == "" && body == "" {
			h.Line = 1 // past the frontmatter may be past the end of the file
		}
		h.Snippet = leadSnippet(body)
		hits[id] = h
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading hits: %w", err)
	}
	var out []Hit
	for _, id := range ids {
		if h, ok := hits[id]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// translateGlob turns a vault glob into an SQL GLOB pattern that matches at
// least the same paths (SQL's '*' also crosses folders), and a matcher of
// exactly those paths; exact reports that the glob has no wildcard, so
// plain equality will do.
func translateGlob(glob string) (sqlGlob string, exact bool, match func(path string) bool, err error) {
	if !strings.ContainsAny(glob, "*?[") {
		return glob, true, nil, nil
	}
	// ds is the glob in doublestar's syntax. A vault glob has no
	// alternatives or escapes, so '{', '}' and '\' are escaped there.
	var sg, ds strings.Builder
	for i := 0; i < len(glob); {
		c := glob[i]
		switch {
		case strings.HasPrefix(glob[i:], "**/"):
			// Zero or more folders, also after the start of a name.
			sg.WriteString("*")
			ds.WriteString("{,*/**/}")
			i += 3
		case strings.HasPrefix(glob[i:], "**"):
			// Anything, across folders, also inside a name, where
			// doublestar's "**" would stay in the folder.
			sg.WriteString("*")
			ds.WriteString("*{,/**/}*")
			i += 2
		case c == '*' || c == '?':
			sg.WriteByte(c)
			ds.WriteByte(c)
			i++
		case c == '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end <= 0 { // no class: a literal '['
				sg.WriteString("[[]")
				ds.WriteString(`\[`)
				i++
				continue
			}
			class := glob[i+1 : i+1+end]
			neg := strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			members, ok := globClass(class)
			if !ok {
				return "", false, nil, fmt.Errorf("glob %q: bad character class", glob)
			}
			sg.WriteString("[")
			ds.WriteString("[")
			if neg {
				sg.WriteString("^")
				ds.WriteString("!/") // a class stays within a folder
			}
			sg.WriteString(class)
			ds.WriteString(members)
			sg.WriteString("]")
			ds.WriteString("]")
			i += end + 2
		default:
			_, n := utf8.DecodeRuneInString(glob[i:])
			sg.WriteString(glob[i : i+n])
			if strings.IndexByte(`{}\`, c) >= 0 {
				ds.WriteByte('\\')
			}
			ds.WriteString(glob[i : i+n])
			i += n
		}
	}
	pattern := ds.String()
	return sg.String(), false, func(path string) bool { return doublestar.MatchUnvalidated(pattern, path) }, nil
}

// globClass renders the members of a bracket class for doublestar, where
// '\' escapes and a '-' can join a range; ok is false for a range that
// runs backwards, which matches nothing.
func globClass(class string) (members string, ok bool) {
	r := []rune(class)
	var b strings.Builder
	member := func(c rune) {
		if c == '\\' || c == '-' {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	for i := 0; i < len(r); i++ {
		if i+2 < len(r) && r[i+1] == '-' {
			if r[i] > r[i+2] {
				return "", false
			}
			member(r[i])
			b.WriteByte('-')
			member(r[i+2])
			i += 2
			continue
		}
		member(r[i])
	}
	return b.String(), true
}

// foldPriority folds a priority the way the parser does for task fields.
func foldPriority(p string) string {
	switch s := strings.ToLower(strings.TrimSpace(p)); s {
	case "high":
		return "P1"
	case "medium":
		return "P2"
	case "low":
		return "P3"
	case "p0", "p1", "p2", "p3":
		return strings.ToUpper(s)
	default:
		return strings.TrimSpace(p)
	}
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func int64Args(ids []int64) []any {
	a := make([]any, len(ids))
	for i, id := range ids {
		a[i] = id
	}
	return a
}
