package main

import (
	"slices"
	"testing"
)

func TestDifferingShowsTheLinesThatDiffer(t *testing.T) {
	at, got := differing("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n", "a\nb\nX\nd\ne\n")
	if want := []string{"b\nc\nd\n", "b\nC\nd\n", "b\nX\nd\n"}; at != 2 || !slices.Equal(got, want) {
		t.Errorf("differing = %d %q, want 2 %q", at, got, want)
	}
	// A line added at the end, and texts that are prefixes of each other.
	if _, got := differing("a\n", "a\nb\n", "a\nb\n"); !slices.Equal(got, []string{"a\n", "a\nb\n", "a\nb\n"}) {
		t.Errorf("differing at the end = %q", got)
	}
}
