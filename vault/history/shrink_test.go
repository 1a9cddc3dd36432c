package history

import (
	"bytes"
	"testing"
)

func TestShrinkKeepsOnlyWhatDiffersAndGrowsItBack(t *testing.T) {
	for _, c := range []struct {
		before, after string
		kept          int
	}{
		{"journal\n- a\n", "journal\n- a\n- b\n", 0},
		{"estimate: 1h\n", "estimate: 2h\n", 1},
		{"aaa", "aa", 1},
		{"aa", "aaa", 0},
		{"", "new", 0},
		{"old", "", 3},
		{"abcabc", "abc", 3},
	} {
		pre, suf, mid := shrink([]byte(c.before), []byte(c.after))
		if len(mid) != c.kept {
			t.Errorf("shrink(%q, %q) kept %q, want %d bytes", c.before, c.after, mid, c.kept)
		}
		if got := grow([]byte(c.after), pre, suf, mid); !bytes.Equal(got, []byte(c.before)) {
			t.Errorf("grow(shrink(%q, %q)) = %q", c.before, c.after, got)
		}
	}
}
