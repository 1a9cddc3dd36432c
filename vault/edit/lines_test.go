package edit

import (
	"errors"
	"testing"
)

func TestSetCheckbox(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		line   int
		expect string
		state  rune
		want   string // "" when an error is expected
		stale  bool   // the error must match ErrStale
	}{
		{"check", "# T\n- [ ] call Bob\n", 2, "call Bob", 'x', "# T\n- [x] call Bob\n", false},
		{"uncheck", "- [x] call Bob\n", 1, "call Bob", ' ', "- [ ] call Bob\n", false},
		{"cancel keeps fields", "- [ ] ship 📅 2026-11-25 ^c1\n", 1, "ship 📅 2026-11-25 ^c1", '-', "- [-] ship 📅 2026-11-25 ^c1\n", false},
		{"in progress, crlf", "a\r\n* [ ] b\r\nc\r\n", 2, " b ", '/', "a\r\n* [/] b\r\nc\r\n", false},
		{"ordered and nested", "1. x\n   2) [ ] y\n", 2, "y", 'x', "1. x\n   2) [x] y\n", false},
		{"in a callout", "> [!todo]\n> - [ ] z", 2, "z", 'x', "> [!todo]\n> - [x] z", false},
		{"unusual state replaced", "- [?] q\n", 1, "q", 'x', "- [x] q\n", false},
		{"text changed", "- [ ] call Bob today\n", 1, "call Bob", 'x', "", true},
		{"no longer a checklist item", "- call Bob\n", 1, "call Bob", 'x', "", true},
		{"link is not a box", "- [link](x) call\n", 1, "call", 'x', "", true},
		{"line gone", "- [ ] a\n", 2, "a", 'x', "", true},
		{"line zero", "- [ ] a\n", 0, "a", 'x', "", true},
		{"bad state", "- [ ] a\n", 1, "a", 'v', "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetCheckbox([]byte(tt.src), tt.line, tt.expect, tt.state)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				if errors.Is(err, ErrStale) != tt.stale {
					t.Fatalf("errors.Is(%v, ErrStale) = %v, want %v", err, !tt.stale, tt.stale)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReplaceLine(t *testing.T) {
	tests := []struct {
		name          string
		src           string
		line          int
		old, new      string
		want          string
		stale, refuse bool
	}{
		{"middle", "a\nb\nc\n", 2, "b", "B", "a\nB\nc\n", false, false},
		{"crlf kept", "a\r\nb\r\n", 1, "a", "A ✅ 2026-11-22", "A ✅ 2026-11-22\r\nb\r\n", false, false},
		{"crlf in expectation", "a\r\nb\r\n", 1, "a\r", "A", "A\r\nb\r\n", false, false},
		{"last line without newline", "a\nb", 2, "b", "", "a\n", false, false},
		{"changed", "a\nb\n", 2, "x", "y", "", true, false},
		{"trailing space matters", "a \n", 1, "a", "y", "", true, false},
		{"past the end", "a\n", 2, "", "y", "", true, false},
		{"new line spans lines", "a\n", 1, "a", "x\ny", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReplaceLine([]byte(tt.src), tt.line, tt.old, tt.new)
			switch {
			case tt.stale || tt.refuse:
				if err == nil || errors.Is(err, ErrStale) != tt.stale {
					t.Fatalf("got %q, %v; want an error (stale %v)", got, err, tt.stale)
				}
			case err != nil:
				t.Fatal(err)
			case string(got) != tt.want:
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCommonEnds(t *testing.T) {
	for _, tc := range []struct {
		a, b     string
		pre, suf int
	}{
		{"abc", "abc", 3, 0},
		{"abXc", "abYc", 2, 1},
		{"aa", "aaa", 2, 0},  // the end never overlaps the start
		{"abab", "ab", 2, 0}, // nor the shorter one's
		{"", "x", 0, 0},
		{"xyz", "wyz", 0, 2},
	} {
		if pre, suf := CommonEnds([]byte(tc.a), []byte(tc.b)); pre != tc.pre || suf != tc.suf {
			t.Errorf("CommonEnds(%q, %q) = %d, %d, want %d, %d", tc.a, tc.b, pre, suf, tc.pre, tc.suf)
		}
	}
}
