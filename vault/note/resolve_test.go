package note

import "testing"

func TestLinkKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Note", "note"},
		{"Folder/Note.md", "folder/note"},
		{" /Folder/Note.MD ", "folder/note"},
		{"./a/./b", "a/b"},
		{"a//b/../c.md", "a/c"},
		{"/", ""},
		{"", ""},
		{"Über.md", "über"},
		{"pic.PNG", "pic.png"},
		{".md", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := LinkKey(tt.in); got != tt.want {
				t.Errorf("LinkKey(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
