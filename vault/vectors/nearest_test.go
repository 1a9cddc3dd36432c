package vectors

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// fruitVault: note i mentions "apple" i times, so the more, the nearer a
// query of "apple"; zeta.md mentions nothing alike.
func fruitVault(n int) *memSource {
	src := newMemSource()
	for i := 1; i <= n; i++ {
		text := ""
		for range i {
			text += "apple "
		}
		src.put(fmt.Sprintf("fruit/%03d.md", i), "Fruit", t0.Add(time.Duration(i)*time.Minute),
			sec(1, text+"orchard"), sec(3, "pear "+text, "Pears"))
	}
	src.put("zeta.md", "Zeta", t0, sec(1, "quasar nebula galaxy"))
	return src
}

func embedAll(t *testing.T, s *Store, src Source) {
	t.Helper()
	r := start(t, s, src, newWordEmbedder("fake/words/64"), QueueOptions{Batch: 64})
	r.waitIdle(t)
	r.stop(t)
}

func TestNearestFiltersBeforeRanking(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	embedAll(t, s, fruitVault(300))
	ctx := context.Background()
	q := wordVector("apple apple apple apple apple apple apple apple apple apple", 64)

	t.Run("a filter that excludes the nearest gives the best allowed", func(t *testing.T) {
		// Over few notes, whose scores stand apart: over 300 nearly alike
		// the sign bits may order the allowed ones within 1e-4 of each other.
		s := openStore(t, t.TempDir())
		defer s.Close()
		embedAll(t, s, fruitVault(12))
		all, err := s.Nearest(ctx, q, 13, nil)
		if err != nil || len(all) != 13 {
			t.Fatalf("Nearest = %+v, %v", all, err)
		}
		var allow []string
		for i := 1; i <= 12; i++ {
			if p := fmt.Sprintf("fruit/%03d.md", i); p != all[0].Path {
				allow = append(allow, p)
			}
		}
		got, err := s.Nearest(ctx, q, 1, allow)
		if err != nil || len(got) != 1 || got[0] != all[1] {
			t.Fatalf("filtered Nearest = %+v, %v; want %+v", got, err, all[1])
		}
	})
	t.Run("notes left out are skipped before ranking", func(t *testing.T) {
		// The 200 nearest notes left out: asked for 1 out of 100
		// candidates, ranking first and dropping them after finds none.
		all, err := s.Nearest(ctx, q, 201, nil)
		if err != nil || len(all) != 201 {
			t.Fatalf("Nearest = %d matches, %v", len(all), err)
		}
		var except []string
		for _, m := range all[:200] {
			except = append(except, m.Path)
		}
		got, err := s.NearestExcept(ctx, q, 1, except)
		if err != nil || len(got) != 1 || slices.Contains(except, got[0].Path) {
			t.Fatalf("NearestExcept = %+v, %v; want a note not left out", got, err)
		}
	})
	t.Run("a far note alone in the filter is found", func(t *testing.T) {
		// 600 apple chunks are nearer than it: ranking first and filtering
		// after would find nothing.
		got, err := s.Nearest(ctx, q, 1, []string{"zeta.md"})
		if err != nil || len(got) != 1 || got[0].Path != "zeta.md" || got[0].Heading != "" || got[0].Line != 1 {
			t.Errorf("Nearest in {zeta.md} = %+v, %v", got, err)
		}
	})
	t.Run("an empty filter allows nothing", func(t *testing.T) {
		if got, err := s.Nearest(ctx, q, 3, []string{}); err != nil || len(got) != 0 {
			t.Errorf("Nearest in {} = %+v, %v", got, err)
		}
	})
	t.Run("one match a note, by its best chunk", func(t *testing.T) {
		got, err := s.Nearest(ctx, wordVector("pear", 64), 10, nil)
		if err != nil || len(got) != 10 {
			t.Fatalf("Nearest = %+v, %v", got, err)
		}
		seen := map[string]bool{}
		for i, m := range got {
			if seen[m.Path] {
				t.Errorf("%s twice", m.Path)
			}
			seen[m.Path] = true
			if i > 0 && m.Score > got[i-1].Score {
				t.Errorf("not best first: %+v", got)
			}
		}
		if got[0].Heading != "Pears" || got[0].Chunk != 1 || got[0].Line != 3 {
			t.Errorf("nearest to pear is %+v, want a Pears section", got[0])
		}
	})
	t.Run("wrong dimensions", func(t *testing.T) {
		if _, err := s.Nearest(ctx, make([]float32, 12), 1, nil); err == nil {
			t.Error("a query of 12 dimensions against vectors of 64 gave no error")
		}
	})
}

