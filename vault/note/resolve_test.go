package note

import "testing"

func TestResolve(t *testing.T) {
	r := NewResolver([]Ref{
		{Path: "Tasks/Ship v2.md", Aliases: []string{"Importer", "v2"}},
		{Path: "Projects/Alpha/Plan.md"},
		{Path: "Projects/Beta/Plan.md"},
		{Path: "Projects/Beta/Notes/Plan.md"},
		{Path: "Readme.md"},
		{Path: "Docs/Readme.md"},
		{Path: "People/Alice.md", Aliases: []string{"Al"}},
		{Path: "People/Alan.md", Aliases: []string{"Al"}},
		{Path: "Specs/Importer design.md"},
		{Path: "Case/A.md"},
		{Path: "Case/a.md"},
	})
	tests := []struct {
		name, from, target, want string
	}{
		{name: "exact path without extension", from: "x.md", target: "Tasks/Ship v2", want: "Tasks/Ship v2.md"},
		{name: "exact path with extension, any case", from: "x.md", target: "tasks/SHIP V2.MD", want: "Tasks/Ship v2.md"},
		{name: "vault-absolute", from: "x.md", target: "/Specs/Importer design.md", want: "Specs/Importer design.md"},
		{name: "relative markdown link", from: "Projects/Beta/Notes/Plan.md", target: "../Plan.md", want: "Projects/Beta/Plan.md"},
		{name: "relative sibling", from: "Specs/x.md", target: "./Importer design.md", want: "Specs/Importer design.md"},
		{name: "unique name", from: "x.md", target: "Alice", want: "People/Alice.md"},
		{name: "exact path beats name", from: "Docs/x.md", target: "Readme", want: "Readme.md"},
		{name: "ambiguous name from the same folder", from: "Projects/Alpha/Log.md", target: "Plan", want: "Projects/Alpha/Plan.md"},
		{name: "ambiguous name elsewhere", from: "x.md", target: "Plan"},
		{name: "path suffix", from: "x.md", target: "Alpha/Plan", want: "Projects/Alpha/Plan.md"},
		{name: "path suffix picks among equal names", from: "x.md", target: "Beta/Plan", want: "Projects/Beta/Plan.md"},
		{name: "alias", from: "x.md", target: "importer", want: "Tasks/Ship v2.md"},
		{name: "ambiguous alias from the same folder", from: "People/x.md", target: "Al"},
		{name: "unknown", from: "x.md", target: "Nowhere"},
		{name: "exact spelling among case variants", from: "x.md", target: "Case/a", want: "Case/a.md"},
		{name: "case variants otherwise ambiguous", from: "x.md", target: "case/A"},
		{name: "attachment is not a note", from: "x.md", target: "Alice.png"},
		{name: "empty target is the note itself", from: "People/Alice.md", target: "", want: "People/Alice.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := r.Resolve(tt.from, tt.target)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tt.from, tt.target, got, ok, tt.want)
			}
		})
	}
}

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
