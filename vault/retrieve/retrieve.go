// Package retrieve finds notes for a query by their words, by their
// meaning, or both: it sits above the keyword index (vault/index) and the
// note vectors (vault/vectors) and fuses their ranks. vault/search,
// search_notes, margin search --mode semantic|hybrid and the query flow's
// question retrieval search through it, so each says the same thing about
// how it searched.
//
// Search by meaning needs an embedding model and the notes' vectors of
// that model. Without either, or with the model unreachable, a search by
// meaning runs as keyword search and its Result says why (Fallback):
// never an error, so the vault stays searchable offline.
package retrieve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vectors"
)

// The modes of search by meaning, beside the index's keyword modes (auto,
// all, any, phrase).
const (
	// ModeSemantic ranks notes by how near their sections are to the
	// query's meaning alone.
	ModeSemantic index.Mode = "semantic"
	// ModeHybrid fuses the keyword ranking (auto) with the ranking by
	// meaning, so a note found both ways comes first and a note found one
	// way still comes.
	ModeHybrid index.Mode = "hybrid"
)

// Why a search by meaning ran as keyword search: Result.Fallback.
const (
	FallbackNoModel    = "no embedding model"
	FallbackNoVectors  = "no vectors yet"
	FallbackOtherModel = "vectors of another model"
	FallbackOffline    = "embedding model unavailable"
	FallbackNoText     = "no text to search by meaning"
)

// ErrNoModel is what a QueryEmbedder returns when no embedding model is
// configured.
var ErrNoModel = errors.New("no embedding model")

// QueryEmbedder turns a query's text into a vector of the model the notes
// were embedded with. The composition root adapts llm.Client (with the
// query kind of text).
type QueryEmbedder interface {
	// EmbedQuery returns text's vector and the fingerprint of the model
	// that made it (see vectors.Embedder.Fingerprint); ErrNoModel when
	// there is no model to ask.
	EmbedQuery(ctx context.Context, text string) (vec []float32, fingerprint string, err error)
}

// Vectors is the notes' vectors: vectors.Store.
type Vectors interface {
	// Model is the fingerprint of the model the vectors are of, and how
	// many there are; an error when they cannot be read (search is then
	// by keyword).
	Model(ctx context.Context) (fingerprint string, vectors int, err error)
	Nearest(ctx context.Context, q []float32, k int, allow []string) ([]vectors.Match, error)
	NearestExcept(ctx context.Context, q []float32, k int, except []string) ([]vectors.Match, error)
}

// Fusion weighs the two rankings of a hybrid search, by reciprocal rank
// fusion: a note's score is Keyword/(K+r) for its keyword rank r (from 1)
// plus Meaning/(K+s) for its rank s by meaning, each term only when the
// note has that rank.
type Fusion struct {
	K       float64
	Keyword float64
	Meaning float64
}

// DefaultFusion is the fusion tuned on the golden set over the fake
// embedder (see BENCHMARKS.md): K from 1 to 60 and Keyword from 1 to 10
// against Meaning 1, best at K 1 and Keyword 3. It also keeps keyword
// search's first hit first — 3/(1+1) is at least 3/(1+2) + 1/(1+1), the
// tie going to the keyword rank — so the note a query names, or whose
// phrase it quotes, is never pushed down by a note merely near in meaning.
var DefaultFusion = Fusion{K: 1, Keyword: 3, Meaning: 1}

// Options configure a Retriever.
type Options struct {
	// Fusion weighs a hybrid search; zero means DefaultFusion.
	Fusion Fusion
	// AutoHybrid makes auto mode hybrid when vectors of the query
	// embedder's model exist (and keyword search otherwise, silently).
	AutoHybrid bool
}

// Retriever finds notes by words and by meaning. It is safe for
// concurrent use.
type Retriever struct {
	ix  *index.Index
	vec Vectors
	emb QueryEmbedder
	opt Options
}

// New returns a retriever over ix and, unless nil, the notes' vectors vec
// searched with queries embedded by emb. A nil vec or emb searches by
// keyword only, saying why.
func New(ix *index.Index, vec Vectors, emb QueryEmbedder, opt Options) *Retriever {
	if opt.Fusion == (Fusion{}) {
		opt.Fusion = DefaultFusion
	}
	// A nil *vectors.Store in the interface must read as no vectors.
	if s, ok := vec.(*vectors.Store); ok && s == nil {
		vec = nil
	}
	return &Retriever{ix: ix, vec: vec, emb: emb, opt: opt}
}

