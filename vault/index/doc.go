package index

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// A note's search text, its columns in the order of notes_fts. The texts
// are as written; rows cuts them into search rows and folds them.
type ftsRow struct {
	id                                       int64 // the note's file id
	title, path, headings, props, body, meta string
}

// size is the length of r's text.
func (r *ftsRow) size() int {
	return len(r.title) + len(r.path) + len(r.headings) + len(r.props) + len(r.body) + len(r.meta)
}

// noteRow is the search row of a note with sections secs.
func noteRow(id int64, path, title, props, meta string, secs []section) ftsRow {
	r := ftsRow{id: id, title: title, path: strings.TrimSuffix(path, ".md"), props: props, meta: meta}
	// Sized first: grown by doubling, the builders copied a cold index's
	// text about twice over.
	var hs, bs strings.Builder
	hn, bn := 0, 0
	for _, s := range secs {
		if s.heading != "" {
			hn += len(s.heading) + 1
		}
		bn += len(s.text) + 1
	}
	hs.Grow(hn)
	bs.Grow(bn)
	for _, s := range secs {
		if s.heading != "" {
			hs.WriteString(s.heading)
			hs.WriteByte('\n')
		}
		bs.WriteString(s.text)
		bs.WriteByte('\n')
	}
	r.headings, r.body = hs.String(), bs.String()
	return r
}

// Filter tokens in the meta column of the search table. Values are hex
// encoded so that any tag, status or property becomes one token. Each
// starts with metaMark, a noncharacter: FTS5's ascii tokenizer keeps it
// inside the token, and spansWhile never puts one in a piece of text or
// query, so no word can equal a filter token. A search of words then needs
// no column filter, which made FTS5 sift every match's positions by column
// (a fifth to three quarters of a search's walk).
const (
	metaMark     = "\ufdd0"
	metaKind     = metaMark + "kd"
	metaStatus   = metaMark + "st"
	metaPriority = metaMark + "pr"
	metaTag      = metaMark + "tg"
	metaProp     = metaMark + "pv" // key:value, both folded, one token per word of the value
)

func metaToken(prefix, value string) string {
	return prefix + hex.EncodeToString([]byte(value))
}

// propToken is the filter token of one word of a property's value.
func propToken(key string, value folded) string {
	return metaToken(metaProp, fold(key)+":"+value.text)
}

// metaTokens lists the filter tokens of n: the kind of margin's outputs;
// for a task its kind, status and priority; each tag with its parents ("a/b" also gives "a"), so that a tag
// filter matches nested tags; and each word of each property value. They
// are indexed once per note.
func metaTokens(n *note.Note) string {
	var m metaText
	if n.Kind == note.KindMargin {
		// A search leaves margin's outputs out by this token.
		m.add(metaKind+string(note.KindMargin), "")
	}
	if t := taskOf(n); t != nil {
		m.add(metaKind+string(note.KindTask), "")
		m.add(metaStatus, strings.ToLower(t.Status))
		m.add(metaPriority, t.Priority)
	}
	for _, tag := range n.Tags {
		k := tagKey(tag)
		for i := range len(k) {
			if k[i] == '/' {
				m.add(metaTag, k[:i])
			}
		}
		m.add(metaTag, k)
	}
	if n.Frontmatter != nil {
		for _, f := range n.Frontmatter.Fields {
			key := fold(f.Key) + ":"
			pieces(propValue(f.Value), func(p folded) { m.addProp(key, p.text) })
		}
	}
	return string(m.b)
}

// metaText writes filter tokens into one buffer, space separated: a
// cold index makes one string of them a note, not one a token.
type metaText struct {
	b     []byte
	props [][2]int // where each property token lies in b
}

// add writes the token of prefix and value, as metaToken does.
func (m *metaText) add(prefix, value string) {
	if len(m.b) > 0 {
		m.b = append(m.b, ' ')
	}
	m.b = append(m.b, prefix...)
	m.b = hex.AppendEncode(m.b, []byte(value))
}

