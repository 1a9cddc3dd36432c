package index

import (
	"strings"
	"unicode/utf8"
)

// A note's search text goes into notes_fts in rows of at most ftsChunk
// bytes: FTS5 holds every term of a row in memory until the row is
// written, so one 5 MB note of distinct words took some 200 MB, while rows
// of 256 KiB keep that near 30 MB whatever the note's size.
const ftsChunk = 256 << 10

// Row k > 0 of a note's search text has rowid id | k<<chunkShift; row 0
// is the file id itself, so a note of one row (nearly all) is unchanged.
// File ids stay far below 1<<chunkShift.
const (
	chunkShift = 40
	chunkMask  = 1<<chunkShift - 1
)

// noteOfRow is the SQL expression of the file id of search row rowid.
func noteOfRow(rowid string) string {
	return "(" + rowid + " & " + chunkMaskSQL + ")"
}

// chunkedSQL tells whether any note has more than one search row.
const chunkedSQL = `SELECT EXISTS (SELECT 1 FROM notes_fts_docsize WHERE id > ` + chunkMaskSQL + `)`

// deleteFTSSQL and deleteFieldsSQL remove every search row of the note
// ?1. Only long notes have rows past the first, so the range scan over
// them is short.
const (
	deleteFTSSQL    = `DELETE FROM notes_fts WHERE rowid IN (SELECT id FROM notes_fts_docsize` + rowsOfNote
	deleteFieldsSQL = `DELETE FROM fields_fts WHERE rowid IN (SELECT id FROM fields_fts_docsize` + rowsOfNote
	rowsOfNote      = ` WHERE id = ?1 OR id > ` + chunkMaskSQL + ` AND id & ` + chunkMaskSQL + ` = ?1)`
)

const chunkMaskSQL = "1099511627775" // chunkMask

// rows calls fn with the arguments of insertFTSSQL for each search row
// of r, its text folded, and fields with those of insertFieldsSQL: the
// same row less its body, for row 0 and each later row that holds more
// than body. The columns fill the rows in order, each cut at a line break
// (a line longer than a row at a space, a word longer than a row anywhere
// between two characters), so the title and path are in row 0, and most
// of a long note's rows hold only body. FTS5 matches row by row: in a note
// of several rows, all the words (and filters) of a query must meet in one
// row of 256 KiB, a phrase on one side of a cut.
func (r *ftsRow) rows(fn, fields func(args []any) error) error {
	cols := [...]string{r.title, r.path, r.headings, r.props, r.body, r.meta}
	const body = 4
	var row [len(cols)]string
	k, used := int64(0), 0
	emit := func() error {
		args := []any{r.id | k<<chunkShift}
		var b strings.Builder
		for i, s := range row {
			if s == "" {
				// NULL indexes as nothing, like "", and binds without
				// the copy into C memory a string takes.
				args = append(args, nil)
				continue
			}
			if i == len(row)-1 {
				args = append(args, s) // meta: tokens already
				break
			}
			args = append(args, searchText(&b, s))
		}
		only := row[body] != "" && row[0]+row[1]+row[2]+row[3]+row[5] == ""
		k, used, row = k+1, 0, [len(cols)]string{}
		if err := fn(args); err != nil || only && k > 1 {
			return err
		}
		return fields(append(args[:1+body:1+body], args[len(args)-1]))
	}
	for c, s := range cols {
		for s != "" {
			// What does not fit goes on in the next row.
			row[c], s = cutText(s, ftsChunk-used, used == 0)
			used += len(row[c])
			if s != "" {
				if err := emit(); err != nil {
					return err
				}
			}
		}
	}
	if used > 0 || k == 0 {
		return emit()
	}
	return nil
}

// cutText cuts at most n bytes off the front of s: through its last line
// break, else its last space, else (when must) its last whole character.
// It returns "" when nothing fits and must is false.
func cutText(s string, n int, must bool) (string, string) {
	if len(s) <= n {
		return s, ""
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 {
		return s[:i+1], s[i+1:]
	}
	if i := strings.LastIndexAny(s[:n], " \t"); i >= 0 {
		return s[:i+1], s[i+1:]
	}
	if !must {
		return "", s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 { // n is less than one character
		_, i = utf8.DecodeRuneInString(s)
	}
	return s[:i], s[i:]
}