// Result is the answer to a query, as index.Result with how it was
// searched.
type Result struct {
	index.Result
	// Mode is the mode that ran: a keyword mode, semantic or hybrid.
	Mode index.Mode `json:"mode"`
	// Fallback, when a search by meaning was asked for (or auto would
	// have been hybrid) and ran by keyword, says why: one of the
	// Fallback constants.
	Fallback string `json:"fallback,omitempty"`
}

// Validate checks a query as index.Query.Validate does, with the modes of
// search by meaning known too.
func Validate(q index.Query) error {
	if m := modeOf(q.Mode); m == ModeSemantic || m == ModeHybrid {
		q.Mode = index.ModeAuto
	}
	if err := q.Validate(); err != nil {
		var qe *index.QueryError
		if errors.As(err, &qe) && qe.Field == "mode" {
			return &index.QueryError{Field: "mode", Reason: fmt.Sprintf("must be auto, all, any, phrase, semantic or hybrid, got %q", q.Mode)}
		}
		return err
	}
	return nil
}

func modeOf(m index.Mode) index.Mode {
	m = index.Mode(strings.ToLower(strings.TrimSpace(string(m))))
	if m == "" {
		return index.ModeAuto
	}
	return m
}

// Find runs q in its mode. A keyword mode is index.Find's; semantic and
// hybrid apply q's filters (dates, glob, tags, properties, task fields,
// outputs) before ranking by meaning, so the nearest notes the filters
// allow come back however narrow they are.
func (r *Retriever) Find(ctx context.Context, q index.Query) (Result, error) {
	mode := modeOf(q.Mode)
	wantsMeaning := mode == ModeSemantic || mode == ModeHybrid
	if mode == index.ModeAuto && r.opt.AutoHybrid && r.vectorsReady(ctx) {
		mode, wantsMeaning = ModeHybrid, true
	}
	if !wantsMeaning {
		return r.keyword(ctx, q, mode, "")
	}
	if strings.TrimSpace(q.Text) == "" {
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoText)
	}
	if r.emb == nil {
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoModel)
	}
	if !r.vectorsReady(ctx) {
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoVectors)
	}
	vec, fp, err := r.emb.EmbedQuery(ctx, q.Text)
	switch {
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("searching: %w", ctx.Err())
	case errors.Is(err, ErrNoModel):
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoModel)
	case err != nil:
		return r.keyword(ctx, q, index.ModeAuto, FallbackOffline)
	}
	if have, _, _ := r.vec.Model(ctx); fp != have {
		return r.keyword(ctx, q, index.ModeAuto, FallbackOtherModel)
	}
	if mode == ModeSemantic {
		return r.semantic(ctx, q, vec)
	}
	return r.hybrid(ctx, q, vec)
}

// vectorsReady reports whether some vectors can be searched.
func (r *Retriever) vectorsReady(ctx context.Context) bool {
	if r.vec == nil || r.emb == nil {
		return false
	}
	fp, n, err := r.vec.Model(ctx)
	return err == nil && fp != "" && n > 0
}

func (r *Retriever) keyword(ctx context.Context, q index.Query, mode index.Mode, fallback string) (Result, error) {
	q.Mode = mode
	res, err := r.ix.Find(ctx, q)
	if err != nil {
		return Result{}, err
	}
	return Result{Result: res, Mode: mode, Fallback: fallback}, nil
}

func limitOf(q index.Query) int {
	if q.Limit <= 0 {
		return index.DefaultLimit
	}
	return q.Limit
}

// nearest returns the k notes nearest to vec that q's filters allow.
func (r *Retriever) nearest(ctx context.Context, q index.Query, vec []float32, k int) ([]vectors.Match, error) {
	q.Mode = index.ModeAuto
	scope, err := r.ix.Scope(ctx, q)
	if err != nil {
		return nil, err
	}
	var ms []vectors.Match
	if scope.All {
		ms, err = r.vec.NearestExcept(ctx, vec, k, scope.Except)
	} else {
		ms, err = r.vec.Nearest(ctx, vec, k, scope.Paths)
	}
	if err != nil {
		return nil, err
	}
	return ms[:min(k, len(ms))], nil
}

