package vectors

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// codes holds, in memory, the binary code of every chunk that has a vector
// of the current model, with the note it belongs to: all Nearest scans.
// At 384 dimensions a chunk costs 48 bytes of code and 16 of bookkeeping,
// so 500,000 chunks take some 32 MB.
//
// Entries sit in flat arrays in no order; removing a note's entries moves
// the last ones into their places, so the arrays never hold holes.
type codes struct {
	words int      // code words per entry
	code  []uint64 // entry i's code is code[i*words : (i+1)*words]
	slot  []int32  // entry's note slot
	ord   []int32  // entry's chunk position in its note
	vec   []int64  // entry's vector id, to read its int8 components back

	// Note slots are dense, so a filter is a bitmap over them.
	noteID  []int64   // by slot; 0 for a free slot
	path    []string  // by slot
	entries [][]int32 // by slot: its entries' positions
	free    []int32
	bySlot  map[int64]int32  // note id → slot
	byPath  map[string]int32 // path → slot
}

// entry is one chunk's code as it is added.
type entry struct {
	ord  int32
	vec  int64
	code []uint64
}

func newCodes(dims, capacity int) *codes {
	w := wordsOf(dims)
	return &codes{
		words:  w,
		code:   make([]uint64, 0, capacity*w),
		slot:   make([]int32, 0, capacity),
		ord:    make([]int32, 0, capacity),
		vec:    make([]int64, 0, capacity),
		bySlot: make(map[int64]int32),
		byPath: make(map[string]int32),
	}
}

func (c *codes) len() int { return len(c.slot) }

// set replaces the entries of note id at path with es.
func (c *codes) set(id int64, path string, es []entry) {
	c.remove(id)
	if len(es) == 0 {
		return
	}
	var sl int32
	if n := len(c.free); n > 0 {
		sl, c.free = c.free[n-1], c.free[:n-1]
	} else {
		sl = int32(len(c.noteID))
		c.noteID, c.path, c.entries = append(c.noteID, 0), append(c.path, ""), append(c.entries, nil)
	}
	c.noteID[sl], c.path[sl] = id, path
	c.bySlot[id], c.byPath[path] = sl, sl
	pos := make([]int32, 0, len(es))
	for _, e := range es {
		pos = append(pos, int32(len(c.slot)))
		c.code = append(c.code, e.code[:c.words]...)
		c.slot = append(c.slot, sl)
		c.ord = append(c.ord, e.ord)
		c.vec = append(c.vec, e.vec)
	}
	c.entries[sl] = pos
}

// remove drops the entries of note id, if any.
func (c *codes) remove(id int64) {
	sl, ok := c.bySlot[id]
	if !ok {
		return
	}
	// Highest positions first: then the last entry, which fills the hole,
	// is never one of this note's still to remove.
	pos := slices.Clone(c.entries[sl])
	slices.Sort(pos)
	for i := len(pos) - 1; i >= 0; i-- {
		c.removeAt(pos[i])
	}
	delete(c.bySlot, id)
	delete(c.byPath, c.path[sl])
	c.noteID[sl], c.path[sl], c.entries[sl] = 0, "", nil
	c.free = append(c.free, sl)
}

// removeAt removes entry p by moving the last entry into its place.
func (c *codes) removeAt(p int32) {
	last := int32(len(c.slot) - 1)
	if p != last {
		w := c.words
		copy(c.code[int(p)*w:int(p+1)*w], c.code[int(last)*w:int(last+1)*w])
		c.slot[p], c.ord[p], c.vec[p] = c.slot[last], c.ord[last], c.vec[last]
		moved := c.entries[c.slot[p]]
		for i, q := range moved {
			if q == last {
				moved[i] = p
				break
			}
		}
	}
	c.code = c.code[:int(last)*c.words]
	c.slot, c.ord, c.vec = c.slot[:last], c.ord[:last], c.vec[:last]
}

