package edit

import "testing"

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		context        int
		want           string
	}{
		{name: "unchanged", old: "a\nb\n", new: "a\nb\n", context: 3, want: ""},
		{name: "a changed line with one line of context", old: "one\ntwo\nthree\nfour\n", new: "one\ntwo\n3\nfour\n", context: 1,
			want: "--- a/n.md\n+++ b/n.md\n@@ -2,3 +2,3 @@\n two\n-three\n+3\n four\n"},
		{name: "no final line break is diffed as one", old: "one\ntwo", new: "one\ntwo\nthree", context: 3,
			want: "--- a/n.md\n+++ b/n.md\n@@ -1,2 +1,3 @@\n one\n two\n+three\n"},
		{name: "a new note", old: "", new: "hello", context: 3,
			want: "--- a/n.md\n+++ b/n.md\n@@ -0,0 +1 @@\n+hello\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff("a/n.md", "b/n.md", tc.old, tc.new, tc.context); got != tc.want {
				t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tc.old, tc.new, got, tc.want)
			}
		})
	}
}
