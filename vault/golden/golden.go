// Package golden measures how well search puts the right notes first: a
// set of questions, each with the notes that answer it, asked of the
// vaults under testdata, scored by nDCG@5, MRR and Hit@1. make bench
// prints the figures and a test holds the default mode to a floor; both
// score here.
package golden

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

// Question is one line of questions.jsonl.
type Question struct {
	Vault string   `json:"vault"` // a key of Vaults
	Lang  string   `json:"lang"`  // the question's language
	Q     string   `json:"q"`
	Want  []string `json:"want"` // the notes that answer it, vault paths
	// Tier is "semantic" for a question that keyword search is not
	// expected to answer (asked in another language than its notes'):
	// keyword figures leave it out.
	Tier string `json:"tier,omitempty"`
}

// Vaults are the vaults the questions are asked of, by name, relative to
// the repository's root.
var Vaults = map[string]string{
	"golden": "testdata/golden/vault",
	"sample": "testdata/vault",
}

// QuestionsFile is the golden set, relative to the repository's root.
const QuestionsFile = "testdata/golden/questions.jsonl"

// Load reads a golden set.
func Load(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var qs []Question
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q Question
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if _, ok := Vaults[q.Vault]; !ok || q.Q == "" || len(q.Want) == 0 {
			return nil, fmt.Errorf("%s:%d: want a known vault, a question and its notes", path, line)
		}
		qs = append(qs, q)
	}
	return qs, sc.Err()
}

// Scores are the figures of a set of questions, each averaged over them.
type Scores struct {
	Questions int
	NDCG5     float64 // normalized discounted cumulative gain of the first five hits
	MRR       float64 // mean reciprocal rank of the first right note (0 when none is found)
	Hit1      float64 // share of questions whose first hit is right
}

// Score scores the ranked paths of each question (ranked[i] for qs[i]),
// every right note as relevant as another.
func Score(qs []Question, ranked [][]string) Scores {
	s := Scores{Questions: len(qs)}
	if len(qs) == 0 {
		return s
	}
	for i, q := range qs {
		var dcg, ideal float64
		first := -1 // the rank of the first right note
		for j, p := range ranked[i] {
			if !slices.Contains(q.Want, p) {
				continue
			}
			if first < 0 {
				first = j
			}
			if j < 5 {
				dcg += 1 / math.Log2(float64(j+2))
			}
		}
		if first >= 0 {
			s.MRR += 1 / float64(first+1)
		}
		if first == 0 {
			s.Hit1++
		}
		for j := range min(len(q.Want), 5) {
			ideal += 1 / math.Log2(float64(j+2))
		}
		s.NDCG5 += dcg / ideal
	}
	n := float64(len(qs))
	s.NDCG5, s.MRR, s.Hit1 = s.NDCG5/n, s.MRR/n, s.Hit1/n
	return s
}

// Result is the figures of one mode on one vault ("all" for every vault).
type Result struct {
	Vault  string
	Mode   index.Mode
	Scores Scores
}

// Depth is how many hits of a question are read: MRR counts a right note
// down to there.
const Depth = 10

// Keyword asks the keyword questions of qs (not those left to the
// semantic tier) of copies of the vaults under root, the repository's
// root, in each mode, and scores each mode on each vault and on all.
func Keyword(ctx context.Context, root string, qs []Question, modes []index.Mode) ([]Result, error) {
	ranked := make(map[index.Mode][][]string)
	var asked []Question
	for _, name := range slices.Sorted(maps.Keys(Vaults)) {
		var these []Question
		for _, q := range qs {
			if q.Vault == name && q.Tier == "" {
				these = append(these, q)
			}
		}
		if len(these) == 0 {
			continue
		}
		err := withVault(ctx, filepath.Join(root, Vaults[name]), func(ix *index.Index, _ string) error {
			for _, m := range modes {
				for _, q := range these {
					hits, err := ix.Search(ctx, index.Query{Text: q.Q, Mode: m, Limit: Depth})
					if err != nil {
						return fmt.Errorf("%q: %w", q.Q, err)
					}
					var paths []string
					for _, h := range hits {
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

// scoreModes scores each mode's ranking of asked (ranked[m][i] for
// asked[i]) on each vault and on all.
func scoreModes(asked []Question, ranked map[index.Mode][][]string, modes []index.Mode) []Result {
	var out []Result
	for _, m := range modes {
		out = append(out, Result{Vault: "all", Mode: m, Scores: Score(asked, ranked[m])})
		for _, name := range slices.Sorted(maps.Keys(Vaults)) {
			var sub []Question
			var subRanked [][]string
			for i, q := range asked {
				if q.Vault == name {
					sub, subRanked = append(sub, q), append(subRanked, ranked[m][i])
				}
			}
			out = append(out, Result{Vault: name, Mode: m, Scores: Score(sub, subRanked)})
		}
	}
	return out
}

// withVault indexes a copy of the vault at dir (an index writes its state
// inside the vault) and calls f with its index and margin's state dir.
func withVault(ctx context.Context, dir string, f func(ix *index.Index, state string) error) error {
	tmp, err := os.MkdirTemp("", "margin-golden-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		return err
	}
	v, err := vault.Open(ctx, vault.Options{Dir: tmp})
	if err != nil {
		return err
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		return err
	}
	return f(v.Index(), v.StateDir())
}
