package index

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkLinkedTasks asks, for each daily note of the 10k vault in turn,
// which tasks its entries link: what the agents' routing asks for every
// daily note a change touches (a checkout rewrites dozens at once).
func BenchmarkLinkedTasks(b *testing.B) {
	ix := buildBench(b)
	ctx := context.Background()
	var dailies []string
	for _, f := range benchFiles(b) {
		if strings.HasPrefix(f.path, "Daily/") {
			dailies = append(dailies, f.path)
		}
	}
	linked := 0
	for _, d := range dailies[:100] {
		ts, err := ix.LinkedTasks(ctx, d)
		if err != nil {
			b.Fatal(err)
		}
		linked += len(ts)
	}
	if linked == 0 {
		b.Fatalf("no daily note of %d links a task", len(dailies))
	}
	for i := 0; b.Loop(); i++ {
		if _, err := ix.LinkedTasks(ctx, dailies[i%len(dailies)]); err != nil {
			b.Fatal(err)
		}
	}
}
