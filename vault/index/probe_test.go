package index

import (
	"strings"
	"testing"
)

// TestProbesAgreeOnASCII: the in-place comparison for ASCII sections finds
// exactly what folding a copy finds.
func TestProbesAgreeOnASCII(t *testing.T) {
	texts := []string{
		"Slept 7h. BENCH 3x5 @ 185, felt heavy",
		"benc", "", "b", "@Bench`", "[[Bench Press]] #gym",
		"bEnCh press\nbench\tPRESS", "no match here at all",
	}
	p := probes{texts: []string{"bench", "press", "@bench", "h", "gym", "bench press", "é"}}
	for _, text := range texts {
		folded := probeFold(text)
		got := p.held(text)
		for i, probe := range p.texts {
			if want := strings.Contains(folded, probe); got[i] != want {
				t.Errorf("held(%q)[%q] = %v, folding a copy says %v", text, probe, got[i], want)
			}
		}
	}
}