// semantic ranks q's allowed notes by meaning alone.
func (r *Retriever) semantic(ctx context.Context, q index.Query, vec []float32) (Result, error) {
	ms, err := r.nearest(ctx, q, vec, limitOf(q))
	if errors.Is(err, vectors.ErrNoVectors) { // gone since vectorsReady (a model change)
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoVectors)
	}
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	places := make([]index.Place, len(ms))
	for i, m := range ms {
		places[i] = index.Place{Path: m.Path, Line: m.Line}
	}
	hits, err := r.ix.HitsAt(ctx, places)
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	score := make(map[string]float32, len(ms))
	for _, m := range ms {
		score[m.Path] = m.Score
	}
	for i := range hits {
		hits[i].Rank = float64(score[hits[i].Path])
	}
	return Result{Result: index.Result{Hits: hits, Total: len(hits)}, Mode: ModeSemantic}, nil
}

// poolOf is how deep a hybrid search reads each ranking: past the limit,
// so that a note ranked low one way and high the other can rise into it.
func poolOf(limit int) int { return max(limit, 20) }

// hybrid fuses q's keyword ranking with its ranking by meaning.
func (r *Retriever) hybrid(ctx context.Context, q index.Query, vec []float32) (Result, error) {
	limit := limitOf(q)
	pool := poolOf(limit)
	kq := q
	kq.Mode, kq.Limit = index.ModeAuto, pool
	// The two rankings read different databases: side by side, the
	// search by meaning mostly hides behind the keyword search.
	var ms []vectors.Match
	var vecErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ms, vecErr = r.nearest(ctx, q, vec, pool)
	}()
	kw, err := r.ix.Find(ctx, kq)
	<-done
	if err != nil {
		return Result{}, err
	}
	if err = vecErr; errors.Is(err, vectors.ErrNoVectors) {
		return r.keyword(ctx, q, index.ModeAuto, FallbackNoVectors)
	}
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	fused := r.opt.Fusion.fuse(kw.Hits, ms)
	res := Result{Mode: ModeHybrid}
	// Every keyword match counts, found by meaning too or not, and so
	// does every note found by meaning alone within the pool.
	byMeaning := 0
	for _, f := range fused {
		if f.keyword == 0 {
			byMeaning++
		}
	}
	res.Total = kw.Total + byMeaning
	fused = fused[:min(limit, len(fused))]
	res.Truncated = res.Total > len(fused)

	// A keyword hit keeps its section and marked snippet; a note found
	// by meaning alone is shown at its nearest section.
	var places []index.Place
	for _, f := range fused {
		if f.keyword == 0 {
			places = append(places, index.Place{Path: f.path, Line: f.line})
		}
	}
	found, err := r.ix.HitsAt(ctx, places)
	if err != nil {
		return Result{}, fmt.Errorf("searching: %w", err)
	}
	at := make(map[string]index.Hit, len(found))
	for _, h := range found {
		at[h.Path] = h
	}
	for _, f := range fused {
		h, ok := f.hit, f.keyword > 0
		if !ok {
			if h, ok = at[f.path]; !ok {
				continue // no longer indexed
			}
		}
		h.Rank = f.score
		res.Hits = append(res.Hits, h)
	}
	return res, nil
}

// fused is one note of a hybrid ranking.
type fused struct {
	path             string
	keyword, meaning int       // ranks from 1; 0 when not found that way
	hit              index.Hit // its keyword hit, when keyword > 0
	line             int       // its nearest section, when found by meaning
	score            float64
}

// fuse ranks the notes of both rankings by reciprocal rank fusion, best
// first; ties go to the better keyword rank, then to the path.
func (f Fusion) fuse(hits []index.Hit, ms []vectors.Match) []fused {
	byPath := make(map[string]*fused, len(hits)+len(ms))
	var out []*fused
	get := func(path string) *fused {
		if x, ok := byPath[path]; ok {
			return x
		}
		x := &fused{path: path}
		byPath[path] = x
		out = append(out, x)
		return x
	}
	for i, h := range hits {
		x := get(h.Path)
		if x.keyword == 0 {
			x.keyword, x.hit = i+1, h
			x.score += f.Keyword / (f.K + float64(i+1))
		}
	}
	for i, m := range ms {
		x := get(m.Path)
		if x.meaning == 0 {
			x.meaning, x.line = i+1, m.Line
			x.score += f.Meaning / (f.K + float64(i+1))
		}
	}
	slices.SortStableFunc(out, func(a, b *fused) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(rankOr(a.keyword), rankOr(b.keyword)); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	res := make([]fused, len(out))
	for i, x := range out {
		res[i] = *x
	}
	return res
}

// rankOr is a rank for ordering: 0 (not ranked) after every rank.
func rankOr(r int) int {
	if r == 0 {
		return int(^uint(0) >> 1)
	}
	return r
}
