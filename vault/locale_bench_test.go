package vault

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkReadRules reads the rules of a vault whose daily folder holds
// 6,000 daily notes, as every open does.
func BenchmarkReadRules(b *testing.B) {
	dir := b.TempDir()
	day := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6000 {
		name := day.AddDate(0, 0, i).Format("2006-01-02") + ".md"
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	opts := Options{DailyFormat: "YYYY-MM-DD"}
	if r := readRules(dir, opts); len(r.Warnings) > 0 {
		b.Fatalf("warnings: %q", r.Warnings)
	}
	for b.Loop() {
		readRules(dir, opts)
	}
}
