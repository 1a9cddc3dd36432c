package vectors

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// garden is a small vault: three notes, five chunks.
func garden() *memSource {
	src := newMemSource()
	src.put("plants/tomato.md", "Tomato", t0.Add(3*time.Hour),
		sec(1, "Tomatoes love sun and water."), sec(3, "Stake them early.", "Care"))
	src.put("plants/basil.md", "Basil", t0.Add(2*time.Hour),
		sec(1, "Basil grows beside tomatoes."), sec(3, "Pinch the flowers.", "Care"))
	src.put("tools.md", "Tools", t0.Add(time.Hour), sec(1, "A spade and a rake."))
	return src
}

func TestQueueEmbedsOnlyWhatChanged(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	src, emb := garden(), newWordEmbedder("fake/words/64")
	r := start(t, s, src, emb, QueueOptions{})
	p := r.waitIdle(t)
	if p.Embedded != 5 || p.Left != 0 || len(emb.embedded()) != 5 {
		t.Fatalf("after the first run: %+v, %d texts embedded; want 5 embedded, 0 left", p, len(emb.embedded()))
	}

	for _, step := range []struct {
		name   string
		change func()
		want   []string // texts embedded by the change
		chunks int
	}{
		{"one section edited", func() {
			src.put("plants/basil.md", "Basil", t0.Add(4*time.Hour),
				sec(1, "Basil grows beside tomatoes."), sec(3, "Pinch the flowers weekly.", "Care"))
		}, []string{"Basil > Care\n\nPinch the flowers weekly."}, 5},
		{"note moved", func() {
			n, _ := src.Note(context.Background(), "tools.md")
			src.remove("tools.md")
			src.put("garden/tools.md", n.Title, t0.Add(5*time.Hour), n.Sections...)
		}, nil, 5},
		{"note touched, same text", func() {
			src.put("plants/tomato.md", "Tomato", t0.Add(6*time.Hour),
				sec(1, "Tomatoes love sun and water."), sec(3, "Stake them early.", "Care"))
		}, nil, 5},
		{"note removed", func() { src.remove("garden/tools.md") }, nil, 4},
	} {
		t.Run(step.name, func(t *testing.T) {
			before := len(emb.embedded())
			step.change()
			r.q.Changed()
			r.waitFor(t, "embedding", func(p Progress) bool { return p.State == Embedding })
			p := r.waitIdle(t)
			got := emb.embedded()[before:]
			if strings.Join(got, "|") != strings.Join(step.want, "|") {
				t.Errorf("embedded %q, want %q", got, step.want)
			}
			if p.Embedded != step.chunks || p.Left != 0 {
				t.Errorf("progress %+v, want %d embedded and none left", p, step.chunks)
			}
		})
	}
	// The moved note is found under its new path, the removed one not at all.
	ms, err := s.Nearest(context.Background(), wordVector("spade rake", 64), 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.Contains(m.Path, "tools") {
			t.Errorf("removed note still found: %+v", m)
		}
	}
}

func TestModelChangeReembedsAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	src := garden()
	first := newWordEmbedder("fake/words/64")
	r := start(t, s, src, first, QueueOptions{})
	r.waitIdle(t)
	r.stop(t)

	second := newWordEmbedder("fake/other/64")
	hold := make(chan struct{})
	second.fail = func(ctx context.Context, call int, _ []string) error {
		if call == 1 {
			<-hold // so the test sees the re-embedding under way
		}
		return nil
	}
	r = start(t, s, src, second, QueueOptions{Batch: 2})
	p := r.waitFor(t, "re-embedding", func(p Progress) bool { return p.Reembedding })
	if p.ModelBefore != "fake/words/64" || p.Model != "fake/other/64" {
		t.Errorf("re-embedding progress %+v", p)
	}
	if st, err := s.Progress(context.Background()); err != nil || !st.Reembedding || st.ModelBefore != "fake/words/64" {
		t.Errorf("stored progress %+v, %v: want the re-embedding recorded", st, err)
	}
	close(hold)
	p = r.waitIdle(t)
	if len(second.embedded()) != 5 || p.Embedded != 5 || p.Reembedding || p.ModelBefore != "" {
		t.Errorf("after re-embedding: %d texts, progress %+v", len(second.embedded()), p)
	}
	var old int
	if err := s.db.QueryRow(`SELECT count(*) FROM vectors v JOIN models m ON m.id = v.model WHERE m.fingerprint = 'fake/words/64'`).Scan(&old); err != nil || old != 0 {
		t.Errorf("%d vectors of the old model left (%v), want 0", old, err)
	}
}