func TestRelatedExcludesTheNote(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	embedAll(t, s, fruitVault(20))
	ctx := context.Background()
	got, err := s.Related(ctx, "fruit/010.md", 3, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("Related = %+v, %v", got, err)
	}
	for _, m := range got {
		if m.Path == "fruit/010.md" || m.Path == "zeta.md" {
			t.Errorf("related to fruit/010.md: %+v", got)
		}
	}
	if got[0].Path != "fruit/009.md" && got[0].Path != "fruit/011.md" {
		t.Errorf("nearest to 10 apples is %s, want 9 or 11 apples", got[0].Path)
	}
	if _, err := s.Related(ctx, "nowhere.md", 3, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Related of an unknown note: %v, want ErrNotFound", err)
	}
}

func TestVectorsAreCloseToTheModels(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	src := fruitVault(3)
	embedAll(t, s, src)
	s.Close()
	s = openStore(t, dir) // what Open loads, not what the queue left in memory
	defer s.Close()
	ctx := context.Background()
	vs, err := s.Vectors(ctx, "fruit/002.md")
	if err != nil || len(vs) != 2 {
		t.Fatalf("Vectors = %d, %v", len(vs), err)
	}
	for i, c := range chunksOf(mustNote(t, src, "fruit/002.md"), 200) {
		if cos := cosine(vs[i], wordVector(c.text, 64)); cos < 0.995 {
			t.Errorf("chunk %d: cosine %f to the model's vector", i, cos)
		}
	}
	ms, err := s.Nearest(ctx, wordVector("quasar", 64), 1, nil)
	if err != nil || len(ms) != 1 || ms[0].Path != "zeta.md" {
		t.Errorf("after reopening, Nearest = %+v, %v", ms, err)
	}
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// TestCodesSetAndRemove checks the in-memory codes against a plain map
// through random replacements and removals.
func TestCodesSetAndRemove(t *testing.T) {
	c := newCodes(64, 0)
	want := map[int64][]int64{} // note → vec ids
	r := rand.New(rand.NewPCG(3, 4))
	vec := int64(0)
	for range 5000 {
		id := int64(r.IntN(50) + 1)
		if r.IntN(4) == 0 {
			c.remove(id)
			delete(want, id)
			continue
		}
		var es []entry
		var ids []int64
		for j := range r.IntN(5) {
			vec++
			es = append(es, entry{ord: int32(j), vec: vec, code: []uint64{uint64(vec)}})
			ids = append(ids, vec)
		}
		c.set(id, fmt.Sprint(id), es)
		if len(ids) == 0 {
			delete(want, id)
		} else {
			want[id] = ids
		}
	}
	got := map[int64][]int64{}
	for i, sl := range c.slot {
		if c.code[i] != uint64(c.vec[i]) {
			t.Fatalf("entry %d: code %d, vec %d", i, c.code[i], c.vec[i])
		}
		got[c.noteID[sl]] = append(got[c.noteID[sl]], c.vec[i])
	}
	for id, ids := range want {
		g := got[id]
		if len(g) != len(ids) {
			t.Fatalf("note %d: entries %v, want %v", id, g, ids)
		}
		for _, v := range ids {
			found := false
			for _, x := range g {
				found = found || x == v
			}
			if !found {
				t.Fatalf("note %d: entries %v, want %v", id, g, ids)
			}
		}
		if sl := c.byPath[fmt.Sprint(id)]; c.noteID[sl] != id || len(c.entries[sl]) != len(ids) {
			t.Fatalf("note %d: slot %d holds note %d with %d entries", id, sl, c.noteID[sl], len(c.entries[sl]))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d notes in memory, want %d", len(got), len(want))
	}
}

// TestCodesLoadOnFirstSearch: a reopened store reads no codes until a
// search needs them, and what the queue writes meanwhile is found with
// what was there before.
func TestCodesLoadOnFirstSearch(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	src := fruitVault(5)
	embedAll(t, s, src)
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	if s.loaded || s.mem != nil {
		t.Fatalf("Open read the codes")
	}
	src.put("zeta.md", "Zeta", t0.Add(time.Hour), sec(1, "quasar nebula galaxy comet"))
	src.put("moon.md", "Moon", t0.Add(time.Hour), sec(1, "quasar nebula galaxy moon"))
	embedAll(t, s, src)
	if s.loaded {
		t.Fatalf("embedding read the codes")
	}
	got, err := s.Nearest(context.Background(), wordVector("quasar nebula galaxy", 64), 2, nil)
	if err != nil || len(got) != 2 || got[0].Path == got[1].Path {
		t.Fatalf("Nearest = %+v, %v; want zeta.md and moon.md", got, err)
	}
	for _, m := range got {
		if m.Path != "zeta.md" && m.Path != "moon.md" {
			t.Errorf("Nearest = %+v; want zeta.md and moon.md", got)
		}
	}
	if got, err := s.Related(context.Background(), "fruit/003.md", 1, nil); err != nil || len(got) != 1 || !strings.HasPrefix(got[0].Path, "fruit/") {
		t.Errorf("Related of a note embedded before the reopen = %+v, %v", got, err)
	}
}

// TestCodesLoadSkipsNotesNotEmbedded: a note chunked but not embedded
// when the codes load takes no slot (Nearest's mask and the free list
// agree), and takes one once embedded.
func TestCodesLoadSkipsNotesNotEmbedded(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	src := fruitVault(3)
	embedAll(t, s, src)
	src.put("comet.md", "Comet", t0.Add(time.Hour), sec(1, "comet meteor aurora"))
	offline := newWordEmbedder("fake/words/64")
	offline.fail = func(context.Context, int, []string) error { return errOffline }
	r := start(t, s, src, offline, QueueOptions{})
	if p := r.waitFor(t, "waiting", func(p Progress) bool { return p.State == Waiting }); p.Left == 0 {
		t.Fatalf("comet.md was not chunked: %+v", p)
	}
	r.stop(t)
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	ctx := context.Background()
	if err := s.codes(ctx); err != nil {
		t.Fatal(err)
	}
	c := s.mem
	if _, ok := c.byPath["comet.md"]; ok || len(c.free) != 1 || c.noteID[c.free[0]] != 0 {
		t.Errorf("comet.md, with no vector, in slot %v; free slots %v", c.byPath["comet.md"], c.free)
	}
	for p, sl := range c.byPath {
		if len(c.entries[sl]) == 0 || c.path[sl] != p {
			t.Errorf("slot %d of %s holds %q with %d entries", sl, p, c.path[sl], len(c.entries[sl]))
		}
	}
	embedAll(t, s, src)
	got, err := s.Nearest(ctx, wordVector("comet meteor aurora", 64), 1, nil)
	if err != nil || len(got) != 1 || got[0].Path != "comet.md" {
		t.Fatalf("Nearest = %+v, %v; want comet.md", got, err)
	}
	if len(c.free) != 0 {
		t.Errorf("free slots %v after comet.md was embedded, want its slot taken", c.free)
	}
}

// TestCodesWrittenDuringTheLoad: the queue's writes that land while the
// first search reads the codes are read after it, once, rather than the
// whole load again (which never finished while the queue kept writing).
func TestCodesWrittenDuringTheLoad(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	src := fruitVault(5)
	embedAll(t, s, src)
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	loads := 0
	s.loadedHook = func() {
		loads++
		if loads > 1 {
			return
		}
		src.put("comet.md", "Comet", t0.Add(time.Hour), sec(1, "comet meteor aurora"))
		src.remove("fruit/002.md")
		embedAll(t, s, src)
	}
	got, err := s.Nearest(context.Background(), wordVector("comet meteor aurora", 64), 1, nil)
	if err != nil || len(got) != 1 || got[0].Path != "comet.md" {
		t.Fatalf("Nearest = %+v, %v; want comet.md, embedded during the load", got, err)
	}
	if loads != 1 {
		t.Errorf("the codes were read %d times, want once", loads)
	}
	got, err = s.Nearest(context.Background(), wordVector(mustNote(t, fruitVault(5), "fruit/002.md").Sections[0].Text, 64), 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if m.Path == "fruit/002.md" {
			t.Errorf("Nearest found fruit/002.md, removed during the load")
		}
	}
}

// TestEmpty: a store says it is empty before anything is embedded, and not
// once the queue has embedded notes after that first answer loaded it.
func TestModelCountsWhatIsEmbedded(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	if _, n, err := s.Model(ctx); err != nil || n != 0 {
		t.Fatalf("Model of a new store = %d vectors, %v; want none", n, err)
	}
	embedAll(t, s, fruitVault(3))
	if _, n, err := s.Model(ctx); err != nil || n == 0 {
		t.Errorf("Model once embedded = %d vectors, %v; want some", n, err)
	}
}
