package retrieve

import (
	"slices"
	"testing"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vectors"
)

func pathsOf(fs []fused) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.path)
	}
	return out
}

// TestFuseOrder: notes found both ways come first, by the sum of their
// reciprocal ranks; a note found one way still comes.
func TestFuseOrder(t *testing.T) {
	hits := []index.Hit{{Path: "a"}, {Path: "b"}, {Path: "c"}}
	ms := []vectors.Match{{Path: "c"}, {Path: "d"}, {Path: "a"}}
	// K 1, Keyword 3: a 3/2+1/4, b 3/3, c 3/4+1/2, d 1/3.
	got := pathsOf(Fusion{K: 1, Keyword: 3, Meaning: 1}.fuse(hits, ms))
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("fused %v, want %v", got, want)
	}
	// Equal weights and a large K: c (ranks 3 and 1) passes b (rank 2).
	got = pathsOf(Fusion{K: 60, Keyword: 1, Meaning: 1}.fuse(hits, ms))
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("fused %v, want %v", got, want)
	}
	// Meaning alone weighs most: d (rank 2 by meaning) passes b.
	got = pathsOf(Fusion{K: 1, Keyword: 1, Meaning: 3}.fuse(hits, ms))
	if want := []string{"c", "a", "d", "b"}; !slices.Equal(got, want) {
		t.Errorf("fused %v, want %v", got, want)
	}
}

// TestDefaultFusionKeepsKeywordFirst: whatever the ranking by meaning,
// keyword search's first hit stays first under the default fusion, the
// tie with the second keyword hit found first by meaning going to it.
func TestDefaultFusionKeepsKeywordFirst(t *testing.T) {
	hits := []index.Hit{{Path: "named"}, {Path: "b"}, {Path: "c"}}
	ms := []vectors.Match{{Path: "b"}, {Path: "c"}, {Path: "x"}}
	fs := DefaultFusion.fuse(hits, ms)
	if fs[0].path != "named" {
		t.Errorf("fused %v, want named first", pathsOf(fs))
	}
	if fs[0].score != fs[1].score {
		t.Errorf("scores %v and %v: the test no longer holds the tie it means to", fs[0].score, fs[1].score)
	}
}
