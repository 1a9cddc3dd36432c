package index

import (
	"cmp"
	"slices"
	"strconv"
)

// tiered reports whether the query is a question whose notes rank by
// rankQuestion: one with several words, or a phrase.
func (p *queryPlan) tiered() bool { return len(p.cover) > 1 || p.phrase != "" }

// withFilters is expr, an expression of the query's words, as the search's
// match: with the filters, unless a long note's rows keep them apart (see
// search).
func (p *queryPlan) withFilters(expr string) string {
	if p.filters == "" || p.chunked {
		return expr
	}
	return "(" + expr + ") AND " + p.filters
}

// rankQuestion ranks the notes of a question: the named notes first, then
// those that hold its phrase, then by how many of its words they hold,
// then by bm25, except that of the notes holding one word those whose
// title, aliases, path, headings or properties hold it come first, as a
// single word's notes rank (see byFields, rankTiers); it returns the
// page's, at most p.limit, with the number of notes that hold any word.
// notesOf lists the notes matching an expression in a search table (with
// the query's filters); rankBy ranks the notes a ranking names.
//
// Only the notes of the best places are scored: a common word of a
// question can be in most notes, which bm25 must each read, while the
// notes that hold the most words fill the page. The notes holding each
// word are listed first, which costs a tenth of scoring them; then only
// the notes placed at least as high as the page's last note are ranked.
// Of those, the notes whose place alone gives them one on the page are
// ranked whatever their score, and SQLite keeps the best of the place
// that fills the rest of the page (a bounded sort): "why did I sleep
// badly" has every note holding "sleep" in that tier, 94,000 of a
// generated vault's 100,000, of which the 6,700 with "sleep" in a field
// fill the page and are scored, rather than all.
func (p *queryPlan) rankQuestion(named map[int64]bool, notesOf func(table, expr string) ([]int64, error),
	rankBy func(ranking) ([]scored, error)) ([]scored, int, error) {
	n := len(p.cover)
	hs, lowest, err := p.holdings(notesOf)
	if err != nil || len(hs) == 0 {
		return nil, 0, err
	}
	notes := make([]int, n+1) // by words held
	for _, h := range hs {
		notes[h.words]++
	}
	// The fewest words a ranked note holds: enough notes to fill the
	// page, and one more to tell a cut list.
	k, ranked := n, notes[n]
	for k > lowest && ranked <= p.limit {
		k--
		ranked += notes[k]
	}
	// A note's order but for its score, higher first: the named notes,
	// then those that hold the phrase, then by how many words they hold,
	// then, of those holding one, those holding it in a field.
	place := func(h holding) int {
		pl := 2 * h.words
		if h.byFields() {
			pl++
		}
		if h.phrased {
			pl += 2*n + 2
		}
		if named[h.id] {
			pl += 4*n + 4
		}
		return pl
	}
	if err := p.markFielded(hs, k, named, notesOf); err != nil {
		return nil, 0, err
	}
	all := k == n // every ranked note holds every word
	ranks := make([]holding, 0, ranked)
	for _, h := range hs {
		if h.words >= k || named[h.id] {
			ranks = append(ranks, h)
			all = all && h.words == n
		}
	}
	sure, next := placed(ranks, p.limit, 8*n+8, place)
	cands, err := p.score(hs, sure, next, all, rankBy)
	if err != nil {
		return nil, 0, err
	}
	placeOf := func(id int64) int {
		i, found := slices.BinarySearchFunc(hs, id, func(h holding, id int64) int { return cmp.Compare(h.id, id) })
		if !found { // ranked from the same match as hs: not expected
			return -1
		}
		return place(hs[i])
	}
	slices.SortFunc(cands, func(a, b scored) int {
		return cmp.Or(cmp.Compare(placeOf(b.id), placeOf(a.id)), cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id))
	})
	return cands[:min(len(cands), p.limit)], len(hs), nil
}

// score ranks the notes sure of a place on the page and the best of
// those of the next place, of the question's notes hs; all says that
// every one of them holds every word. The notes that rank by their
// fields are scored in fields_fts, as a single word's are, where a common
// word has a fraction of the rows to read; the others in notes_fts. A
// place holds only one kind, so no two scores of different tables are
// compared.
func (p *queryPlan) score(hs, sure, next []holding, all bool, rankBy func(ranking) ([]scored, error)) ([]scored, error) {
	fielded, byFields := 0, 0 // fields_fts's matches, and those ranked there
	for _, h := range hs {
		if h.fielded {
			fielded++
		}
		if h.byFields() {
			byFields++
		}
	}
	var cands []scored
	for _, inFields := range []bool{true, false} {
		r := ranking{fields: inFields, all: all && !inFields, limit: p.limit}
		var more []int64
		for _, h := range sure {
			if h.byFields() == inFields {
				r.first = append(r.first, h.id)
			}
		}
		for _, h := range next {
			if h.byFields() == inFields {
				more = append(more, h.id)
			}
		}
		ids := slices.Concat(r.first, more)
		if len(ids) == 0 {
			continue
		}
		// Else every match of the table: no list for SQLite to look each
		// one up in.
		everyMatch := len(ids) == fielded
		if !inFields {
			everyMatch = byFields == 0 && len(ids) == len(hs)
		}
		if !everyMatch || p.inGlob != nil {
			r.ids = ids
		}
		c, err := rankBy(r)
		if err != nil {
			return nil, err
		}
		cands = append(cands, c...)
	}
	return cands, nil
}

