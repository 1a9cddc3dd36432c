package index

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A query word with symbols in it (c++, c#, .net, node.js, #tag, @name,
// v1.2) is a literal: the search table holds its letters and digits
// ("c++" as the word c), so the notes that hold those are candidates, and
// each candidate's text is read to keep those that hold the word as
// written, as rg -F -i finds it: cased or not, accents folded as
// everywhere else, and whole where it starts or ends with a letter or
// digit, as every word is ("c++" is in "(c++17)" and "libc++" is not;
// ".net" is in "asp.net", not in ".network").
//
// Checking candidates, rather than indexing such words as tokens of
// their own, costs nothing to a search without symbols nor to indexing,
// and finds a literal anywhere it occurs: a token for each would need one
// for every way text around a symbol can be cut (asp.net holds .net,
// x.node.js holds node.js), URLs and paths included.

// literal is a query word (or, in phrase mode, the phrase) matched as
// written.
type literal struct {
	runes      []rune // folded (see probeFoldRune); a space matches any run of white space
	anchor     string // the first symbol, looked for first: symbols have no case
	at         int    // its index in runes
	start, end bool   // whole at that end: it is a letter or digit there
	// alts are the synonyms of the word (an FTS5 expression, "" without):
	// a note that holds one of them holds the word.
	alts string
}

// Edge punctuation is not part of a literal: "c++?" asks for c++, and
// "node.js." ends a sentence.
const (
	leadPunct  = "\"'“‘«([{<*_¿¡（「『【"
	trailPunct = "\"'”’»)]}>*_,;:!?.…。、，．！？：；）」』】"
)

// literalOf returns the literal of a query word, nil when the word holds
// no symbol (or only hyphens and apostrophes, which join words in prose:
// e-mail and don't match as the phrases of their words). prefix is the
// word's trailing '*', which is not part of it.
func literalOf(word string, prefix bool) *literal {
	if prefix {
		word = strings.TrimSuffix(word, "*")
	}
	word = strings.TrimLeft(strings.TrimRight(strings.TrimSpace(word), trailPunct), leadPunct)
	l := &literal{at: -1}
	space := false
	for _, r := range word {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && len(l.runes) > 0 {
			l.runes = append(l.runes, ' ')
		}
		space = false
		f := probeFoldRune(r)
		if f < 0 {
			continue // an accent, which folding drops
		}
		if l.at < 0 && symbolic(f) {
			l.at, l.anchor = len(l.runes), string(f)
		}
		l.runes = append(l.runes, f)
	}
	if l.at < 0 || !slices.ContainsFunc(l.runes, wordRune) {
		return nil
	}
	l.start = wordRune(l.runes[0]) && !unspacedRune(l.runes[0])
	last := l.runes[len(l.runes)-1]
	l.end = !prefix && wordRune(last) && !unspacedRune(last)
	return l
}

// symbolic reports a rune that makes a word a literal.
func symbolic(r rune) bool {
	switch r {
	case '-', '\'', '’', '*', ' ':
		return false
	}
	return !wordRune(r) && !unicode.IsSpace(r) && !(r >= utf8.RuneSelf && bmpClass(r) == classSymbol)
}

// wordRune reports a rune that is part of a piece of text other than a
// symbol: a letter, digit or mark.
func wordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	c := bmpClass(r)
	return c == classSpaced || c == classUnspaced || c == classMark
}

func unspacedRune(r rune) bool { return r >= utf8.RuneSelf && bmpClass(r) == classUnspaced }

// bmpClass is runeClass, from the table below U+10000.
func bmpClass(r rune) int {
	if r < 0x10000 {
		return int(bmpClasses()[r])
	}
	return runeClass(r)
}

// find returns the byte range of the first occurrence of l in text at or
// after from; -1, -1 without one.
func (l *literal) find(text string, from int) (int, int) {
	for from < len(text) {
		k := strings.Index(text[from:], l.anchor)
		if k < 0 {
			break
		}
		k += from
		if start, end, ok := l.around(text, k); ok {
			return start, end
		}
		from = k + len(l.anchor)
	}
	return -1, -1
}

