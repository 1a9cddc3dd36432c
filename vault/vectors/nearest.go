package vectors

import (
	"cmp"
	"container/heap"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// candidatesPer is how many chunks, per note asked for, the scan of binary
// codes hands to rescoring, and minCandidates the fewest: sign bits rank
// the true nearest chunks among their first hundred or so (see
// BenchmarkNearest's recall), and rescoring a hundred int8 vectors read
// from the database costs about a millisecond.
const (
	candidatesPer = 10
	minCandidates = 100
)

// Nearest returns the k notes whose chunks are nearest to q (by cosine
// similarity), best first, each by its nearest chunk. allow, unless nil,
// is the paths of the notes it may return: notes outside it are skipped
// before ranking, so k allowed notes come back if k exist. q must have the
// current model's dimensions; ErrNoVectors when nothing is embedded.
func (s *Store) Nearest(ctx context.Context, q []float32, k int, allow []string) ([]Match, error) {
	ms, err := s.nearest(ctx, [][]float32{q}, k, allow, nil)
	if err != nil {
		return nil, fmt.Errorf("finding nearest notes: %w", err)
	}
	return ms, nil
}

// NearestExcept is Nearest over every note but those of except, skipped
// before ranking: for a search of the whole vault less a few notes
// (margin's outputs). Asking Nearest for k+len(except) and dropping them
// after made it rescore ten candidates a note left out: 17,000 at 100k
// notes with 1,700 agents' reports.
func (s *Store) NearestExcept(ctx context.Context, q []float32, k int, except []string) ([]Match, error) {
	ms, err := s.nearest(ctx, [][]float32{q}, k, nil, except)
	if err != nil {
		return nil, fmt.Errorf("finding nearest notes: %w", err)
	}
	return ms, nil
}

// Related returns the k notes nearest to the note at path, itself and
// the notes of except left out before ranking: for each other note, its
// best similarity to any of path's chunks.
func (s *Store) Related(ctx context.Context, path string, k int, except []string) ([]Match, error) {
	own, err := s.Vectors(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	ms, err := s.nearest(ctx, own, k, nil, append(except, path))
	if err != nil {
		return nil, fmt.Errorf("finding notes related to %s: %w", path, err)
	}
	return ms, nil
}

// Vectors returns the vectors of the note at path, one per embedded chunk
// in the note's order (dequantized: close to, not equal to, what the model
// gave). ErrNotFound when it has none.
func (s *Store) Vectors(ctx context.Context, path string) ([][]float32, error) {
	s.mu.RLock()
	m := s.model
	s.mu.RUnlock()
	var out [][]float32
	err := collect(ctx, s.db, `SELECT v.scale, v.q8 FROM notes n
		JOIN chunks c ON c.note_id = n.id
		JOIN vectors v ON v.model = ? AND v.hash = c.hash
		WHERE n.path = ? ORDER BY c.ord`, []any{m.id, path}, func(r *sql.Rows) error {
		var scale float32
		var q8 sql.RawBytes
		if err := r.Scan(&scale, &q8); err != nil {
			return err
		}
		out = append(out, dequantize(q8, scale))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the vectors of %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	return out, nil
}

// candidate is a chunk the scan of codes found near a query.
type candidate struct {
	dist  int // hamming distance of its code to the query's
	query int // which query
	slot  int32
	ord   int32
	vec   int64
}

// nearest finds, for each note of allow (nil: all) but except's, its best
// similarity to any of qs, and returns the k best notes. The scan of codes holds the read
// lock; rescoring and the matches' details read the database after it.
func (s *Store) nearest(ctx context.Context, qs [][]float32, k int, allow, except []string) ([]Match, error) {
	if k <= 0 {
		return nil, nil
	}
	if err := s.codes(ctx); err != nil {
		return nil, err
	}
	units := make([][]float32, len(qs))
	s.mu.RLock()
	m, c := s.model, s.mem
	if c == nil || c.len() == 0 {
		s.mu.RUnlock()
		return nil, ErrNoVectors
	}
	for i, q := range qs {
		if len(q) != m.dims {
			s.mu.RUnlock()
			return nil, fmt.Errorf("query has %d dimensions, the vectors of %s have %d", len(q), m.fingerprint, m.dims)
		}
		units[i] = normalize(q)
	}
	mask := c.mask(allow, except)
	want := max(candidatesPer*k, minCandidates)
	var cands []candidate
	for i, u := range units {
		cands = append(cands, c.scan(signBits(u), i, mask, want)...)
	}
	// Copy what the matches need of the note slots before letting go.
	slotNote := make(map[int32]int64)
	slotPath := make(map[int32]string)
	for _, cd := range cands {
		slotNote[cd.slot], slotPath[cd.slot] = c.noteID[cd.slot], c.path[cd.slot]
	}
	s.mu.RUnlock()

	scores, err := s.rescore(ctx, units, cands)
	if err != nil {
		return nil, err
	}
	type best struct {
		score float32
		cand  candidate
	}
	byNote := make(map[int32]best)
	for i, cd := range cands {
		sc, ok := scores[i]
		if !ok { // the vector went (a model change, a collection) since the scan
			continue
		}
		if b, seen := byNote[cd.slot]; !seen || sc > b.score || sc == b.score && cd.ord < b.cand.ord {
			byNote[cd.slot] = best{sc, cd}
		}
	}
	type found struct {
		Match
		note int64
	}
	fs := make([]found, 0, len(byNote))
	for sl, b := range byNote {
		fs = append(fs, found{Match{Path: slotPath[sl], Chunk: int(b.cand.ord), Score: b.score}, slotNote[sl]})
	}
	slices.SortFunc(fs, func(a, b found) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	out := make([]Match, 0, min(k, len(fs)))
	for _, f := range fs[:min(k, len(fs))] {
		err := s.db.QueryRowContext(ctx, `SELECT line, heading FROM chunks WHERE note_id = ? AND ord = ?`, f.note, f.Chunk).
			Scan(&f.Line, &f.Heading)
		if err != nil && !errors.Is(err, sql.ErrNoRows) { // a note rewritten since the scan keeps its place
			return nil, err
		}
		out = append(out, f.Match)
	}
	return out, nil
}

// mask is the bitmap of the note slots a query may return: those of allow
// (every slot when nil) but exclude's. nil when it allows every slot.
func (c *codes) mask(allow, except []string) []uint64 {
	if allow == nil && len(except) == 0 {
		return nil
	}
	mask := make([]uint64, (len(c.noteID)+63)/64)
	if allow == nil {
		for i := range mask {
			mask[i] = ^uint64(0)
		}
	} else {
		for _, p := range allow {
			if sl, ok := c.byPath[p]; ok {
				mask[sl/64] |= 1 << (sl % 64)
			}
		}
	}
	for _, p := range except {
		if sl, ok := c.byPath[p]; ok {
			mask[sl/64] &^= 1 << (sl % 64)
		}
	}
	return mask
}

// scan returns the want entries whose codes are nearest to code, among
// the slots mask allows (all when nil): the filter applies before the
// ranking, so a narrow filter still gets its nearest chunks.
func (c *codes) scan(code []uint64, query int, mask []uint64, want int) []candidate {
	h := make(farthestFirst, 0, want)
	w := c.words
	for i, sl := range c.slot {
		if mask != nil && mask[sl/64]&(1<<(sl%64)) == 0 {
			continue
		}
		// hamming, inlined: this loop is the query's cost.
		e, d := c.code[i*w:i*w+w], 0
		for j, x := range code {
			d += bits.OnesCount64(x ^ e[j])
		}
		if len(h) == want {
			if d >= h[0].dist {
				continue
			}
			h[0] = candidate{dist: d, query: query, slot: sl, ord: c.ord[i], vec: c.vec[i]}
			heap.Fix(&h, 0)
			continue
		}
		heap.Push(&h, candidate{dist: d, query: query, slot: sl, ord: c.ord[i], vec: c.vec[i]})
	}
	return h
}

// farthestFirst is a max-heap of candidates by distance: its top is the
// one a nearer chunk replaces.
type farthestFirst []candidate

func (h farthestFirst) Len() int           { return len(h) }
func (h farthestFirst) Less(i, j int) bool { return h[i].dist > h[j].dist }
func (h farthestFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *farthestFirst) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *farthestFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// rescore reads the int8 vectors of cands and returns each candidate's
// cosine similarity to its query, by position in cands.
func (s *Store) rescore(ctx context.Context, units [][]float32, cands []candidate) (map[int]float32, error) {
	ids := make([]int64, 0, len(cands))
	byVec := make(map[int64][]int, len(cands)) // a vector may be several queries' candidate
	for i, cd := range cands {
		if _, ok := byVec[cd.vec]; !ok {
			ids = append(ids, cd.vec)
		}
		byVec[cd.vec] = append(byVec[cd.vec], i)
	}
	js, _ := json.Marshal(ids) // []int64 always encodes
	out := make(map[int]float32, len(cands))
	// Each q8 is scored as it is read, not copied out: at 768 dimensions
	// the copies were most of a search's garbage, and margin serve's peak
	// resident set grows with garbage.
	err := collect(ctx, s.db, `SELECT id, q8 FROM vectors WHERE id IN (SELECT value FROM json_each(?))`, []any{string(js)}, func(r *sql.Rows) error {
		var id int64
		var q8 sql.RawBytes
		if err := r.Scan(&id, &q8); err != nil {
			return err
		}
		for _, i := range byVec[id] {
			if u := units[cands[i].query]; len(q8) == len(u) {
				out[i] = cosineInt8(u, q8)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rescoring: %w", err)
	}
	return out, nil
}
