package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/margin-md/margin/vault/note"
)

// NoteMeta is what the index holds about one note.
type NoteMeta struct {
	Path             string
	Kind             note.Kind
	Title            string
	Date             string // daily notes only
	MarginKind       string
	FrontmatterError string
	Stat             FileStat
	Task             *TaskMeta // task notes only
	Tags             []string
	Aliases          []string
	Headings         []HeadingMeta
	Entries          []EntryMeta
	Checklist        []ChecklistItemMeta
	Links            []LinkMeta
}

// HeadingMeta is one heading of a note.
type HeadingMeta struct {
	Level  int
	Text   string
	Line   int
	Offset int
}

// EntryMeta is one `## HH:MM` entry of a daily note.
type EntryMeta struct {
	Path       string
	Date       string
	Time       string
	Correction bool
	Heading    string
	Line       int
	Start, End int    // byte range of the section, heading included
	Text       string // the body, heading excluded, trimmed
}

// ChecklistItemMeta is one checklist line of a note.
type ChecklistItemMeta struct {
	Line  int
	State rune
	Text  string

	Due, Scheduled, Start, Done, Cancelled string
	Priority                               string
	ID                                     string
}

// LinkMeta is one outgoing link of a note.
type LinkMeta struct {
	Target  string // as written
	Heading string
	Line    int
}

// TaskMeta holds the task fields of a task note.
type TaskMeta struct {
	Path      string
	Title     string
	Status    string
	Priority  string
	Due       string
	Scheduled string
	Estimate  int // minutes
	Labels    []string
	Language  string
}

// Backlink is a link from another note that resolves to a given note.
type Backlink struct {
	From    string // path of the linking note
	Line    int
	Heading string // heading of the section the link sits in
	Date    string // when the linking note is a daily note
	Target  string // as written
}

// FileState is one file's standing in the index.
type FileState struct {
	Path   string `json:"path"`
	State  State  `json:"state"`
	Reason string `json:"reason"`
}

// Counts summarises the index for status reports. Notes counts every
// note, margin's own (Outputs) and templates included.
type Counts struct {
	Notes, Tasks, DailyNotes int
	Outputs, Templates       int
	ChecklistItems           int // in every note but margin's own
	Indexed, Skipped, Failed int
}

// Stat returns what the index holds for every file it knows, by path, so a
// walk can skip files whose size and modification time are unchanged.
func (ix *Index) Stat(ctx context.Context) (map[string]FileStat, error) {
	out := make(map[string]FileStat)
	if err := collect(ctx, ix.db, `SELECT path, size, mtime_ns, hash, state FROM files`, nil, scanStat(out)); err != nil {
		return nil, fmt.Errorf("reading index stats: %w", err)
	}
	return out, nil
}