// around matches l in text with its anchor at k.
func (l *literal) around(text string, k int) (start, end int, ok bool) {
	if start, ok = matchBack(text, k, l.runes[:l.at]); !ok {
		return 0, 0, false
	}
	if end, ok = matchOn(text, k, l.runes[l.at:]); !ok {
		return 0, 0, false
	}
	if l.start && start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); wordRune(r) && !unspacedRune(r) {
			return 0, 0, false
		}
	}
	if l.end && end < len(text) {
		if r, _ := utf8.DecodeRuneInString(text[end:]); wordRune(r) && !unspacedRune(r) {
			return 0, 0, false
		}
	}
	return start, end, true
}

// matchOn matches the folded runes rs in text from i on and returns where
// the match ends, past any accent folding drops after it.
func matchOn(text string, i int, rs []rune) (int, bool) {
	for _, want := range rs {
		if want == ' ' {
			j := i
			for j < len(text) {
				r, n := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsSpace(r) {
					break
				}
				j += n
			}
			if j == i {
				return 0, false
			}
			i = j
			continue
		}
		for {
			if i >= len(text) {
				return 0, false
			}
			r, n := utf8.DecodeRuneInString(text[i:])
			i += n
			if f := probeFoldRune(r); f != want {
				if f < 0 {
					continue
				}
				return 0, false
			}
			break
		}
	}
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if probeFoldRune(r) >= 0 {
			break
		}
		i += n
	}
	return i, true
}

// matchBack matches the folded runes rs in text ending at i and returns
// where the match starts.
func matchBack(text string, i int, rs []rune) (int, bool) {
	for k := len(rs) - 1; k >= 0; k-- {
		want := rs[k]
		if want == ' ' {
			j := i
			for j > 0 {
				r, n := utf8.DecodeLastRuneInString(text[:j])
				if !unicode.IsSpace(r) {
					break
				}
				j -= n
			}
			if j == i {
				return 0, false
			}
			i = j
			continue
		}
		for {
			if i <= 0 {
				return 0, false
			}
			r, n := utf8.DecodeLastRuneInString(text[:i])
			i -= n
			if f := probeFoldRune(r); f != want {
				if f < 0 {
					continue
				}
				return 0, false
			}
			break
		}
	}
	return i, true
}

// in reports whether one of texts holds l.
func (l *literal) in(texts ...string) bool {
	for _, t := range texts {
		if s, _ := l.find(t, 0); s >= 0 {
			return true
		}
	}
	return false
}

// literalSpans returns the occurrences in text of the literal terms, in
// order, none overlapping another.
func literalSpans(text string, terms []term) []span {
	var out []span
	for _, t := range terms {
		if t.lit == nil {
			continue
		}
		for from := 0; ; {
			s, e := t.lit.find(text, from)
			if s < 0 {
				break
			}
			out = append(out, span{s, e})
			from = e
		}
	}
	slices.SortFunc(out, func(a, b span) int { return a.start - b.start })
	kept := out[:0]
	for _, s := range out {
		if len(kept) == 0 || s.start >= kept[len(kept)-1].end {
			kept = append(kept, s)
		}
	}
	return kept
}

// literals is what a query's literals ask of the notes its search
// expression matches: that they hold every literal (all and phrase
// modes), or, in any mode, one literal or another of the query's words.
type literals struct {
	lits []*literal
	// rest, in any mode, is the FTS5 expression of the query's other
	// words; "" in the other modes, or when every word is a literal.
	rest string
	any  bool
}

// holding returns the notes among those cands, the notes the search
// matched, that hold the query's literals; idCol is the note id of a row
// of notes_fts t.
func (ls *literals) holding(ctx context.Context, tx readTx, idCol string, cands []int64) ([]int64, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids := jsonIDs(cands)
	held, err := ls.heldAsWritten(ctx, tx, ids, cands)
	if err != nil {
		return nil, err
	}
	// The FTS5 expressions the notes may match instead: a literal's
	// synonyms, and in any mode the other words.
	for i, l := range ls.lits {
		alts, err := notesMatching(ctx, tx, idCol, l.alts, ids)
		if err != nil {
			return nil, err
		}
		for id := range alts {
			held[id][i] = true
		}
	}
	rest, err := notesMatching(ctx, tx, idCol, ls.rest, ids)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, id := range cands {
		h := held[id]
		if ls.any && (rest[id] || slices.Contains(h, true)) || !ls.any && !slices.Contains(h, false) {
			out = append(out, id)
		}
	}
	return out, nil
}

