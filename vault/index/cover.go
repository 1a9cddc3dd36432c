package index

import (
	"cmp"
	"maps"
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
// then by bm25; it returns the page's, at most p.limit, with the number of
// notes that hold any word. notesOf lists the notes matching an expression
// (with the query's filters); rankBy ranks the notes a ranking names.
//
// Only the notes of the best tiers are scored: a common word of a
// question can be in most notes, which bm25 must each read, while the
// notes that hold the most words fill the page. The notes holding each
// word are listed first, which costs a tenth of scoring them; then only
// the notes holding at least as many words as the page's last note are
// ranked. Of those, the notes whose tier alone gives them a place are
// ranked whatever their score, and SQLite keeps the best of the tier that
// fills the rest of the page (a bounded sort): "why did I sleep badly"
// has every note holding "sleep" in that tier, 9,360 of the generated
// vault's 10,000, of which 20 cross to Go rather than all.
func (p *queryPlan) rankQuestion(named map[int64]bool, notesOf func(expr string) ([]int64, error),
	rankBy func(ranking) ([]scored, error)) ([]scored, int, error) {
	n := len(p.cover)
	held, phrased, lowest, err := p.holdings(notesOf)
	if err != nil || len(held) == 0 {
		return nil, 0, err
	}
	notes := make([]int, n+1) // by words held
	for _, h := range held {
		notes[h]++
	}
	// The fewest words a ranked note holds: enough notes to fill the
	// page, and one more to tell a cut list.
	k, ranked := n, notes[n]
	for k > lowest && ranked <= p.limit {
		k--
		ranked += notes[k]
	}
	var ids []int64
	all := k == n // every ranked note holds every word
	for id, h := range held {
		if h >= k || named[id] {
			ids = append(ids, id)
			all = all && h == n
		}
	}
	// A note's order but for its score, higher first: the named notes,
	// then those that hold the phrase, then by how many words they hold.
	place := func(id int64) int {
		pl := held[id]
		if phrased[id] {
			pl += n + 1
		}
		if named[id] {
			pl += 2*n + 2
		}
		return pl
	}
	sure, next := placed(ids, p.limit, place)
	r := ranking{all: all, first: sure, limit: p.limit}
	if len(sure)+len(next) < len(held) || p.inGlob != nil {
		// Else every match: no list for SQLite to look each one up in.
		r.ids = slices.Concat(sure, next)
	}
	cands, err := rankBy(r)
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(cands, func(a, b scored) int {
		return cmp.Or(cmp.Compare(place(b.id), place(a.id)), cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id))
	})
	return cands[:min(len(cands), p.limit)], len(held), nil
}

// holdings lists the notes that hold the question's words: how many of
// them each holds, which hold its phrase, and the fewest a matching note
// holds.
func (p *queryPlan) holdings(notesOf func(expr string) ([]int64, error)) (held map[int64]int, phrased map[int64]bool, lowest int, err error) {
	held = map[int64]int{}
	lowest = 1
	if len(p.required) > 0 {
		// Every note that holds the quoted phrases matches, even one
		// without any other word.
		lowest = 0
		ids, err := notesOf(p.required[0])
		if err != nil {
			return nil, nil, 0, err
		}
		for _, id := range ids {
			held[id] = 0
		}
	}
	for _, w := range p.cover {
		ids, err := notesOf(w)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, id := range ids {
			held[id]++
		}
	}
	phrased = map[int64]bool{}
	if p.phrase != "" {
		ids, err := notesOf(p.phrase)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, id := range ids {
			phrased[id] = true
		}
	}
	return held, phrased, lowest, nil
}

// A ranking is the notes of a question rankNotes scores.
type ranking struct {
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

// placed splits the notes ids by place, their order but for their score
// (the higher first): those sure of a place on a page of limit notes, and
// those of the next place, whose scores tell which of them fill the rest
// of the page. The others stay off it whatever their score.
func placed(ids []int64, limit int, place func(int64) int) (sure, next []int64) {
	places := make([]int, len(ids))
	count := map[int]int{}
	for i, id := range ids {
		places[i] = place(id)
		count[places[i]]++
	}
	cut, fit := -1, 0 // cut is the next place; -1 when every note fits
	for _, pl := range slices.Backward(slices.Sorted(maps.Keys(count))) {
		if fit += count[pl]; fit > limit {
			cut = pl
			break
		}
	}
	for i, id := range ids {
		switch {
		case places[i] > cut:
			sure = append(sure, id)
		case places[i] == cut:
			next = append(next, id)
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
