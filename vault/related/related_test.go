package related_test

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/related"
	"github.com/margin-md/margin/vault/vectors"
)

// words embeds a text as the normalised sum of its words' hashed
// directions: texts sharing words are near.
type words struct{}

func (words) Fingerprint() string { return "test/words@64" }
func (words) MaxTokens() int      { return 500 }
func (words) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 64)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			h := fnv.New64a()
			h.Write([]byte(strings.Trim(w, ".,[]#>")))
			s := h.Sum64()
			for d := range v {
				if s>>(d%64)&1 == 1 {
					v[d]++
				} else {
					v[d]--
				}
			}
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		for d := range v {
			v[d] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}

// embedded opens a vault of notes, indexes it and embeds it.
func embedded(t *testing.T, notes map[string]string) (*vault.Vault, *vectors.Store) {
	t.Helper()
	dir := t.TempDir()
	for p, text := range notes {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s, err := vectors.Open(ctx, filepath.Join(t.TempDir(), vectors.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	idle := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	q := vectors.NewQueue(s, vectors.FromIndex(v.Index()), words{}, vectors.QueueOptions{OnProgress: func(p vectors.Progress) {
		if p.State == vectors.Idle {
			select {
			case <-idle:
			default:
				close(idle)
			}
		}
	}})
	done := make(chan error)
	go func() { done <- q.Run(runCtx) }()
	select {
	case <-idle:
	case <-time.After(time.Minute):
		t.Fatal("the queue never went idle")
	}
	stop()
	<-done
	return v, s
}

func TestFindLeavesOutTheNoteAndItsLinks(t *testing.T) {
	v, s := embedded(t, map[string]string{
		"Comet.md":        "# Comet\n\nquasar nebula galaxy comet tail\n\nSee [[Telescope]] and [[Nowhere]].\n",
		"Telescope.md":    "# Telescope\n\nquasar nebula galaxy comet lens\n",
		"Observatory.md":  "# Observatory\n\nquasar nebula galaxy comet dome\n",
		"Star chart.md":   "# Star chart\n\nquasar nebula galaxy comet map\n\nFrom [[Comet]].\n",
		"Soup.md":         "# Soup\n\nleek potato onion broth\n",
		"Notes/Planet.md": "# Planet\n\nquasar nebula orbit\n",
		// margin's outputs and the vault's templates are no notes a person
		// links, however near.
		"Margin/Templates/comet.md": "# Comet\n\nquasar nebula galaxy comet tail\n",
		"Margin/Reports/Comet.md":   "# Comet\n\nquasar nebula galaxy comet tail dome\n",
		"Templates/Sky object.md":   "# {{title}}\n\nquasar nebula galaxy comet tail\n",
		".obsidian/templates.json":  `{"folder": "Templates"}`,
	})
	ctx := context.Background()
	got, err := related.Find(ctx, v.Index(), s, "Comet.md", 10)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, n := range got {
		paths = append(paths, n.Path)
	}
	if len(got) == 0 || got[0].Path != "Observatory.md" || got[0].Line != 1 || got[0].Heading != "Observatory" {
		t.Errorf("related to Comet = %+v, want Observatory.md first, at its heading", got)
	}
	for _, p := range paths {
		switch p {
		case "Comet.md", "Telescope.md", "Star chart.md", "Margin/Templates/comet.md", "Margin/Reports/Comet.md", "Templates/Sky object.md":
			t.Errorf("related to Comet lists %s (itself, a note it links, a note linking it, margin's output, a template): %v", p, paths)
		}
	}
	if got, err := related.Find(ctx, v.Index(), s, "Comet.md", 1); err != nil || len(got) != 1 || got[0].Path != "Observatory.md" {
		t.Errorf("limit 1 = %+v, %v; want Observatory.md alone", got, err)
	}
	if _, err := related.Find(ctx, v.Index(), s, "Missing.md", 3); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("an unknown note: %v, want index.ErrNotFound", err)
	}
}
