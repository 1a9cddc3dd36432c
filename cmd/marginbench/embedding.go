package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/vectors"
)

// embeddingFigures embeds the vault of n notes from scratch with margin
// embed (the built binary) against the fake Ollama embedder, edits one
// note and embeds again: the throughput against the fake, and what a
// changed note costs in calls, texts and tokens. Then the open of margin
// status's workspace with the notes' vectors against one without, paired.
// The fake answers at once, so the throughput is margin's own ceiling
// (chunking, requests, SQLite), not a model's.
func (b *bench) embeddingFigures(dir string, n int) error {
	fmt.Fprintf(os.Stderr, "measuring embedding on %d notes\n", n)
	label := sizeLabel(n)
	return withTB(func(tb testing.TB) error {
		fake := llmtest.NewOllama(tb, "embeddinggemma")
		state := filepath.Join(dir, ".margin")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(filepath.Join(state, vectors.FileName+suffix))
		}
		embed := func() (time.Duration, error) {
			cmd := exec.Command(b.bin, "embed", "--vault", dir)
			cmd.Env = append(os.Environ(), "OLLAMA_HOST="+fake.URL)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return 0, fmt.Errorf("margin embed: %v\n%s", err, out)
			}
			return time.Since(start), nil
		}
		d, err := embed()
		if err != nil {
			return err
		}
		chunks, calls := fake.Embedder.Inputs(), len(fake.Embedder.Calls())
		b.add(row{figure: label("embedding throughput (margin embed, fake server)"), target: "reported",
			measured: fmt.Sprintf("%.0f chunks/s (%d chunks in %d calls, %s incl. process start)", float64(chunks)/d.Seconds(), chunks, calls, round(d))})

		p, restore, err := editOneNote(dir)
		if err != nil {
			return err
		}
		defer restore()
		texts, tokens := fake.Embedder.Inputs(), fake.Embedder.Tokens()
		calls = len(fake.Embedder.Calls())
		if _, err := embed(); err != nil {
			return err
		}
		b.add(row{figure: label("embedding a changed note (one section edited)"), target: "reported",
			measured: fmt.Sprintf("%d calls, %d texts, %d tokens (%s)", len(fake.Embedder.Calls())-calls, fake.Embedder.Inputs()-texts, fake.Embedder.Tokens()-tokens, p)})

		return b.statusOpenRatio(dir, fake, label)
	})
}

// editOneNote appends a sentence to the last section of the vault's first
// note with two or more headings, and returns its path and how to undo
// the edit.
func editOneNote(dir string) (string, func(), error) {
	var found, rel string
	var was []byte
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != dir {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Count(string(data), "\n## ") >= 2 {
			found, was = p, data
			rel, _ = filepath.Rel(dir, p)
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if found == "" {
		return "", nil, fmt.Errorf("no note of two sections in %s", dir)
	}
	edited := strings.TrimRight(string(was), "\n") + " One more sentence, written for the benchmark.\n"
	if err := os.WriteFile(found, []byte(edited), 0o644); err != nil {
		return "", nil, err
	}
	return rel, func() { os.WriteFile(found, was, 0o644) }, nil
}

// statusOpenRatio times, in alternating pairs with and without the
// notes' vectors (the Embeddings part), margin serve's warm start (open
// the workspace, run it until its first scan is done; the vectors open
// after it, and their queue finds nothing to do) and what margin status
// does before it prints (open with the index brought up to date, read the
// status, with vectors the embedding's too, close), and reports the
// median ratios.
func (b *bench) statusOpenRatio(dir string, fake *llmtest.Ollama, label func(string) string) error {
	client, err := llm.New(fake.Config())
	if err != nil {
		return err
	}
	ctx := context.Background()
	serve := func(parts workspace.Parts) (time.Duration, error) {
		start := time.Now()
		ws, err := workspace.Open(ctx, workspace.Options{Vault: vault.Options{Dir: dir}, Parts: parts, LLM: client,
			Embed: workspace.EmbedOptions{Background: true}})
		if err != nil {
			return 0, err
		}
		runCtx, stop := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			ws.Run(runCtx)
		}()
		err = ws.Vault.WaitReady(ctx)
		d := time.Since(start)
		stop()
		<-ran
		return d, errors.Join(err, ws.Close())
	}
	status := func(parts workspace.Parts) (time.Duration, error) {
		start := time.Now()
		ws, err := workspace.Open(ctx, workspace.Options{Vault: vault.Options{Dir: dir}, Parts: parts, LLM: client, Scan: true})
		if err != nil {
			return 0, err
		}
		defer ws.Close()
		if _, err := ws.Vault.Status(ctx); err != nil {
			return 0, err
		}
		if ws.Vectors != nil {
			if _, err := ws.Vectors.Status(ctx); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	for _, f := range []struct {
		name, target string
		measure      func(workspace.Parts) (time.Duration, error)
	}{
		{"margin serve's warm start with the notes' vectors", "≤ 1.05× without", serve},
		{"margin status's work with the embedding's lines", "reported", status},
	} {
		var with, without []time.Duration
		var ratios []float64
		for i := range 3 * b.runs {
			a, err := f.measure(0)
			if err != nil {
				return err
			}
			e, err := f.measure(workspace.Embeddings)
			if err != nil {
				return err
			}
			if i == 0 {
				continue // the first pair warms the page cache
			}
			without, with = append(without, a), append(with, e)
			ratios = append(ratios, e.Seconds()/a.Seconds())
		}
		slices.Sort(ratios)
		r := ratios[len(ratios)/2]
		pass := ""
		if f.target != "reported" {
			pass = check(r <= 1.05)
		}
		b.add(row{figure: label(f.name), target: f.target,
			measured: round(median(with)).String(), baseline: "without: " + round(median(without)).String(),
			ratio: fmt.Sprintf("%.2f× (median of %d pairs)", r, len(ratios)), pass: pass})
	}
	return nil
}
