package llm

import (
	"strings"
	"testing"
)

func TestFencedCannotBeClosedByContent(t *testing.T) {
	got := Fenced("data: x", "a ```` b\n")
	if !strings.Contains(got, "`````\na ```` b\n`````") {
		t.Errorf("fence not longer than the content's backticks:\n%s", got)
	}
}
