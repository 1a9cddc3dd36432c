package vectors

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/store"
)

// recount counts what the tally keeps the long way: every chunk joined
// with the vectors of the current model.
func recount(t *testing.T, s *Store) (embedded, left int) {
	t.Helper()
	err := s.db.QueryRow(`SELECT count(v.id), count(*) - count(v.id) FROM chunks c
		LEFT JOIN vectors v ON v.model = (SELECT value FROM state WHERE key = 'model') AND v.hash = c.hash`).Scan(&embedded, &left)
	if err != nil {
		t.Fatal(err)
	}
	return embedded, left
}

// checkTally fails unless the store's counts are a recount's, and returns
// them.
func checkTally(t *testing.T, s *Store, when string) (embedded, left int) {
	t.Helper()
	p, err := s.Progress(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	embedded, left = recount(t, s)
	if p.Embedded != embedded || p.Left != left {
		t.Errorf("%s: the tally says %d embedded, %d left; a recount %d, %d", when, p.Embedded, p.Left, embedded, left)
	}
	return embedded, left
}

func TestTallyMatchesARecount(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	src := garden()
	first := newWordEmbedder("fake/words/64")
	r := start(t, s, src, first, QueueOptions{})
	r.waitIdle(t)
	if e, l := checkTally(t, s, "first run"); e != 5 || l != 0 {
		t.Fatalf("first run: %d embedded, %d left; want 5, 0", e, l)
	}

	// Edits, a note that repeats another's section (one vector, two
	// chunks), a removal: each step's writes and the queue's.
	src.put("plants/basil.md", "Basil", t0.Add(4*time.Hour),
		sec(1, "Basil grows beside tomatoes."), sec(3, "Pinch the flowers weekly.", "Care"))
	src.put("plants/tomato2.md", "Tomato", t0.Add(5*time.Hour),
		sec(1, "Tomatoes love sun and water."), sec(3, "A second crop in pots.", "Pots"))
	src.remove("tools.md")
	r.q.Changed()
	r.waitFor(t, "embedding", func(p Progress) bool { return p.State == Embedding })
	p := r.waitIdle(t)
	if e, l := checkTally(t, s, "after the edits"); e != 6 || l != 0 || p.Embedded != 6 || p.Left != 0 {
		t.Errorf("after the edits: tally %d, %d, queue %+v; want 6 chunks embedded", e, l, p)
	}
	r.stop(t)

	// A model change, stopped half way: the old model's vectors stay
	// until the new one has every chunk.
	second := newWordEmbedder("fake/other/64")
	second.fail = func(ctx context.Context, call int, _ []string) error {
		if call == 2 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	r = start(t, s, src, second, QueueOptions{Batch: 2})
	r.waitFor(t, "a batch of the new model", func(p Progress) bool { return p.Reembedding && p.Embedded > 0 })
	if e, l := checkTally(t, s, "half way to the new model"); e == 0 || l == 0 {
		t.Errorf("half way to the new model: %d embedded, %d left; want some of each", e, l)
	}
	r.stop(t)

	// Back to the first model, whose vectors are all still there: counted
	// at the change, not by adding vectors.
	if _, err := s.useModel(ctx, "fake/words/64"); err != nil {
		t.Fatal(err)
	}
	if e, l := checkTally(t, s, "back to the first model"); e != 6 || l != 0 {
		t.Errorf("back to the first model: %d embedded, %d left; want 6, 0", e, l)
	}
	r = start(t, s, src, first, QueueOptions{})
	r.waitIdle(t)
	if e, l := checkTally(t, s, "back to the first model, embedded"); e != 6 || l != 0 {
		t.Errorf("back to the first model: %d embedded, %d left; want 6, 0", e, l)
	}
	var others int
	if err := s.db.QueryRow(`SELECT count(*) FROM vectors v JOIN models m ON m.id = v.model WHERE m.fingerprint = 'fake/other/64'`).Scan(&others); err != nil || others != 0 {
		t.Errorf("%d vectors of the other model after the sweep (%v), want 0", others, err)
	}
	r.stop(t)
	src.remove("plants/tomato2.md")
	src.remove("plants/basil.md")
	r = start(t, s, src, first, QueueOptions{})
	r.waitIdle(t)
	if e, l := checkTally(t, s, "after removals"); e != 2 || l != 0 {
		t.Errorf("after removals: %d embedded, %d left; want 2, 0", e, l)
	}
}

// TestTallyOfAnOlderDatabase: a vectors database written before the tally
// (schema step 1) gets it counted when opened, and kept from then on.
func TestTallyOfAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	src := garden()
	emb := newWordEmbedder("fake/words/64")
	emb.fail = func(ctx context.Context, call int, _ []string) error {
		if call >= 2 {
			return errOffline
		}
		return nil
	}
	r := start(t, s, src, emb, QueueOptions{Batch: 2, Retry: time.Hour})
	r.waitFor(t, "waiting", func(p Progress) bool { return p.State == Waiting })
	r.stop(t)
	// Take the database back to step 1: the tables of an older margin,
	// with what its queue wrote.
	for _, q := range []string{
		`DROP TRIGGER tally_chunk_added`, `DROP TRIGGER tally_chunk_deleted`, `DROP TRIGGER tally_vector_added`,
		`DROP TRIGGER tally_vector_deleted`, `DROP TRIGGER tally_model`, `DROP TABLE tally`,
		`DELETE FROM schema_migrations WHERE component = 'vectors' AND step > 1`,
	} {
		if _, err := s.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := store.Open(ctx, filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var steps int
	if err := db.QueryRow(`SELECT max(step) FROM schema_migrations WHERE component = 'vectors'`).Scan(&steps); err != nil || steps != 1 {
		t.Fatalf("older database at step %d (%v), want 1", steps, err)
	}
	db.Close()

	s = openStore(t, dir)
	defer s.Close()
	if e, l := checkTally(t, s, "opened"); e != 2 || l != 3 {
		t.Errorf("older database opened: %d embedded, %d left; want 2, 3", e, l)
	}
	emb.fail = nil
	r = start(t, s, src, emb, QueueOptions{})
	r.waitIdle(t)
	if e, l := checkTally(t, s, "embedded"); e != 5 || l != 0 {
		t.Errorf("older database embedded: %d embedded, %d left; want 5, 0", e, l)
	}
}