// heldAsWritten returns, for each of the notes cands (ids, as JSON),
// which literals its path, properties or sections hold as written:
// held[id][i], the note holds literal i.
func (ls *literals) heldAsWritten(ctx context.Context, tx readTx, ids string, cands []int64) (map[int64][]bool, error) {
	held := make(map[int64][]bool, len(cands))
	for _, id := range cands {
		held[id] = make([]bool, len(ls.lits))
	}
	check := func(id int64, texts ...string) {
		h := held[id]
		for i, l := range ls.lits {
			h[i] = h[i] || l.in(texts...)
		}
	}
	err := collect(ctx, tx, `SELECT n.file_id, f.path, n.properties FROM notes n JOIN files f ON f.id = n.file_id
		WHERE n.file_id IN (SELECT value FROM json_each(?))`, []any{ids}, func(r *sql.Rows) error {
		var id int64
		var path, props string
		if err := r.Scan(&id, &path, &props); err != nil {
			return err
		}
		check(id, path, props)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Only the sections that hold a literal's anchor cross to Go: a
	// symbol has no case to fold.
	var anchored []string
	args := []any{ids}
	for _, l := range ls.lits {
		anchored = append(anchored, `instr(s.body, ?) OR instr(s.heading, ?) OR instr(s.title, ?)`)
		args = append(args, l.anchor, l.anchor, l.anchor)
	}
	err = collect(ctx, tx, `SELECT n.file_id, s.title, s.heading, s.body
		FROM notes n JOIN sections s ON s.id BETWEEN n.first_section AND n.last_section
		WHERE n.file_id IN (SELECT value FROM json_each(?)) AND (`+strings.Join(anchored, " OR ")+`)`, args, func(r *sql.Rows) error {
		var id int64
		var title, heading, body string
		if err := r.Scan(&id, &title, &heading, &body); err != nil {
			return err
		}
		if !slices.Contains(held[id], false) {
			return nil
		}
		check(id, title, heading, body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return held, nil
}

// notesMatching returns the notes among ids (as JSON) whose rows match
// the FTS5 expression expr; none when expr is "".
func notesMatching(ctx context.Context, tx readTx, idCol, expr, ids string) (map[int64]bool, error) {
	out := map[int64]bool{}
	if expr == "" {
		return out, nil
	}
	err := collect(ctx, tx, `SELECT `+idCol+` FROM notes_fts t WHERE t.notes_fts MATCH `+matchArg+`
			AND +`+idCol+` IN (SELECT value FROM json_each(?))`, []any{expr, ids}, func(r *sql.Rows) error {
		var id int64
		err := r.Scan(&id)
		out[id] = true
		return err
	})
	return out, err
}

// literalsOf returns what the literals among terms, the terms of the
// query text in mode, ask of the notes; nil without any.
func literalsOf(text string, mode Mode, expand map[string][]string, terms []term) *literals {
	ls := &literals{any: mode == ModeAny}
	for _, t := range terms {
		if t.lit != nil {
			ls.lits = append(ls.lits, t.lit)
		}
	}
	if len(ls.lits) == 0 {
		return nil
	}
	if ls.any {
		// The query again without its literals.
		var others []string
		for _, w := range words(text) {
			if literalOf(w.text, w.prefix) != nil {
				continue
			}
			if w.quoted {
				w.text = `"` + w.text + `"`
				if w.prefix {
					w.text += "*"
				}
			}
			others = append(others, w.text)
		}
		ls.rest, _, _ = matchExpr(strings.Join(others, " "), ModeAny, expand)
	}
	return ls
}