// addProp writes the token of one word of a property, as propToken does,
// unless an earlier one is the same; key is the property's, folded, and
// ":".
func (m *metaText) addProp(key, word string) {
	n := len(m.b)
	m.add(metaProp, key)
	m.b = hex.AppendEncode(m.b, []byte(word))
	start := n
	if n > 0 {
		start++ // the space
	}
	tok := m.b[start:]
	for _, p := range m.props {
		if string(m.b[p[0]:p[1]]) == string(tok) {
			m.b = m.b[:n]
			return
		}
	}
	m.props = append(m.props, [2]int{start, len(m.b)})
}

// propertiesOf is n's frontmatter as text, one field a line: props, its
// values, searched as words (the props column); properties, "key: value"
// as a reader quotes it; and lines, space separated, the file line of
// each line of properties (a value may take several; the property_lines
// column, nil without properties).
func propertiesOf(n *note.Note) (props, properties string, lines any) {
	if n.Frontmatter == nil || len(n.Frontmatter.Fields) == 0 {
		return "", "", nil
	}
	var vs, kvs strings.Builder
	var ls []byte
	for _, f := range n.Frontmatter.Fields {
		v := propValue(f.Value)
		vs.WriteString(v)
		vs.WriteByte('\n')
		if kvs.Len() > 0 {
			kvs.WriteByte('\n')
		}
		kvs.WriteString(f.Key)
		kvs.WriteString(": ")
		kvs.WriteString(v)
		for range strings.Count(v, "\n") + 1 {
			if len(ls) > 0 {
				ls = append(ls, ' ')
			}
			ls = strconv.AppendInt(ls, int64(f.Line), 10)
		}
	}
	return vs.String(), kvs.String(), string(ls)
}

// propValue writes a decoded YAML value as text: lists and maps as their
// values, dates as YYYY-MM-DD.
func propValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 && x.Nanosecond() == 0 {
			return x.Format(time.DateOnly)
		}
		return x.Format(time.RFC3339)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = propValue(e)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = propValue(x[k])
		}
		return strings.Join(parts, ", ")
	default:
		return fmt.Sprint(x)
	}
}

// rebuildFTS indexes every note again from what notes and sections hold,
// which is what Apply indexed.
func rebuildFTS(ctx context.Context, tx *sql.Tx) error {
	for _, t := range searchTables {
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+t+`(`+t+`) VALUES ('delete-all')`); err != nil {
			return err
		}
	}
	insert, err := tx.PrepareContext(ctx, insertFTSSQL)
	if err != nil {
		return err
	}
	defer insert.Close()
	insertFields, err := tx.PrepareContext(ctx, insertFieldsSQL)
	if err != nil {
		return err
	}
	defer insertFields.Close()
	rows, err := tx.QueryContext(ctx, `SELECT n.file_id, f.path, n.title, n.props, n.meta,
		COALESCE((SELECT group_concat(a.alias, char(10)) FROM (SELECT alias FROM aliases a WHERE a.file_id = n.file_id ORDER BY ord) a), ''),
		s.heading, s.body, s.id = n.first_section
		FROM notes n JOIN files f ON f.id = n.file_id JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section
		ORDER BY n.file_id, s.id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur ftsRow
	var secs []section
	put := func() error {
		if cur.id == 0 {
			return nil
		}
		r := noteRow(cur.id, cur.path, cur.title, cur.props, cur.meta, secs)
		return r.rows(func(args []any) error {
			_, err := insert.ExecContext(ctx, args...)
			return err
		}, func(args []any) error {
			_, err := insertFields.ExecContext(ctx, args...)
			return err
		})
	}
	for rows.Next() {
		var r ftsRow
		var aliases string
		var s section
		var first bool
		if err := rows.Scan(&r.id, &r.path, &r.title, &r.props, &r.meta, &aliases, &s.heading, &s.text, &first); err != nil {
			return err
		}
		if r.id != cur.id {
			if err := put(); err != nil {
				return err
			}
			cur, secs = r, secs[:0]
			if aliases != "" {
				cur.title += "\n" + aliases
			}
		}
		secs = append(secs, s)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return put()
}
