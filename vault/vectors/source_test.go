package vectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// kitchen is a vault of our own: a note with nested headings, a moved
// copy's worth of text, a daily note with entries.
var kitchen = map[string]string{
	"Bread.md": `# Bread

Flour, water, salt.

## Dough

Knead ten minutes.

### Rising

Two hours, covered.

## Baking

Hot oven, steam first.
`,
	"Soup.md": `---
title: Winter soup
---
Leeks and potatoes, slowly.
`,
	"daily/2026-03-01.md": `## 09:30
Fed the starter.

## 18:00
Baked two loaves.
`,
}

func indexVault(t *testing.T, path string, files map[string]string) *index.Index {
	t.Helper()
	ctx := context.Background()
	ix, err := index.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	opts := note.Options{Daily: note.DailyFormat{Folder: "daily", Format: mustMoment(t, "YYYY-MM-DD")}}
	var us []index.Update
	for p, src := range files {
		sum := sha256.Sum256([]byte(src))
		us = append(us, index.Update{Path: p, Note: note.Parse(p, []byte(src), opts), Content: []byte(src),
			Stat: index.FileStat{Size: int64(len(src)), MtimeNS: t0.UnixNano() + int64(len(p)), Hash: hex.EncodeToString(sum[:])}})
	}
	if err := ix.Apply(ctx, us); err != nil {
		t.Fatal(err)
	}
	return ix
}

func TestFromIndex(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ix := indexVault(t, filepath.Join(dir, "index.db"), kitchen)
	src := FromIndex(ix)

	n, err := src.Note(ctx, "Bread.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range chunksOf(n, 200) {
		got = append(got, c.text)
	}
	want := []string{
		"Bread\n\nFlour, water, salt.",
		"Bread > Dough\n\nKnead ten minutes.",
		"Bread > Dough > Rising\n\nTwo hours, covered.",
		"Bread > Baking\n\nHot oven, steam first.",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Bread.md chunks:\n%q\nwant\n%q", got, want)
	}
	if _, err := src.Note(ctx, "Nowhere.md"); !errors.Is(err, ErrGone) {
		t.Errorf("Note of an unknown path: %v, want ErrGone", err)
	}

	s := openStore(t, dir)
	defer s.Close()
	emb := newWordEmbedder("fake/words/64")
	r := start(t, s, src, emb, QueueOptions{})
	p := r.waitIdle(t)
	first := len(emb.embedded())
	if p.Embedded != first || p.Left != 0 || first < 7 {
		t.Fatalf("%d texts embedded, progress %+v", first, p)
	}
	r.stop(t)

	// The index is deleted and rebuilt: nothing is embedded again.
	ix.Close()
	if err := os.Remove(filepath.Join(dir, "index.db")); err != nil {
		t.Fatal(err)
	}
	ix = indexVault(t, filepath.Join(dir, "index.db"), kitchen)
	defer ix.Close()
	r = start(t, s, FromIndex(ix), emb, QueueOptions{})
	p = r.waitIdle(t)
	if n := len(emb.embedded()) - first; n != 0 || p.Embedded != first {
		t.Errorf("after an index rebuild, %d texts embedded again, progress %+v", n, p)
	}
	ms, err := s.Nearest(ctx, wordVector("starter", 64), 1, nil)
	if err != nil || len(ms) != 1 || ms[0].Path != "daily/2026-03-01.md" {
		t.Errorf("Nearest(starter) = %+v, %v", ms, err)
	}
}

func mustMoment(t *testing.T, format string) note.Moment {
	t.Helper()
	m, err := note.ParseMoment(format)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
