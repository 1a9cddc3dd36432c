package server_test

import (
	"os"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// BenchmarkLensAndHover is one code lens request on a note and one hover
// on a link to it, the calls an editor makes as a person moves about:
// without vectors (the model is away, nothing embedded) and with them.
// MARGIN_BENCH_BASELINE names another margin binary (say, one built from
// main before the Related lens) to time without vectors in the same run,
// for the ratio.
func BenchmarkLensAndHover(b *testing.B) {
	bench := func(b *testing.B, wrapper []string, embedded bool) {
		fake := llmtest.NewOllama(b, "embeddinggemma")
		if !embedded {
			fake.Stop()
		}
		dir := writeVault(b, meaningVault)
		e := editortest.StartWrapped(b, wrapper, embedEnv(fake.URL))
		e.Initialize(dir)
		if embedded {
			waitEmbedded(b, e)
		} else {
			poll(b, "the vectors open", func() bool { return embeddingStatus(b, e).State != "opening" })
		}
		b.ResetTimer()
		for range b.N {
			lensesOf(b, e, dir, "Notes/Sleep.md")
			hoverOn(b, e, dir, "Notes/Naps.md", 2, 31)
		}
	}
	if base := os.Getenv("MARGIN_BENCH_BASELINE"); base != "" {
		// sh runs the baseline in place of the binary the test built: that
		// one's path is $0, `serve` and its arguments "$@".
		b.Run("baseline/no-vectors", func(b *testing.B) { bench(b, []string{"sh", "-c", `exec "$MARGIN_BENCH_BASELINE" "$@"`}, false) })
	}
	b.Run("no-vectors", func(b *testing.B) { bench(b, nil, false) })
	b.Run("embedded", func(b *testing.B) { bench(b, nil, true) })
}
