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
// then by bm25; it returns them with the number of notes that hold any
// word. notesOf lists the notes matching an expression (with the query's
// filters), rankBy ranks the notes ids by bm25 (named notes first),
// matching all of the words rather than any when all says they hold them.
//
// Only the notes of the best tiers are scored: a common word of a
// question can be in most notes, which bm25 must each read, while the
// notes that hold the most words fill the page. The notes holding each
// word are listed first, which costs a tenth of scoring them; then only
// the notes holding at least as many words as the page's last note are
// ranked.
func (p *queryPlan) rankQuestion(named map[int64]bool, notesOf func(expr string) ([]int64, error),
	rankBy func(all bool, ids []int64) ([]scored, error)) ([]scored, int, error) {
	n := len(p.cover)
	held := map[int64]int{} // words held, by note
	lowest := 1             // the fewest a matching note holds
	if len(p.required) > 0 {
		// Every note that holds the quoted phrases matches, even one
		// without any other word.
		lowest = 0
		ids, err := notesOf(p.required[0])
		if err != nil {
			return nil, 0, err
		}
		for _, id := range ids {
			held[id] = 0
		}
	}
	for _, w := range p.cover {
		ids, err := notesOf(w)
		if err != nil {
			return nil, 0, err
		}
		for _, id := range ids {
			held[id]++
		}
	}
	phrased := map[int64]bool{}
	if p.phrase != "" {
		ids, err := notesOf(p.phrase)
		if err != nil {
			return nil, 0, err
		}
		for _, id := range ids {
			phrased[id] = true
		}
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
	cands, err := rankBy(all, ids)
	if err != nil {
		return nil, 0, err
	}
	for i := range cands {
		c := &cands[i]
		c.tier = held[c.id]
		if phrased[c.id] {
			c.tier += n + 1
		}
	}
	slices.SortFunc(cands, func(a, b scored) int {
		if named[a.id] != named[b.id] {
			if named[a.id] {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.tier, a.tier), cmp.Compare(a.score, b.score), cmp.Compare(a.id, b.id))
	})
	return cands, len(held), nil
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
