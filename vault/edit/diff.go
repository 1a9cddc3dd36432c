package edit

import (
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Diff is what a change does to a text, old to new, as a unified diff
// with context lines around each change, the sides named from and to. A
// last line without a line break is diffed as if it had one, which a
// person or a model reads more easily than a "\ No newline" marker.
func Diff(from, to, old, new string, context int) string {
	old, new = withFinalNewline(old), withFinalNewline(new)
	// ToUnified fails only on edits inconsistent with old, and Lines
	// computes them from it.
	d, _ := udiff.ToUnified(from, to, old, udiff.Lines(old, new), context)
	return d
}

// withFinalNewline is s ending in a line break unless it is empty.
func withFinalNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}