// A holding is a note that matches a question, and what of it it holds.
type holding struct {
	id      int64
	words   int  // how many of the question's words
	phrased bool // its phrase
	fielded bool // a word in its title, aliases, path, headings or properties
}

// byFields says whether the note ranks as a single word's notes do, its
// fields first and scored in fields_fts: a note holding one of the
// question's words. Between notes holding several, bm25 weighs the rarer
// words, which a common word in a field should not outrank: "the failed
// bench" of a day's log came after a task titled Bench 225, which held as
// many words, all common.
func (h holding) byFields() bool { return h.fielded && h.words == 1 }

// holdings lists the notes that hold the question's words, by id, and
// the fewest words a matching note holds. The lists of the notes holding
// each word are merged rather than counted in a map: a common word's
// list can be most of the vault, and a map of it cost a question more
// than the search in SQLite.
func (p *queryPlan) holdings(notesOf func(table, expr string) ([]int64, error)) (hs []holding, lowest int, err error) {
	list := func(table, expr string) ([]int64, error) {
		ids, err := notesOf(table, expr)
		slices.Sort(ids) // FTS5's order for a short note, not a long one's rows
		return ids, err
	}
	lowest = 1
	if len(p.required) > 0 {
		// Every note that holds the quoted phrases matches, even one
		// without any other word.
		lowest = 0
		ids, err := list("notes_fts", p.required[0])
		if err != nil {
			return nil, 0, err
		}
		hs = merge(hs, ids, 0)
	}
	for _, w := range p.cover {
		ids, err := list("notes_fts", w)
		if err != nil {
			return nil, 0, err
		}
		hs = merge(hs, ids, 1)
	}
	if p.phrase != "" {
		ids, err := list("notes_fts", p.phrase)
		if err != nil {
			return nil, 0, err
		}
		mark(hs, ids, func(h *holding) { h.phrased = true })
	}
	return hs, lowest, nil
}

// markFielded marks the notes of hs whose fields hold a word, when the
// page reaches a note holding one word, the only kind that ranks by its
// fields (byFields): the notes holding at least k words, and the named.
// Else the fields' list is not read: most questions' pages are filled by
// notes holding several words.
func (p *queryPlan) markFielded(hs []holding, k int, named map[int64]bool, notesOf func(table, expr string) ([]int64, error)) error {
	if !slices.ContainsFunc(hs, func(h holding) bool { return h.words == 1 && (k <= 1 || named[h.id]) }) {
		return nil
	}
	ids, err := notesOf("fields_fts", p.words)
	if err != nil {
		return err
	}
	slices.Sort(ids)
	mark(hs, ids, func(h *holding) { h.fielded = true })
	return nil
}

// merge adds the notes ids, sorted, to hs, sorted by id, each holding
// words more of the question's words.
func merge(hs []holding, ids []int64, words int) []holding {
	out := make([]holding, 0, max(len(hs), len(ids)))
	i := 0
	for _, id := range ids {
		for i < len(hs) && hs[i].id < id {
			out = append(out, hs[i])
			i++
		}
		h := holding{id: id}
		if i < len(hs) && hs[i].id == id {
			h = hs[i]
			i++
		}
		h.words += words
		out = append(out, h)
	}
	return append(out, hs[i:]...)
}

// mark applies hold to the notes of hs, sorted by id, that ids, sorted,
// names.
func mark(hs []holding, ids []int64, hold func(*holding)) {
	i := 0
	for _, id := range ids {
		for i < len(hs) && hs[i].id < id {
			i++
		}
		if i < len(hs) && hs[i].id == id {
			hold(&hs[i])
		}
	}
}

// A ranking is the notes of a question rankNotes scores.
type ranking struct {
	// fields says to score the notes in fields_fts, by the words in
	// their fields alone.
	fields bool
	// all says that every note to rank holds every word: FTS5 then
	// matches all of them rather than any, and skips the rows without
	// each.
	all bool
	// ids are the notes to rank, nil for every match. first are those of
	// them sure of a place on the page, ranked whatever their score; the
	// best of the others fill the rest of it.
	ids, first []int64
	limit      int // the page
}

// placed splits the notes hs by place, their order but for their score
// (the higher first, below places): those sure of a place on a page of
// limit notes, and those of the next place, whose scores tell which of
// them fill the rest of the page. The others stay off it whatever their
// score.
func placed(hs []holding, limit, places int, place func(holding) int) (sure, next []holding) {
	count := make([]int, places)
	for _, h := range hs {
		count[place(h)]++
	}
	cut, fit := -1, 0 // cut is the next place; -1 when every note fits
	for pl := places - 1; pl >= 0; pl-- {
		if fit += count[pl]; fit > limit {
			cut = pl
			break
		}
	}
	for _, h := range hs {
		switch pl := place(h); {
		case pl > cut:
			sure = append(sure, h)
		case pl == cut:
			next = append(next, h)
		}
	}
	return sure, next
}

// jsonIDs is ids as a JSON array, for json_each.
func jsonIDs(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
