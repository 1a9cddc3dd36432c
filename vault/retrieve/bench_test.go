package retrieve_test

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vaultgen"
)

// The hybrid query's cost at 10,000 notes (vault/vaultgen, as the index's
// benchmarks) with every chunk embedded, against the keyword query of the
// same text in the same run. Run with
//
//	go test -run '^$' -bench BenchmarkHybrid -benchtime 400x ./vault/retrieve/
//
// MARGIN_BENCH_NOTES=100000 measures 100,000 notes instead (some 380,000
// chunks: ten minutes on two cores, most of it embedding them).
//
// The vectors are synthetic (a sum of random directions per word, 384
// wide, as embeddinggemma cut to 384 would be), and the query's vector
// is made before the timer: the figures leave out the embed call, which
// is the model server's.

// synth embeds a text as the sum of a random direction per word, each
// word's drawn once.
type synth struct {
	dims  int
	mu    sync.Mutex
	words map[string][]float32
}

func (s *synth) word(w string) []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.words[w]; ok {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(w))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float32, s.dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	s.words[w] = v
	return v
}

func (s *synth) vector(text string) []float32 {
	out := make([]float32, s.dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		for i, x := range s.word(w) {
			out[i] += x
		}
	}
	return out
}

func (s *synth) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = s.vector(t)
	}
	return out, nil
}
func (s *synth) Fingerprint() string { return "synthetic/words@384" }
func (s *synth) MaxTokens() int      { return 2048 }

// fixed answers each benchmark query with its vector made beforehand.
type fixed map[string][]float32

func (f fixed) EmbedQuery(ctx context.Context, text string) ([]float32, string, error) {
	return f[text], "synthetic/words@384", nil
}

// benchQueries are cmd/marginbench's words and a few questions.
var benchQueries = []string{"bench", "sleep", "deadlift", "invoice", "meeting notes", "tired", "protein", "release", "physio", "chezmoi",
	"why did I sleep badly", "how heavy was the bench press last week", "what did the physio say about my knee"}

// benchNotes is the size of the benchmarks' vault: MARGIN_BENCH_NOTES,
// 10,000 unless set, so that make bench stays short.
func benchNotes(b *testing.B) int {
	env := os.Getenv("MARGIN_BENCH_NOTES")
	if env == "" {
		return 10_000
	}
	n, err := strconv.Atoi(env)
	if err != nil || n <= 0 {
		b.Fatalf("MARGIN_BENCH_NOTES=%q: want a number of notes", env)
	}
	return n
}

func BenchmarkHybrid(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	notes := benchNotes(b)
	if _, err := vaultgen.Generate(dir, vaultgen.Options{Notes: notes, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		b.Fatal(err)
	}
	emb := &synth{dims: 384, words: map[string][]float32{}}
	start := time.Now()
	s, err := golden.Embed(ctx, v.Index(), filepath.Join(b.TempDir(), "vectors.db"), emb)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	_, chunks, err := s.Model(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d notes, %d chunks embedded in %v", notes, chunks, time.Since(start).Round(time.Second))
	qv := fixed{}
	for _, q := range benchQueries {
		qv[q] = emb.vector(q)
	}
	r := retrieve.New(v.Index(), s, qv, retrieve.Options{})
	queries := func(mode index.Mode) []index.Query {
		var out []index.Query
		for _, q := range benchQueries {
			out = append(out, index.Query{Text: q, Mode: mode, Limit: 20})
		}
		return out
	}
	for _, m := range []index.Mode{index.ModeAuto, retrieve.ModeHybrid, retrieve.ModeSemantic} {
		for _, q := range queries(m) {
			res, err := r.Find(ctx, q)
			if err != nil || res.Mode != m || m != index.ModeAuto && len(res.Hits) == 0 {
				b.Fatalf("%s %q: %d hits by %q (%s), %v", m, q.Text, len(res.Hits), res.Mode, res.Fallback, err)
			}
		}
	}
	// Paired: each round runs the keyword query, then the same text
	// hybrid and semantic, so the machine's load weighs on all alike.
	lat := map[index.Mode][]time.Duration{}
	slowest := map[index.Mode]struct { // a tail has a query to look at
		d    time.Duration
		text string
	}{}
	kw, hy, se := queries(index.ModeAuto), queries(retrieve.ModeHybrid), queries(retrieve.ModeSemantic)
	for i := 0; b.Loop(); i++ {
		j := i % len(benchQueries)
		for _, q := range []index.Query{kw[j], hy[j], se[j]} {
			t := time.Now()
			if _, err := r.Find(ctx, q); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t)
			lat[q.Mode] = append(lat[q.Mode], d)
			if d > slowest[q.Mode].d {
				slowest[q.Mode] = struct {
					d    time.Duration
					text string
				}{d, q.Text}
			}
		}
	}
	pct := func(m index.Mode, p int) float64 {
		l := slices.Clone(lat[m])
		slices.Sort(l)
		return float64(l[len(l)*p/100].Microseconds()) / 1000
	}
	for _, m := range []struct {
		mode index.Mode
		name string
	}{{index.ModeAuto, "keyword"}, {retrieve.ModeHybrid, "hybrid"}, {retrieve.ModeSemantic, "semantic"}} {
		b.ReportMetric(pct(m.mode, 50), m.name+"-p50-ms")
		b.ReportMetric(pct(m.mode, 99), m.name+"-p99-ms")
		b.Logf("slowest %s query: %q, %v", m.name, slowest[m.mode].text, slowest[m.mode].d.Round(time.Millisecond))
	}
	b.ReportMetric(pct(retrieve.ModeHybrid, 50)/pct(index.ModeAuto, 50), "hybrid/keyword-p50")
	b.ReportMetric(pct(retrieve.ModeHybrid, 99)/pct(index.ModeAuto, 99), "hybrid/keyword-p99")
}