// loadCodes reads the codes of model m's vectors for every chunk. It reads
// the vectors table in its own order (unordered, rather than sorted by
// note: SQLite would sort 500,000 rows of codes in memory, 100 MB at the
// peak) and the chunks of each through chunks_hash, then groups entries
// by note.
func loadCodes(ctx context.Context, q querier, m model) (*codes, error) {
	var n, notes int
	if err := q.QueryRowContext(ctx, `SELECT count(*), (SELECT count(*) FROM notes) FROM chunks c
		JOIN vectors v ON v.model = ? AND v.hash = c.hash`, m.id).Scan(&n, &notes); err != nil {
		return nil, err
	}
	// Sized once: growing by doubling would hold two copies at the peak.
	c := newCodes(m.dims, n)
	c.code = c.code[:n*c.words]
	c.noteID, c.path = make([]int64, 0, notes), make([]string, 0, notes)
	c.bySlot, c.byPath = make(map[int64]int32, notes), make(map[string]int32, notes)
	// Every note takes a slot, given up below if it has no entries: a map
	// of paths by note id to fill the slots from was 8 MB more at 100k
	// notes.
	err := collect(ctx, q, `SELECT id, path FROM notes`, nil, func(r *sql.Rows) error {
		var id int64
		var p string
		if err := r.Scan(&id, &p); err != nil {
			return err
		}
		sl := int32(len(c.noteID))
		c.bySlot[id], c.byPath[p] = sl, sl
		c.noteID, c.path = append(c.noteID, id), append(c.path, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	perSlot := make([]int32, len(c.noteID))
	i := 0
	// +v.model: no index on it, so that the vectors table is read in
	// order rather than by hash, a page at random for every row.
	err = collect(ctx, q, `SELECT c.note_id, c.ord, v.id, v.bits FROM vectors v
		CROSS JOIN chunks c ON c.hash = v.hash WHERE +v.model = ?`, []any{m.id}, func(r *sql.Rows) error {
		var id, vec int64
		var ord int32
		var bits sql.RawBytes
		if err := r.Scan(&id, &ord, &vec, &bits); err != nil {
			return err
		}
		sl, ok := c.bySlot[id]
		if i == n || !ok { // a row or note added since the counts: the next reload has it
			return nil
		}
		perSlot[sl]++
		readCode(c.code[i*c.words:(i+1)*c.words], bits)
		c.slot, c.ord, c.vec = append(c.slot, sl), append(c.ord, ord), append(c.vec, vec)
		i++
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.code = c.code[:i*c.words]
	// Each slot's positions, cut from one array.
	all := make([]int32, i)
	c.entries = make([][]int32, len(c.noteID))
	off := 0
	for sl, k := range perSlot {
		if k == 0 {
			delete(c.bySlot, c.noteID[sl])
			delete(c.byPath, c.path[sl])
			c.noteID[sl], c.path[sl] = 0, ""
			c.free = append(c.free, int32(sl))
			continue
		}
		c.entries[sl] = all[off : off : off+int(k)]
		off += int(k)
	}
	for p, sl := range c.slot {
		c.entries[sl] = append(c.entries[sl], int32(p))
	}
	return c, nil
}

// loadNote reads the entries of note id for model m.
func loadNote(ctx context.Context, q querier, m model, id int64) ([]entry, error) {
	var es []entry
	err := collect(ctx, q, `SELECT c.ord, v.id, v.bits FROM chunks c
		JOIN vectors v ON v.model = ? AND v.hash = c.hash
		WHERE c.note_id = ? ORDER BY c.ord`, []any{m.id, id}, func(r *sql.Rows) error {
		var e entry
		var bits sql.RawBytes
		if err := r.Scan(&e.ord, &e.vec, &bits); err != nil {
			return err
		}
		e.code = make([]uint64, wordsOf(m.dims))
		readCode(e.code, bits)
		es = append(es, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the vectors of note %d: %w", id, err)
	}
	return es, nil
}
