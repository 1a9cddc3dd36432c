package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/vectors"
)

// serveMemory is margin serve's peak resident set with every chunk of the
// vault of n notes embedded, against the same serve without the vectors,
// in alternating pairs. The vectors are synthetic, stored in-process
// through the queue under the fingerprint the serve is configured with
// (the fake Ollama embedder's model): embedding them through the fake
// would take a quarter of an hour at 100k notes. Each serve answers
// hybrid searches and related notes over stdio (the first of them reads
// the vectors' codes into memory), then its VmHWM is read from /proc.
func (b *bench) serveMemory(dir string, n int) error {
	fmt.Fprintf(os.Stderr, "measuring margin serve's memory on %d notes\n", n)
	label := sizeLabel(n)
	return withTB(func(tb testing.TB) error {
		ctx := context.Background()
		fake := llmtest.NewOllama(tb, "embeddinggemma")
		client, err := llm.New(fake.Config())
		if err != nil {
			return err
		}
		m, err := client.EmbedModel()
		if err != nil {
			return err
		}
		if m.Dims == 0 {
			return fmt.Errorf("%s: no known width to make its vectors", m.Fingerprint())
		}
		state := filepath.Join(dir, ".margin")
		path := filepath.Join(state, vectors.FileName)
		chunks, took, err := fillVectors(ctx, dir, path, synthetic{fp: m.Fingerprint(), dims: m.Dims, max: m.MaxTokens})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%d chunks stored in %s\n", chunks, round(took))
		// Without: the vectors moved aside and a fake that has no
		// embedding model, so the serve neither finds vectors nor starts
		// embedding; its searches fall back to keywords, as they say.
		bare := llmtest.NewOllama(tb)
		aside := path + ".aside"
		without := func() (int64, error) {
			if err := os.Rename(path, aside); err != nil {
				return 0, err
			}
			defer os.Rename(aside, path)
			return b.servePeak(dir, bare.URL, "")
		}
		with := func() (int64, error) { return b.servePeak(dir, fake.URL, "hybrid") }
		var peaks, bases []int64
		var ratios []float64
		for range b.runs {
			a, err := without()
			if err != nil {
				return fmt.Errorf("margin serve without vectors: %w", err)
			}
			e, err := with()
			if err != nil {
				return fmt.Errorf("margin serve with vectors: %w", err)
			}
			fmt.Fprintf(os.Stderr, "margin serve's peak RSS with vectors %.1f MB, without %.1f MB\n", float64(e)/1024, float64(a)/1024)
			peaks, bases = append(peaks, e), append(bases, a)
			ratios = append(ratios, float64(e)/float64(a))
		}
		peak := slices.Max(peaks)
		slices.Sort(ratios)
		b.add(row{figure: label(fmt.Sprintf("peak RSS of margin serve, %d chunks embedded (%d dims)", chunks, m.Dims)), target: "≤ 150 MB at 100k notes",
			measured: fmt.Sprintf("%.1f MB", float64(peak)/1024), baseline: fmt.Sprintf("without vectors: %.1f MB", float64(slices.Max(bases))/1024),
			ratio: fmt.Sprintf("%.2f× (median of %d pairs)", ratios[len(ratios)/2], len(ratios)), pass: check(n < 100_000 || peak <= 150*1024)})
		return nil
	})
}

// fillVectors brings the index of the vault in dir up to date and stores
// a vector of emb for every chunk of its notes at path, through the
// queue, so that a serve's queue finds nothing left to embed.
func fillVectors(ctx context.Context, dir, path string, emb vectors.Embedder) (chunks int, took time.Duration, err error) {
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		return 0, 0, err
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	s, err := golden.Embed(ctx, v.Index(), path, emb)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	p, err := s.Progress(ctx)
	if err != nil {
		return 0, 0, err
	}
	if p.Model != emb.Fingerprint() || p.Left != 0 {
		return 0, 0, fmt.Errorf("vectors of %s with %d chunks left, want every chunk embedded by %s", p.Model, p.Left, emb.Fingerprint())
	}
	return p.Embedded, time.Since(start), nil
}

// synthetic embeds each text as a pseudo-random unit direction drawn
// from its hash: as wide as the model whose fingerprint it bears, and
// cheap enough for 500,000 chunks.
type synthetic struct {
	fp        string
	dims, max int
}

func (e synthetic) Fingerprint() string { return e.fp }
func (e synthetic) MaxTokens() int      { return e.max }

func (e synthetic) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		io.WriteString(h, t)
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		v := make([]float32, e.dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// servePeak starts margin serve on dir against the Ollama at url, waits
// for its first scan, runs vault/search in mode (the server's default
// when "") over the benchmark's queries and vault/related on a few notes
// the searches found, and returns the process's VmHWM in KiB.
func (b *bench) servePeak(dir, url, mode string) (int64, error) {
	cmd := exec.Command(b.bin, "serve", "--vault", dir)
	cmd.Env = append(os.Environ(), "OLLAMA_HOST="+url, "MARGIN_LOG_LEVEL=error") // the agents warn that their models are away
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	call := newRPCConn(stdin, stdout).call
	if err := call("initialize", map[string]any{}, nil); err != nil {
		return 0, err
	}
	if err := call("vault/status", nil, nil); err != nil { // waits for the first scan
		return 0, err
	}
	var found []string
	for _, q := range queries {
		var res struct {
			Mode string `json:"mode"`
			Hits []struct {
				Path string `json:"path"`
			} `json:"hits"`
		}
		if err := call("vault/search", map[string]any{"query": q, "mode": mode, "limit": 20}, &res); err != nil {
			return 0, err
		}
		if mode != "" && res.Mode != mode {
			return 0, fmt.Errorf("vault/search %q ran %q, want %q: are the vectors there?", q, res.Mode, mode)
		}
		for _, h := range res.Hits[:min(len(res.Hits), 1)] {
			found = append(found, h.Path)
		}
	}
	if len(found) == 0 {
		return 0, errors.New("no search found a note to ask the related notes of")
	}
	for _, p := range found {
		var res struct {
			Notes  []json.RawMessage `json:"notes"`
			Reason string            `json:"reason"`
		}
		if err := call("vault/related", map[string]any{"path": p}, &res); err != nil {
			return 0, err
		}
		if mode != "" && len(res.Notes) == 0 {
			return 0, fmt.Errorf("vault/related %s: no notes (%s)", p, res.Reason)
		}
	}
	return editortest.VmHWM(cmd.Process.Pid)
}
