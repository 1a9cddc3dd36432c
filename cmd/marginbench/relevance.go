package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/margin-md/margin/vault/golden"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

// relevance scores keyword search on the golden set (see vault/golden),
// in the default mode and in the others, from root, the repository's
// root; then keyword (auto), semantic and hybrid search on every question
// with the notes embedded by the fake embedder (golden.Meanings): figures
// of the fusion and the filters, not of a real model.
func (b *bench) relevance(root string) error {
	fmt.Fprintln(os.Stderr, "scoring search on the golden set")
	qs, err := golden.Load(filepath.Join(root, golden.QuestionsFile))
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Tier != "" {
			b.semanticQuestions++
		}
	}
	b.golden, err = golden.Keyword(context.Background(), root, qs, []index.Mode{index.ModeAuto, index.ModeAll, index.ModeAny, index.ModePhrase})
	if err != nil {
		return err
	}
	b.meaning, err = golden.ByMeaning(context.Background(), root, qs, []index.Mode{index.ModeAuto, retrieve.ModeSemantic, retrieve.ModeHybrid},
		golden.NewEmbedder(), retrieve.DefaultFusion)
	return err
}

// printRelevance prints the golden set's figures, if they were measured.
func (b *bench) printRelevance(w io.Writer) {
	if b.golden == nil {
		return
	}
	n := 0
	for _, r := range b.golden {
		if r.Vault == "all" {
			n = r.Scores.Questions
			break
		}
	}
	fmt.Fprintf(w, "\nrelevance (%s: %d keyword questions; %d in another language than their notes left to semantic search)\n",
		golden.QuestionsFile, n, b.semanticQuestions)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "search\tvault\tquestions\tnDCG@5\tMRR\tHit@1")
	names := map[index.Mode]string{index.ModeAuto: "keyword, auto (default)", index.ModeAll: "keyword, all (default before)"}
	for _, r := range b.golden {
		name := names[r.Mode]
		if name == "" {
			name = "keyword, " + string(r.Mode)
		}
		s := r.Scores
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\n", name, r.Vault, s.Questions, s.NDCG5, s.MRR, s.Hit1)
	}
	tw.Flush()
	f := retrieve.DefaultFusion
	fmt.Fprintf(w, "\nby meaning, every question (fake embedder: %s, golden.Meanings; hybrid fuses by RRF, K %g, keyword %g, meaning %g)\n",
		golden.NewEmbedder().Fingerprint(), f.K, f.Keyword, f.Meaning)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "search\tvault\tquestions\tnDCG@5\tMRR\tHit@1")
	for _, r := range b.meaning {
		name := string(r.Mode)
		if r.Mode == index.ModeAuto {
			name = "keyword, auto"
		}
		s := r.Scores
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\n", name, r.Vault, s.Questions, s.NDCG5, s.MRR, s.Hit1)
	}
	tw.Flush()
}
