package note

import (
	"os"
	"testing"
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
