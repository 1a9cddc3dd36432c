package note

import (
	"fmt"
	"os"
	"testing"

	"github.com/margin-md/margin/vault/vaulttest"
)

// BenchmarkParse measures a realistic ~2 KB task note. The cold index must
// reach 10,000 notes/s on 2 cores including SQLite writes, which leaves Parse
// a few tens of microseconds per note.
func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"bench", "daily", "task"} {
		src, err := os.ReadFile("testdata/" + name + ".md")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				Parse(goldenPaths[name], src, testOptions)
			}
		})
	}
}

// BenchmarkParseHostile measures each pathological note of
// vaulttest.Hostile, at 64 KiB and near the 5 MiB size cap; without the
// parse budget some took minutes or gigabytes.
func BenchmarkParseHostile(b *testing.B) {
	for _, size := range []int{64 << 10, 5<<20 - 4096} {
		for _, h := range vaulttest.Hostile {
			src := h.Make(size)
			b.Run(fmt.Sprintf("%s/%dKiB", h.Name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for b.Loop() {
					Parse("Daily/2026-11-22.md", src, testOptions)
				}
			})
		}
	}
}
