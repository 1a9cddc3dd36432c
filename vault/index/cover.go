package index

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
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
func (p *queryPlan) rankQuestion(named map[int64]bool, read questionReads) ([]scored, int, error) {
	n := len(p.cover)
	hs, words, lowest, err := p.holdings(read)
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
	if err := p.markFielded(hs, k, named, read.notesOf); err != nil {
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
	weigh := func() (weights, error) { return p.weigh(hs, words, read.rows) }
	cands, err := p.score(hs, sure, next, all, weigh, read.rankBy)
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
// every one of them holds every word; weigh tells which words bm25
// weighs. The notes that rank by their fields are scored in fields_fts,
// as a single word's are, where a common word has a fraction of the rows
// to read; the others in notes_fts. A place holds only one kind, so no
// two scores of different tables are compared.
func (p *queryPlan) score(hs, sure, next []holding, all bool, weigh func() (weights, error), rankBy func(ranking) ([]scored, error)) ([]scored, error) {
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
			ws, err := weigh()
			if err != nil {
				return nil, err
			}
			if ws.holdEach(hs, ids) {
				// Their scores without the words of no weight, which
				// FTS5 would read every row of, twice, to add 1e-4 at
				// most to each.
				r.words = slices.DeleteFunc(slices.Clone(p.cover), func(w string) bool { return slices.Contains(ws.none, w) })
			}
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
//
// Four fields at most: Go keeps a struct of more in memory rather than in
// registers, which made placing 94,000 holdings take 2.5 times as long.
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

// questionReads is what rankQuestion reads of the search tables, with the
// query's filters.
type questionReads struct {
	// notesOf lists the notes matching an expression in a search table,
	// sorted by id.
	notesOf func(table, expr string) ([]int64, error)
	// rankBy ranks the notes a ranking names.
	rankBy func(ranking) ([]scored, error)
	// rows counts notes_fts's rows holding a phrase, whatever the
	// filters, as bm25 counts them; every row for "".
	rows func(phrase string) (int, error)
}

// holdings lists the notes that hold the question's words, by id, the
// notes holding each word, and the fewest words a matching note holds.
// The lists of the notes holding each word are merged rather than
// counted in a map: a common word's list can be most of the vault, and a
// map of it cost a question more than the search in SQLite.
func (p *queryPlan) holdings(read questionReads) (hs []holding, words [][]int64, lowest int, err error) {
	var required []int64
	lowest = 1
	if len(p.required) > 0 {
		// Every note that holds the quoted phrases matches, even one
		// without any other word.
		lowest = 0
		if required, err = read.notesOf("notes_fts", p.required[0]); err != nil {
			return nil, nil, 0, err
		}
	}
	words = make([][]int64, len(p.cover))
	for i, w := range p.cover {
		if words[i], err = read.notesOf("notes_fts", w); err != nil {
			return nil, nil, 0, err
		}
	}
	hs = merge(required, words)
	if p.phrase != "" {
		ids, err := read.notesOf("notes_fts", p.phrase)
		if err != nil {
			return nil, nil, 0, err
		}
		mark(hs, ids, func(h *holding) { h.phrased = true })
	}
	return hs, words, lowest, nil
}

// weightyIDF is the least idf of a word of weight, whose share of a
// note's score the words of idf 1e-6 cannot tip: a word in fewer than
// 45% of the rows.
const weightyIDF = 0.2

// weights are the question's words that bm25 gives no weight, and which
// notes hold a word of weight.
type weights struct {
	none []string
	held []bool // by the index of a note's holding
}

// holdEach says whether there are words of no weight and each note of
// ids, all of hs, holds a word of weight.
func (ws weights) holdEach(hs []holding, ids []int64) bool {
	if len(ws.none) == 0 {
		return false
	}
	for _, id := range ids {
		i, _ := slices.BinarySearchFunc(hs, id, func(h holding, id int64) int { return cmp.Compare(h.id, id) })
		if !ws.held[i] {
			return false
		}
	}
	return true
}

// weigh finds the question's words that bm25 gives no weight, and, when
// there are such words, which notes of hs hold a word of weight; words
// are the notes holding each word. FTS5's bm25 gives a word in half the
// search rows or more an idf of 1e-6, so that a note's score changes by
// 1e-4 at most without them, where a word of weight adds hundreds of
// times that. A word of several phrases (a word and its synonyms) is
// neither: each of its phrases has its own weight.
func (p *queryPlan) weigh(hs []holding, words [][]int64, rows func(string) (int, error)) (weights, error) {
	// A note has a row at least, so no word of a list shorter than half
	// of hs is in half the rows: the rows are counted only when one may.
	if !slices.ContainsFunc(words, func(ids []int64) bool { return 2*len(ids) >= len(hs) }) {
		return weights{}, nil
	}
	all, err := rows("")
	if err != nil {
		return weights{}, err
	}
	var ws weights
	var kept []int
	for i, w := range p.cover {
		switch {
		case !onePhrase(w):
		case 2*len(words[i]) >= all: // each of its notes has a row holding it, or more
			ws.none = append(ws.none, w)
		default:
			kept = append(kept, i)
		}
	}
	if len(ws.none) == 0 {
		return weights{}, nil
	}
	ws.held = make([]bool, len(hs))
	for _, i := range kept {
		// The filters may have left out some of the word's rows, which
		// bm25 counts: they are counted here.
		n, err := rows(p.cover[i])
		if err != nil {
			return weights{}, err
		}
		if math.Log((float64(all-n)+0.5)/(float64(n)+0.5)) < weightyIDF {
			continue
		}
		at := 0
		for _, id := range words[i] {
			for hs[at].id < id { // every id of words is in hs
				at++
			}
			ws.held[at] = true
		}
	}
	return ws, nil
}

// onePhrase says whether an expression of a word is one FTS5 phrase,
// which bm25 weighs as one.
func onePhrase(expr string) bool {
	expr = strings.TrimSuffix(expr, "*")
	return len(expr) >= 2 && expr[0] == '"' && strings.IndexByte(expr[1:], '"') == len(expr)-2
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
	mark(hs, ids, func(h *holding) { h.fielded = true })
	return nil
}

// merge makes the holdings, sorted by id, of the notes of the sorted
// lists: those holding the quoted phrases, and those holding each word.
// One pass over all the lists: merged two by two, "how heavy was the
// bench press last week" copied 89,000 holdings four times.
func merge(required []int64, words [][]int64) []holding {
	lists := append([][]int64{required}, words...)
	at := make([]int, len(lists))
	most := 0
	for _, l := range lists {
		most = max(most, len(l))
	}
	hs := make([]holding, 0, most)
	for {
		next, found := int64(0), false
		for i, l := range lists {
			if at[i] < len(l) && (!found || l[at[i]] < next) {
				next, found = l[at[i]], true
			}
		}
		if !found {
			return hs
		}
		h := holding{id: next}
		for i, l := range lists {
			if at[i] < len(l) && l[at[i]] == next {
				at[i]++
				if i > 0 {
					h.words++
				}
			}
		}
		hs = append(hs, h)
	}
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
	// words are the question's words to score by, nil for all of them:
	// bm25 weighs no other.
	words []string
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
