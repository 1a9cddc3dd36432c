package llm

import "testing"

func TestSaysNothing(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"", true},
		{"ok", true},
		{"OK.", true},
		{"N/A", true},
		{"- [ ] ok\n- none", true},
		{"QA left.", false},
		{"No blockers.", false},
		{"締切まで三日", false},
	} {
		if got := SaysNothing(tc.text); got != tc.want {
			t.Errorf("SaysNothing(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