// Indexed calls fn with the path and stat of each indexed note (not the
// skipped or failed), in no order: for a caller that keeps a little of
// each, where Stat's map of 100k notes is 16 MB.
func (ix *Index) Indexed(ctx context.Context, fn func(path string, st FileStat)) error {
	err := collect(ctx, ix.db, `SELECT path, size, mtime_ns, hash FROM files WHERE state = ?`, []any{StateIndexed}, func(r *sql.Rows) error {
		var p string
		st := FileStat{State: StateIndexed}
		if err := r.Scan(&p, &st.Size, &st.MtimeNS, &st.Hash); err != nil {
			return err
		}
		fn(p, st)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading index stats: %w", err)
	}
	return nil
}

// StatPaths is Stat for the given paths only; paths the index does not know
// are absent from the result.
func (ix *Index) StatPaths(ctx context.Context, paths []string) (map[string]FileStat, error) {
	out := make(map[string]FileStat, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	err := collect(ctx, ix.db, `SELECT path, size, mtime_ns, hash, state FROM files
		WHERE path IN (SELECT value FROM json_each(?))`, []any{jsonArray(paths)}, scanStat(out))
	if err != nil {
		return nil, fmt.Errorf("reading index stats: %w", err)
	}
	return out, nil
}

func scanStat(out map[string]FileStat) func(*sql.Rows) error {
	return func(r *sql.Rows) error {
		var p string
		var st FileStat
		err := r.Scan(&p, &st.Size, &st.MtimeNS, &st.Hash, &st.State)
		out[p] = st
		return err
	}
}

// jsonArray encodes ss for json_each, which takes any number of values as
// one parameter.
func jsonArray(ss []string) string {
	b, _ := json.Marshal(ss) // a []string always encodes
	return string(b)
}

// Note returns what the index holds about the note at path; the error wraps
// ErrNotFound when path is not an indexed note (unknown, skipped or failed).
func (ix *Index) Note(ctx context.Context, path string) (NoteMeta, error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return NoteMeta{}, fmt.Errorf("reading note %s: %w", path, err)
	}
	defer tx.Rollback()
	m, err := readNote(ctx, tx, path)
	if err != nil {
		return NoteMeta{}, fmt.Errorf("reading note %s: %w", path, err)
	}
	return m, nil
}

func readNote(ctx context.Context, tx *sql.Tx, path string) (NoteMeta, error) {
	m := NoteMeta{Path: path}
	var id, firstSection, lastSection int64
	var date, status, priority, due, scheduled, language, labels sql.NullString
	var estimate sql.NullInt64
	var headings string
	err := tx.QueryRowContext(ctx, `SELECT f.id, f.size, f.mtime_ns, f.hash, f.state, n.title, n.kind, n.date, n.margin_kind,
		n.frontmatter_error, n.status, n.priority, n.due, n.scheduled, n.estimate, n.language, n.labels,
		n.headings, n.first_section, n.last_section
		FROM files f JOIN notes n ON n.file_id = f.id WHERE f.path = ?`, path).Scan(
		&id, &m.Stat.Size, &m.Stat.MtimeNS, &m.Stat.Hash, &m.Stat.State, &m.Title, &m.Kind, &date, &m.MarginKind,
		&m.FrontmatterError, &status, &priority, &due, &scheduled, &estimate, &language, &labels,
		&headings, &firstSection, &lastSection)
	if errors.Is(err, sql.ErrNoRows) {
		return m, ErrNotFound
	}
	if err != nil {
		return m, err
	}
	m.Date = date.String
	if status.Valid {
		m.Task = &TaskMeta{Path: path, Title: m.Title, Status: status.String, Priority: priority.String,
			Due: due.String, Scheduled: scheduled.String, Estimate: int(estimate.Int64), Language: language.String}
		if err := json.Unmarshal([]byte(labels.String), &m.Task.Labels); err != nil {
			return m, fmt.Errorf("decoding labels: %w", err)
		}
	}

	err = collect(ctx, tx, `SELECT tag FROM tags WHERE file_id = ? ORDER BY ord`, []any{id}, func(r *sql.Rows) error {
		var t string
		err := r.Scan(&t)
		m.Tags = append(m.Tags, t)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("reading tags: %w", err)
	}
	err = collect(ctx, tx, `SELECT alias FROM aliases WHERE file_id = ? ORDER BY ord`, []any{id}, func(r *sql.Rows) error {
		var a string
		err := r.Scan(&a)
		m.Aliases = append(m.Aliases, a)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("reading aliases: %w", err)
	}
	if err := json.Unmarshal([]byte(headings), &m.Headings); err != nil {
		return m, fmt.Errorf("decoding headings: %w", err)
	}
	if len(m.Headings) == 0 {
		m.Headings = nil
	}
	m.Entries, err = entries(ctx, tx, `sections s`, `s.id BETWEEN ? AND ?`, firstSection, lastSection)
	if err != nil {
		return m, err
	}
	err = collect(ctx, tx, `SELECT line, state, text, due, scheduled, start, done, cancelled, priority, item_id
		FROM checklist_items WHERE file_id = ? ORDER BY ord`, []any{id}, func(r *sql.Rows) error {
		var c ChecklistItemMeta
		var state string
		err := r.Scan(&c.Line, &state, &c.Text, &c.Due, &c.Scheduled, &c.Start, &c.Done, &c.Cancelled, &c.Priority, &c.ID)
		c.State, _ = utf8.DecodeRuneInString(state)
		m.Checklist = append(m.Checklist, c)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("reading checklist: %w", err)
	}
	err = collect(ctx, tx, `SELECT target, heading, line FROM links WHERE file_id = ? ORDER BY ord`, []any{id}, func(r *sql.Rows) error {
		var l LinkMeta
		err := r.Scan(&l.Target, &l.Heading, &l.Line)
		m.Links = append(m.Links, l)
		return err
	})
	if err != nil {
		return m, fmt.Errorf("reading links: %w", err)
	}
	return m, nil
}

// Tasks returns every task note, by path.
func (ix *Index) Tasks(ctx context.Context) ([]TaskMeta, error) {
	return ix.tasks(ctx, "", nil)
}

// TasksAt returns the task notes at paths, by path; a path that is not a
// task note is left out. It reads only those notes, so it serves a
// batch of changes in a large vault at the cost of the batch.
func (ix *Index) TasksAt(ctx context.Context, paths []string) ([]TaskMeta, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	return ix.tasks(ctx, ` AND f.path IN (SELECT value FROM json_each(?))`, []any{jsonArray(paths)})
}

func (ix *Index) tasks(ctx context.Context, where string, args []any) ([]TaskMeta, error) {
	var out []TaskMeta
	err := collect(ctx, ix.db, `SELECT f.path, n.title, n.status, n.priority, n.due, n.scheduled, n.estimate, n.language, n.labels
		FROM notes n JOIN files f ON f.id = n.file_id WHERE n.kind = 'task'`+where+` ORDER BY f.path`, args, func(r *sql.Rows) error {
		var t TaskMeta
		var labels string
		if err := r.Scan(&t.Path, &t.Title, &t.Status, &t.Priority, &t.Due, &t.Scheduled, &t.Estimate, &t.Language, &labels); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(labels), &t.Labels); err != nil {
			return fmt.Errorf("decoding labels of %s: %w", t.Path, err)
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	return out, nil
}

// Entries returns the daily entries dated from..to (YYYY-MM-DD, inclusive;
// "" leaves that end open), by date, path and line.
func (ix *Index) Entries(ctx context.Context, from, to string) ([]EntryMeta, error) {
	for _, d := range []string{from, to} {
		if d != "" && !dateRE.MatchString(d) {
			return nil, fmt.Errorf("listing entries: date %q is not YYYY-MM-DD", d)
		}
	}
	if to == "" {
		to = "9999-12-31"
	}
	es, err := entries(ctx, ix.db, `notes n JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section`,
		`n.date BETWEEN ? AND ?`, from, to)
	if err != nil {
		return nil, fmt.Errorf("listing entries: %w", err)
	}
	return es, nil
}

// LinkedEntries returns the daily entries that link to the task note at
// taskPath, by date, path and line. Links resolve as in Obsidian (see
// resolve): by path, by a unique file name or path ending, by a unique alias;
// case-insensitively, with or without ".md". The error wraps ErrNotFound when
// taskPath is not in the index.
func (ix *Index) LinkedEntries(ctx context.Context, taskPath string) ([]EntryMeta, error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("listing entries linked to %s: %w", taskPath, err)
	}
	defer tx.Rollback()
	r, err := resolve(ctx, tx, taskPath)
	if err != nil {
		return nil, fmt.Errorf("listing entries linked to %s: %w", taskPath, err)
	}
	cond, args := r.cond()
	es, err := entries(ctx, tx, `sections s`,
		`s.file_id <> ? AND s.id IN (SELECT l.section_id FROM links l WHERE `+cond+`)`, append([]any{r.id}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("listing entries linked to %s: %w", taskPath, err)
	}
	return es, nil
}

// LinkedTasks returns the task notes that entries of the note at path link,
// by the same rules as LinkedEntries: a task is in the list exactly when one
// of this note's entries is in the task's LinkedEntries. It answers "whose
// agent reads this note" in one pass over the note's links, where asking
// every task would cost a query per task.
func (ix *Index) LinkedTasks(ctx context.Context, path string) ([]string, error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("listing tasks linked from %s: %w", path, err)
	}
	defer tx.Rollback()
	// Candidates: tasks an entry link's key could name by path, name or
	// alias, found through the keys' indexes (a scan of every task per link
	// cost milliseconds a daily note on a 10k vault). resolve then applies
	// the tie rules to each.
	type target struct {
		key string
		rel any
	}
	var targets []target
	err = collect(ctx, tx, `SELECT DISTINCT l.target_key, l.rel_key FROM links l
		JOIN files src ON src.id = l.file_id
		JOIN sections s ON s.id = l.section_id AND s.time IS NOT NULL
		WHERE src.path = ?`, []any{path}, func(r *sql.Rows) error {
		var t target
		err := r.Scan(&t.key, &t.rel)
		targets = append(targets, t)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing tasks linked from %s: %w", path, err)
	}
	seen := map[string]bool{}
	var candidates []string
	for _, t := range targets {
		err := linkCandidates(ctx, tx, t.key, t.rel, `kind = 'task' AND path <> ?`, []any{path}, func(p string) {
			if !seen[p] {
				seen[p] = true
				candidates = append(candidates, p)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("listing tasks linked from %s: %w", path, err)
		}
	}
	slices.Sort(candidates)
	var out []string
	for _, task := range candidates {
		r, err := resolve(ctx, tx, task)
		if err != nil {
			return nil, fmt.Errorf("listing tasks linked from %s: %w", path, err)
		}
		cond, args := r.cond()
		var linked bool
		err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM links l
			JOIN files src ON src.id = l.file_id
			JOIN sections s ON s.id = l.section_id AND s.time IS NOT NULL
			WHERE src.path = ? AND `+cond+`)`, append([]any{path}, args...)...).Scan(&linked)
		if err != nil {
			return nil, fmt.Errorf("listing tasks linked from %s: %w", path, err)
		}
		if linked {
			out = append(out, task)
		}
	}
	return out, nil
}

// Backlinks returns the links from other notes that resolve to the note at
// path (see resolve for how), by linking path and line.
func (ix *Index) Backlinks(ctx context.Context, path string) ([]Backlink, error) {
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("listing backlinks of %s: %w", path, err)
	}
	defer tx.Rollback()
	r, err := resolve(ctx, tx, path)
	if err != nil {
		return nil, fmt.Errorf("listing backlinks of %s: %w", path, err)
	}
	var out []Backlink
	cond, args := r.cond()
	err = collect(ctx, tx, `SELECT f.path, l.line, s.heading, COALESCE(s.date, ''), l.target
		FROM links l JOIN files f ON f.id = l.file_id JOIN sections s ON s.id = l.section_id
		WHERE l.file_id <> ? AND `+cond+`
		ORDER BY f.path, l.line`, append([]any{r.id}, args...), func(r *sql.Rows) error {
		var b Backlink
		err := r.Scan(&b.From, &b.Line, &b.Heading, &b.Date, &b.Target)
		out = append(out, b)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing backlinks of %s: %w", path, err)
	}
	return out, nil
}

// ResolveLink returns the path of the note that a link to target, written
// in the note at from, resolves to. It applies resolve's rules to the link
// (so it agrees with LinkedEntries and Backlinks); the error wraps
// ErrNotFound when the link resolves to no note, or to several.
func (ix *Index) ResolveLink(ctx context.Context, from, target string) (string, error) {
	key := note.LinkKey(target)
	if key == "" {
		return from, nil
	}
	var rel any // as the links table stores it
	if strings.Contains(target, "/") {
		if r := note.LinkKey(path.Join(path.Dir(from), target)); r != key {
			rel = r
		}
	}
	tx, err := ix.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return "", fmt.Errorf("resolving [[%s]]: %w", target, err)
	}
	defer tx.Rollback()
	// Candidates: notes the link's key could name by path, name or
	// alias; resolve's condition then decides for each.
	var candidates []string
	err = linkCandidates(ctx, tx, key, rel, "1", nil, func(p string) { candidates = append(candidates, p) })
	if err != nil {
		return "", fmt.Errorf("resolving [[%s]]: %w", target, err)
	}
	var found []string
	for _, c := range candidates {
		r, err := resolve(ctx, tx, c)
		if err != nil {
			return "", fmt.Errorf("resolving [[%s]]: %w", target, err)
		}
		cond, args := r.cond()
		var ok bool
		err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM (SELECT ? AS target_key, ? AS rel_key) l WHERE `+cond+`)`,
			append([]any{key, rel}, args...)...).Scan(&ok)
		if err != nil {
			return "", fmt.Errorf("resolving [[%s]]: %w", target, err)
		}
		if ok {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("[[%s]] from %s resolves to %d notes: %w", target, from, len(found), ErrNotFound)
	}
	return found[0], nil
}

// linkCandidates calls add, in path order, for each file matching where
// that a link with the key (and relative key) could name: by path, by name
// (a path ending shares the name), by alias. resolve's condition decides.
func linkCandidates(ctx context.Context, tx *sql.Tx, key string, rel any, where string, args []any, add func(path string)) error {
	name := key[strings.LastIndexByte(key, '/')+1:]
	return collect(ctx, tx, `SELECT path FROM files WHERE (path_key IN (?, ?) OR stem_key = ?
		OR id IN (SELECT file_id FROM aliases WHERE alias_key = ?)) AND `+where+` ORDER BY path`,
		append([]any{key, rel, name, key}, args...), func(r *sql.Rows) error {
			var p string
			err := r.Scan(&p)
			add(p)
			return err
		})
}

// resolution says which links resolve to one note.
type resolution struct {
	id    int64
	exact string   // the note's own key
	keys  []string // names, path suffixes and aliases that resolve to it
}

// resolve finds what links resolve to the note at path, by note.LinkKey's
// rules: its key; a target with a folder that is its key relative to the
// linking note's folder; the end of its key ("Ship", "Tasks/Ship") when no
// other note's key ends that way; one of its aliases when no note's key ends
// that way and no other note has it. Where the rules let the linking note's
// folder break a tie between notes of one name, this does not: such a link
// counts as ambiguous and resolves to neither.
func resolve(ctx context.Context, tx *sql.Tx, path string) (resolution, error) {
	var r resolution
	var kind string
	err := tx.QueryRowContext(ctx, `SELECT id, path_key, kind FROM files WHERE path = ?`, path).Scan(&r.id, &r.exact, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("resolving links: %w", err)
	}
	// ending counts the files whose key is k or ends in "/"+k. For a
	// person's note, files margin writes do not count: a task's report and
	// journal carry its name (SPEC §3.3) and would otherwise make every link
	// to it by name ambiguous. For margin's own file they all count, so the
	// report is linked by a longer path ("Reports/Ship"), never by the name.
	others := ` AND kind <> 'margin'`
	if kind == string(note.KindMargin) {
		others = ""
	}
	ending := func(k string) (int, error) {
		var n int
		q := `SELECT count(*) FROM files WHERE stem_key = ?` + others
		args := []any{k}
		if strings.Contains(k, "/") {
			// A key that ends in k has k's name: the name's index narrows
			// the files to compare.
			q = `SELECT count(*) FROM files WHERE stem_key = ? AND (path_key = ? OR substr(path_key, -length(?) - 1) = '/' || ?)` + others
			args = []any{k[strings.LastIndexByte(k, '/')+1:], k, k, k}
		}
		err := tx.QueryRowContext(ctx, q, args...).Scan(&n)
		return n, err
	}
	for i := range len(r.exact) {
		if r.exact[i] != '/' {
			continue
		}
		suffix := r.exact[i+1:]
		n, err := ending(suffix)
		if err != nil {
			return r, fmt.Errorf("resolving links: %w", err)
		}
		if n == 1 { // the note itself
			r.keys = append(r.keys, suffix)
		}
	}
	var aliases []string
	err = collect(ctx, tx, `SELECT a.alias_key FROM aliases a WHERE a.file_id = ?
		AND (SELECT count(*) FROM aliases b WHERE b.alias_key = a.alias_key) = 1`, []any{r.id}, func(rows *sql.Rows) error {
		var k string
		err := rows.Scan(&k)
		aliases = append(aliases, k)
		return err
	})
	if err != nil {
		return r, fmt.Errorf("resolving aliases: %w", err)
	}
	for _, a := range aliases {
		n, err := ending(a)
		if err != nil {
			return r, fmt.Errorf("resolving aliases: %w", err)
		}
		if n == 0 && a != "" {
			r.keys = append(r.keys, a)
		}
	}
	return r, nil
}

// cond is the SQL condition over links l that holds for links resolving to
// the note.
func (r resolution) cond() (string, []any) {
	// A key that is not the note's own resolves by name or alias only if the
	// target does not first resolve, relative to the linking note, to
	// another note.
	c := `(l.target_key = ? OR (l.rel_key = ? AND NOT EXISTS (SELECT 1 FROM files x WHERE x.path_key = l.target_key))`
	args := []any{r.exact, r.exact}
	if len(r.keys) > 0 {
		c += ` OR (l.target_key IN (` + placeholders(len(r.keys)) + `)
			AND (l.rel_key IS NULL OR NOT EXISTS (SELECT 1 FROM files x WHERE x.path_key = l.rel_key)))`
		args = append(args, stringArgs(r.keys)...)
	}
	return c + ")", args
}

// Coverage lists every file with the given state ("" for all), by path.
func (ix *Index) Coverage(ctx context.Context, state State) ([]FileState, error) {
	q, args := `SELECT path, state, reason FROM files ORDER BY path`, []any(nil)
	switch state {
	case "":
	case StateIndexed, StateSkipped, StateFailed:
		q, args = `SELECT path, state, reason FROM files WHERE state = ? ORDER BY path`, []any{state}
	default:
		return nil, fmt.Errorf("listing coverage: unknown state %q", state)
	}
	var out []FileState
	err := collect(ctx, ix.db, q, args, func(r *sql.Rows) error {
		var f FileState
		err := r.Scan(&f.Path, &f.State, &f.Reason)
		out = append(out, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listing coverage: %w", err)
	}
	return out, nil
}

// Counts counts notes by kind and files by state.
func (ix *Index) Counts(ctx context.Context) (Counts, error) {
	ix.mu.Lock()
	cached, gen := ix.counts, ix.gen
	ix.mu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	var c Counts
	err := ix.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM notes),
		(SELECT count(*) FROM notes WHERE kind = 'task'),
		(SELECT count(*) FROM notes WHERE kind = 'daily'),
		(SELECT count(*) FROM notes WHERE kind = 'margin'),
		(SELECT count(*) FROM notes WHERE kind = 'template'),
		(SELECT count(*) FROM checklist_items c JOIN notes n ON n.file_id = c.file_id WHERE n.kind <> 'margin'),
		(SELECT count(*) FROM files WHERE state = 'indexed'),
		(SELECT count(*) FROM files WHERE state = 'skipped'),
		(SELECT count(*) FROM files WHERE state = 'failed')`).Scan(
		&c.Notes, &c.Tasks, &c.DailyNotes, &c.Outputs, &c.Templates, &c.ChecklistItems, &c.Indexed, &c.Skipped, &c.Failed)
	if err != nil {
		return c, fmt.Errorf("counting index: %w", err)
	}
	ix.mu.Lock()
	if ix.gen == gen {
		ix.counts = &c
	}
	ix.mu.Unlock()
	return c, nil
}

// NotesOfKind lists the paths of the notes of the kinds given.
func (ix *Index) NotesOfKind(ctx context.Context, kinds ...note.Kind) ([]string, error) {
	args := make([]any, len(kinds))
	for i, k := range kinds {
		args[i] = string(k)
	}
	var paths []string
	err := collect(ctx, ix.db, `SELECT f.path FROM notes n JOIN files f ON f.id = n.file_id WHERE n.kind IN (`+placeholders(len(kinds))+`)`, args, func(rows *sql.Rows) error {
		var p string
		if err := rows.Scan(&p); err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing notes of kind %v: %w", kinds, err)
	}
	return paths, nil
}

// querier is what the read helpers need from a *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// entries reads the daily entries matching cond, with their text, by date,
// path and line. from names the sections as s, joined to whatever cond needs.
func entries(ctx context.Context, q querier, from, cond string, args ...any) ([]EntryMeta, error) {
	var out []EntryMeta
	err := collect(ctx, q, `SELECT f.path, s.date, s.time, s.correction, s.heading, s.line, s.start_offset, s.end_offset, s.body
		FROM `+from+` JOIN files f ON f.id = s.file_id
		WHERE s.time IS NOT NULL AND `+cond+`
		ORDER BY s.date, f.path, s.line`, args, func(r *sql.Rows) error {
		var e EntryMeta
		err := r.Scan(&e.Path, &e.Date, &e.Time, &e.Correction, &e.Heading, &e.Line, &e.Start, &e.End, &e.Text)
		out = append(out, e)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading entries: %w", err)
	}
	return out, nil
}

// collect runs a query and calls scan for each row.
func collect(ctx context.Context, q querier, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

func stringArgs(ss []string) []any {
	a := make([]any, len(ss))
	for i, s := range ss {
		a[i] = s
	}
	return a
}