func TestQueueEmbedsNewestNotesFirst(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	src := newMemSource()
	for i, name := range []string{"old", "middle", "new"} {
		src.put(name+".md", name, t0.Add(time.Duration(i)*time.Hour), sec(1, "text of "+name))
	}
	emb := newWordEmbedder("fake/words/64")
	r := start(t, s, src, emb, QueueOptions{Batch: 1})
	r.waitIdle(t)
	got := strings.Join(emb.embedded(), "|")
	want := "new\n\ntext of new|middle\n\ntext of middle|old\n\ntext of old"
	if got != want {
		t.Errorf("embedded in order %q, want %q", got, want)
	}
}

func TestQueueCancelledMidBatchResumes(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	src := garden()
	emb := newWordEmbedder("fake/words/64")
	inBatch := make(chan struct{})
	emb.fail = func(ctx context.Context, call int, _ []string) error {
		if call == 2 {
			close(inBatch)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	r := start(t, s, src, emb, QueueOptions{Batch: 2})
	<-inBatch
	if err := r.stop(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	if got := len(emb.embedded()); got != 2 {
		t.Fatalf("%d texts embedded before the cancel, want the first batch of 2", got)
	}

	again := newWordEmbedder("fake/words/64")
	r = start(t, s, src, again, QueueOptions{Batch: 2})
	p := r.waitIdle(t)
	if got := len(again.embedded()); got != 3 || p.Embedded != 5 || p.Left != 0 {
		t.Errorf("restart embedded %d texts, progress %+v; want the 3 left", got, p)
	}
}

func TestQueuePausesOnDailyBudget(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	src := garden()
	// The two chunks of the newest note, and not the third.
	limit := 0
	for _, c := range chunksOf(mustNote(t, src, "plants/tomato.md"), 200) {
		limit += c.tokens
	}
	emb := newWordEmbedder("fake/words/64")
	r := start(t, s, src, emb, QueueOptions{DailyTokens: limit, Batch: 1})
	p := r.waitFor(t, "paused", func(p Progress) bool { return p.State == Paused })
	if p.Embedded != 2 || p.Left != 3 || p.TokensToday != limit || !strings.Contains(p.Note, "daily budget") || !p.Resumes.After(time.Now()) {
		t.Errorf("paused with %+v; want 2 embedded, 3 left, %d tokens today", p, limit)
	}
	r.stop(t)

	// A restart the same day stays within the budget spent.
	again := newWordEmbedder("fake/words/64")
	r = start(t, s, src, again, QueueOptions{DailyTokens: limit, Batch: 1})
	r.waitFor(t, "paused", func(p Progress) bool { return p.State == Paused })
	if n := len(again.embedded()); n != 0 {
		t.Errorf("a restart embedded %d texts past the day's budget", n)
	}
	if st, err := s.Progress(context.Background()); err != nil || st.State != Paused || st.TokensToday != limit {
		t.Errorf("stored progress %+v, %v; want paused with %d tokens today", st, err, limit)
	}
}

func mustNote(t *testing.T, src Source, path string) Note {
	t.Helper()
	n, err := src.Note(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestQueueWaitsOutAnOfflineEmbedder(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	src := garden()
	emb := newWordEmbedder("fake/words/64")
	emb.fail = func(_ context.Context, call int, _ []string) error {
		if call <= 3 {
			return errOffline
		}
		return nil
	}
	r := start(t, s, src, emb, QueueOptions{Retry: time.Millisecond})
	p := r.waitFor(t, "waiting", func(p Progress) bool { return p.State == Waiting })
	if !strings.Contains(p.LastError, "connection refused") || !p.Resumes.After(time.Now().Add(-time.Second)) {
		t.Errorf("waiting with %+v", p)
	}
	if _, err := s.Nearest(context.Background(), wordVector("sun", 64), 1, nil); !errors.Is(err, ErrNoVectors) {
		t.Errorf("Nearest before any vector: %v, want ErrNoVectors", err)
	}
	p = r.waitIdle(t)
	if p.Embedded != 5 || p.LastError != "" {
		t.Errorf("after the embedder came back: %+v", p)
	}
	emb.mu.Lock()
	calls := emb.calls
	emb.mu.Unlock()
	if calls != 4 {
		t.Errorf("%d calls, want 3 failed and 1 that embedded all", calls)
	}
}
