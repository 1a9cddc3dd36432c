package watch

import "testing"

func TestDefaultIgnore(t *testing.T) {
	ignore, err := DefaultIgnore(".margin", []string{"Archive/**", "*.excalidraw.md", "/Inbox/tmp-*.md", "build/", "Projects/**/drafts"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel   string
		isDir bool
		want  bool
	}{
		{"", true, false},
		{"note.md", false, false},
		{"Daily/2026-01-02.md", false, false},
		{"UPPER.MD", false, false},
		{"Tasks", true, false},
		{"assets.d", true, false}, // a directory is not ignored for its extension
		{"picture.png", false, true},
		{"canvas.canvas", false, true},
		{".git", true, true},
		{".git/HEAD", false, true},
		{"sub/.git/x.md", false, true},
		{".obsidian", true, true},
		{".obsidian/snippets/x.md", false, true},
		{".trash/old.md", false, true},
		{".margin", true, true},
		{".margin/cache.md", false, true},
		{".marginal.md", false, true}, // hidden, as Obsidian hides it
		{".github/ISSUE_TEMPLATE/bug.md", false, true},
		{"sub/.claude", true, true},
		{"sub/.claude/agents/x.md", false, true},
		{".note.md.swp", false, true},
		{".note.md.swx", false, true},
		{"note.md~", false, true},
		{"4913", false, true},
		{".#note.md", false, true},
		{".margin-123.tmp", false, true},
		{"Archive", true, true},
		{"Archive/2019/a.md", false, true},
		{"Archived.md", false, false},
		{"a/b/drawing.excalidraw.md", false, true},
		{"Inbox/tmp-1.md", false, true},
		{"x/Inbox/tmp-1.md", false, false}, // a leading slash anchors the glob
		{"build", true, true},
		{"build/out.md", false, true},
		{"build.md", false, false},
		{"Projects/a/b/drafts/x.md", false, true},
		{"Projects/drafts", true, true},
		{"Projects/a/final.md", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			if got := ignore(tt.rel, tt.isDir); got != tt.want {
				t.Errorf("ignore(%q, dir=%v) = %v, want %v", tt.rel, tt.isDir, got, tt.want)
			}
		})
	}
}

func TestDefaultIgnoreRejects(t *testing.T) {
	tests := []struct {
		name     string
		stateDir string
		globs    []string
	}{
		{"absolute state dir", "/var/margin", nil},
		{"malformed glob", "", []string{"notes/[a-"}},
		{"empty glob", "", []string{"/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DefaultIgnore(tt.stateDir, tt.globs); err == nil {
				t.Errorf("DefaultIgnore(%q, %q) accepted", tt.stateDir, tt.globs)
			}
		})
	}
}
