package golden

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vectors"
)

// Meanings are the fake embedder's concepts for the golden set: llmtest's
// own, and the words its questions and their notes say differently — a
// paraphrase, or another language. With them the fake puts a question
// near its note as a multilingual model would; the figures measure the
// fusion and the filters over that fake, not any real model.
var Meanings = append(slices.Clone(llmtest.Meanings), llmtest.Meaning{
	{"rest", "resting", "reposar", "reposo", "ruhen", "repos", "riposo", "descansar"},
	{"paella", "paellera"},
	{"ragù", "ragu", "bolognese", "sugo"},
	{"cook", "cooking", "kochen", "cuocere", "cottura", "cocinar", "cuire", "simmer", "sobbollire"},
	{"baikal", "байкал", "байкале"},
	{"visit", "trip", "travel", "поездка", "reise", "viaje", "viaggio", "voyage", "旅行", "여행", "viagem"},
	{"repair", "fix", "réparer", "reparieren", "reparatur", "riparare", "reparar", "ремонт"},
	{"tire", "tyre", "pneu", "reifen", "schlauch", "neumático", "gomma", "flat", "puncture", "platten"},
	{"bike", "bicycle", "vélo", "fahrrad", "bici", "bicicleta", "велосипед"},
}...)

// Embedder is the fake embedder of the golden figures: llmtest's, in
// process, as both the queue's document embedder and the query embedder.
type Embedder struct{ E *llmtest.Embedder }

// NewEmbedder returns the golden set's fake embedder.
func NewEmbedder() Embedder { return Embedder{llmtest.NewEmbedder(256, Meanings)} }

func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.E.Vector(t)
	}
	return out, nil
}

func (e Embedder) Fingerprint() string { return "fake/golden@256" }
func (e Embedder) MaxTokens() int      { return 2048 }

func (e Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, string, error) {
	return e.E.Vector(text), e.Fingerprint(), nil
}

// Embed brings the vectors of ix's notes in the store at path up to date
// with emb, running the queue until nothing is left to embed.
func Embed(ctx context.Context, ix *index.Index, path string, emb vectors.Embedder) (*vectors.Store, error) {
	s, err := vectors.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan vectors.Progress, 1)
	q := vectors.NewQueue(s, vectors.FromIndex(ix), emb, vectors.QueueOptions{Batch: 64, OnProgress: func(p vectors.Progress) {
		if p.State == vectors.Idle || p.State == vectors.Waiting {
			select {
			case done <- p:
			default:
			}
		}
	}})
	errc := make(chan error, 1)
	go func() { errc <- q.Run(ctx) }()
	var p vectors.Progress
	select {
	case p = <-done:
	case err = <-errc:
	}
	cancel()
	if err == nil {
		err = <-errc
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.Close()
		return nil, err
	}
	if p.State != vectors.Idle || p.Left > 0 {
		s.Close()
		return nil, fmt.Errorf("embedding stopped with %d chunks left: %s %s", p.Left, p.Note, p.LastError)
	}
	return s, nil
}

// ByMeaning asks every question of qs (the semantic tier too) of copies
// of the vaults under root, with the notes embedded by emb, in each mode
// (keyword modes, semantic, hybrid) fused by f, and scores each mode on
// each vault and on all.
func ByMeaning(ctx context.Context, root string, qs []Question, modes []index.Mode, emb Embedder, f retrieve.Fusion) ([]Result, error) {
	ranked := make(map[index.Mode][][]string)
	var asked []Question
	for _, name := range slices.Sorted(maps.Keys(Vaults)) {
		var these []Question
		for _, q := range qs {
			if q.Vault == name {
				these = append(these, q)
			}
		}
		if len(these) == 0 {
			continue
		}
		err := withVault(ctx, filepath.Join(root, Vaults[name]), func(ix *index.Index, state string) error {
			s, err := Embed(ctx, ix, filepath.Join(state, vectors.FileName), emb)
			if err != nil {
				return err
			}
			defer s.Close()
			r := retrieve.New(ix, s, emb, retrieve.Options{Fusion: f})
			for _, m := range modes {
				for _, q := range these {
					res, err := r.Find(ctx, index.Query{Text: q.Q, Mode: m, Limit: Depth})
					if err != nil {
						return fmt.Errorf("%q: %w", q.Q, err)
					}
					if res.Fallback != "" {
						return fmt.Errorf("%q: %s ran as keyword search: %s", q.Q, m, res.Fallback)
					}
					var paths []string
					for _, h := range res.Hits {
						paths = append(paths, h.Path)
					}
					ranked[m] = append(ranked[m], paths)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("vault %s: %w", name, err)
		}
		asked = append(asked, these...)
	}
	return scoreModes(asked, ranked, modes), nil
}
