package retrieve_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vectors"
)

// fixture is a vault of notes, indexed, and the vectors of its notes made
// by the fake embedder, in-process.
type fixture struct {
	ix  *index.Index
	vec *vectors.Store
	emb golden.Embedder
}

func newFixture(t *testing.T, notes map[string]string) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	for p, text := range notes {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	emb := golden.Embedder{E: llmtest.NewEmbedder(64, llmtest.Meanings)}
	s, err := golden.Embed(ctx, v.Index(), filepath.Join(t.TempDir(), vectors.FileName), emb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{ix: v.Index(), vec: s, emb: emb}
}

func paths(r retrieve.Result) []string {
	var out []string
	for _, h := range r.Hits {
		out = append(out, h.Path)
	}
	return out
}

var sleepNotes = map[string]string{
	"Sleep log.md":   "# Sleep log\n\nSlept badly all week; a nap after lunch helped.\n",
	"Garden.md":      "# Garden\n\nThe tomato plants need seeds sown in March.\n",
	"Budget.md":      "# Budget\n\nExpenses for the month, spending on food.\n",
	"Rest days.md":   "# Rest days\n\nTraining plan: rest on Sunday, run on Monday.\n",
	"Reports/r.md":   "---\nmargin: report\n---\n# Report\n\nsleep sleep sleep nap nap\n",
	"Work/Sleep.md":  "---\ntags: [work]\n---\n# Sleep at work\n\nNo napping in meetings.\n",
	"Running log.md": "# Running log\n\nJogging five kilometres.\n",
}

// TestHybridFindsByMeaning: a question whose words are in no note finds
// the note of its meaning, by hybrid and semantic search; keyword search
// finds nothing.
func TestHybridFindsByMeaning(t *testing.T) {
	f := newFixture(t, sleepNotes)
	r := retrieve.New(f.ix, f.vec, f.emb, retrieve.Options{})
	ctx := context.Background()
	kw, err := r.Find(ctx, index.Query{Text: "schlafen"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kw.Hits) != 0 || kw.Mode != index.ModeAuto || kw.Fallback != "" {
		t.Fatalf("keyword: %v mode %q fallback %q, want no hits by auto", paths(kw), kw.Mode, kw.Fallback)
	}
	for _, m := range []index.Mode{retrieve.ModeHybrid, retrieve.ModeSemantic} {
		res, err := r.Find(ctx, index.Query{Text: "schlafen", Mode: m, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != m || res.Fallback != "" {
			t.Errorf("%s ran as %q, fallback %q", m, res.Mode, res.Fallback)
		}
		got := paths(res)
		if len(got) == 0 || got[0] != "Sleep log.md" && got[0] != "Work/Sleep.md" {
			t.Errorf("%s: %v, want a sleep note first", m, got)
		}
		if slices.Contains(got, "Reports/r.md") {
			t.Errorf("%s: %v holds margin's report, which a search leaves out", m, got)
		}
		if len(got) > 3 {
			t.Errorf("%s: %d hits past the limit of 3", m, len(got))
		}
		for _, h := range res.Hits {
			if h.Line < 1 || h.Snippet == "" {
				t.Errorf("%s: hit %+v lacks its line or snippet", m, h)
			}
		}
	}
	// With outputs kept, the report (all sleep) is the nearest.
	res, err := r.Find(ctx, index.Query{Text: "schlafen", Mode: retrieve.ModeSemantic, Outputs: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res); len(got) == 0 || got[0] != "Reports/r.md" {
		t.Errorf("semantic with outputs: %v, want the report first", got)
	}
}

// TestHybridKeepsKeywordHits: a note that holds the query's word ranks
// first, above notes near it in meaning, and keeps its marked snippet.
func TestHybridKeepsKeywordHits(t *testing.T) {
	f := newFixture(t, sleepNotes)
	r := retrieve.New(f.ix, f.vec, f.emb, retrieve.Options{})
	res, err := r.Find(context.Background(), index.Query{Text: "meetings", Mode: retrieve.ModeHybrid})
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(res); len(got) == 0 || got[0] != "Work/Sleep.md" {
		t.Fatalf("hybrid: %v, want Work/Sleep.md first", got)
	}
	if h := res.Hits[0]; h.Snippet != "No napping in **meetings**." {
		t.Errorf("snippet %q, want the keyword hit's marked one", h.Snippet)
	}
	if res.Total != len(res.Hits) || res.Truncated {
		t.Errorf("total %d truncated %v for %d hits", res.Total, res.Truncated, len(res.Hits))
	}
}

// TestFiltersBeforeRanking: a filter that leaves out the globally nearest
// notes (more of them than a search reads) still yields the nearest note
// it allows, first.
func TestFiltersBeforeRanking(t *testing.T) {
	notes := map[string]string{
		"Other/Sleep and garden.md": "---\ntags: [home]\n---\n# Evening\n\nSleep, then the garden and its plants, seeds and more.\n",
		"Other/Budget.md":           "---\ntags: [home]\n---\n# Budget\n\nExpenses and spending.\n",
	}
	for i := range 60 {
		notes[fmt.Sprintf("Sleep/night %02d.md", i)] = fmt.Sprintf("# Night %d\n\nSlept, a nap, sleeping well.\n", i)
	}
	f := newFixture(t, notes)
	r := retrieve.New(f.ix, f.vec, f.emb, retrieve.Options{})
	ctx := context.Background()
	for _, m := range []index.Mode{retrieve.ModeSemantic, retrieve.ModeHybrid} {
		all, err := r.Find(ctx, index.Query{Text: "dormir", Mode: m, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(all); len(got) != 5 || slices.Contains(got, "Other/Sleep and garden.md") {
			t.Fatalf("%s unfiltered: %v, want five nights, the evening not among them", m, got)
		}
		for _, q := range []index.Query{
			{Text: "dormir", Mode: m, Limit: 5, Glob: "Other/**"},
			{Text: "dormir", Mode: m, Limit: 5, Tags: []string{"home"}},
			{Text: "dormir tags:home", Mode: m, Limit: 5},
		} {
			res, err := r.Find(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got := paths(res)
			if len(got) == 0 || got[0] != "Other/Sleep and garden.md" {
				t.Errorf("%s %+v: %v, want the evening note first", m, q, got)
			}
			for _, p := range got {
				if filepath.Dir(p) != "Other" {
					t.Errorf("%s %+v: %s passed the filter", m, q, p)
				}
			}
		}
	}
}

// embedFunc is a QueryEmbedder of a function.
type embedFunc func(ctx context.Context, text string) ([]float32, string, error)

func (f embedFunc) EmbedQuery(ctx context.Context, text string) ([]float32, string, error) {
	return f(ctx, text)
}

// TestFallbackSaysWhy: without a model, vectors, the model's vectors or
// a reachable model, semantic and hybrid search run as keyword search,
// give its hits and say why; never an error.
func TestFallbackSaysWhy(t *testing.T) {
	f := newFixture(t, sleepNotes)
	ctx := context.Background()
	empty, err := vectors.Open(ctx, filepath.Join(t.TempDir(), vectors.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	calls := 0
	counting := embedFunc(func(ctx context.Context, text string) ([]float32, string, error) {
		calls++
		return f.emb.EmbedQuery(ctx, text)
	})
	other := embedFunc(func(ctx context.Context, text string) ([]float32, string, error) {
		return f.emb.E.Vector(text), "ollama/another@64", nil
	})
	offline := embedFunc(func(ctx context.Context, text string) ([]float32, string, error) {
		return nil, "", errors.New("dial tcp 127.0.0.1:11434: connection refused")
	})
	noModel := embedFunc(func(ctx context.Context, text string) ([]float32, string, error) {
		return nil, "", fmt.Errorf("embed: %w", retrieve.ErrNoModel)
	})
	for _, c := range []struct {
		name string
		r    *retrieve.Retriever
		want string
	}{
		{"no embedder", retrieve.New(f.ix, f.vec, nil, retrieve.Options{}), retrieve.FallbackNoModel},
		{"no model configured", retrieve.New(f.ix, f.vec, noModel, retrieve.Options{}), retrieve.FallbackNoModel},
		{"no vectors store", retrieve.New(f.ix, (*vectors.Store)(nil), counting, retrieve.Options{}), retrieve.FallbackNoVectors},
		{"nothing embedded", retrieve.New(f.ix, empty, counting, retrieve.Options{}), retrieve.FallbackNoVectors},
		{"another model", retrieve.New(f.ix, f.vec, other, retrieve.Options{}), retrieve.FallbackOtherModel},
		{"offline", retrieve.New(f.ix, f.vec, offline, retrieve.Options{}), retrieve.FallbackOffline},
	} {
		for _, m := range []index.Mode{retrieve.ModeSemantic, retrieve.ModeHybrid} {
			q := index.Query{Text: "nap", Mode: m}
			res, err := c.r.Find(ctx, q)
			if err != nil {
				t.Errorf("%s, %s: %v", c.name, m, err)
				continue
			}
			q.Mode = index.ModeAuto
			kw, err := f.ix.Find(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if res.Mode != index.ModeAuto || res.Fallback != c.want || !slices.Equal(paths(res), paths(retrieve.Result{Result: kw})) {
				t.Errorf("%s, %s: ran %q, fallback %q, hits %v; want auto, %q, keyword's %v", c.name, m, res.Mode, res.Fallback, paths(res), c.want, paths(retrieve.Result{Result: kw}))
			}
		}
	}
	if calls != 0 {
		t.Errorf("the query was embedded %d times with no vectors to search", calls)
	}
	// auto, asked to become hybrid, stays keyword without saying so
	// when there is nothing to search by meaning.
	r := retrieve.New(f.ix, empty, counting, retrieve.Options{AutoHybrid: true})
	res, err := r.Find(ctx, index.Query{Text: "nap"})
	if err != nil || res.Mode != index.ModeAuto || res.Fallback != "" {
		t.Errorf("auto without vectors: %v, mode %q, fallback %q", err, res.Mode, res.Fallback)
	}
	r = retrieve.New(f.ix, f.vec, f.emb, retrieve.Options{AutoHybrid: true})
	if res, err = r.Find(ctx, index.Query{Text: "nap"}); err != nil || res.Mode != retrieve.ModeHybrid {
		t.Errorf("auto with vectors: %v, mode %q, want hybrid", err, res.Mode)
	}
}

// TestValidate: the modes of search by meaning are known; others are
// named with every mode there is.
func TestValidate(t *testing.T) {
	for _, m := range []index.Mode{"hybrid", "Semantic", "auto", ""} {
		if err := retrieve.Validate(index.Query{Text: "x", Mode: m}); err != nil {
			t.Errorf("Validate(%q): %v", m, err)
		}
	}
	err := retrieve.Validate(index.Query{Text: "x", Mode: "fuzzy"})
	var qe *index.QueryError
	if !errors.As(err, &qe) || qe.Field != "mode" || qe.Reason != `must be auto, all, any, phrase, semantic or hybrid, got "fuzzy"` {
		t.Errorf("Validate(fuzzy) = %v", err)
	}
}
