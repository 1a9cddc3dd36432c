package server_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// Vaults shaped like real Obsidian vaults (testdata/shapes): margin reads
// their settings as Obsidian does, starts whatever they hold, and counts
// the user's notes apart from its own files.

// shapeVault copies testdata/shapes/<name> to a temporary vault.
func shapeVault(t *testing.T, name string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(filepath.Dir(here), "..", "testdata", "shapes", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func coveredFiles(t *testing.T, e *editortest.Editor) []string {
	t.Helper()
	var cov protocol.CoverageResult
	e.MustCall("vault/coverage", nil, &cov)
	var out []string
	for _, f := range cov.Files {
		out = append(out, f.Path+" "+string(f.State))
	}
	slices.Sort(out)
	return out
}

// A personal vault: a long-form daily format, Obsidian's templates with
// {{date}} placeholders, excluded files, hidden folders, a .gitignore, and
// margin's reports beside the user's notes.
func TestPersonalVaultShape(t *testing.T) {
	dir := shapeVault(t, "personal")
	// What a checkout adds: a git work tree and what it ignores.
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.MkdirAll(filepath.Join(dir, "node_modules", "pkg"), 0o755)
	os.WriteFile(filepath.Join(dir, "node_modules", "pkg", "README.md"), []byte("# pkg\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "Notes", "index.generated.md"), []byte("# generated\n"), 0o644)

	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	want := protocol.VaultStatus{Notes: 7, Outputs: 2, Tasks: 1, DailyNotes: 3, Templates: 2, ChecklistItems: 5}
	if st.Notes != want.Notes || st.Outputs != want.Outputs || st.Tasks != want.Tasks || st.DailyNotes != want.DailyNotes ||
		st.Templates != want.Templates || st.ChecklistItems != want.ChecklistItems || st.Failed != 0 || len(st.Warnings) != 0 {
		t.Errorf("status %+v, want %+v", st, want)
	}
	got := coveredFiles(t, e)
	wantFiles := []string{
		"Journal/Friday, November 20th 2026.md indexed", "Journal/Saturday, November 21st 2026.md indexed",
		"Journal/Sunday, November 22nd 2026.md indexed", "Margin/Journal/Bike repair.md indexed",
		"Margin/Reports/Bike repair.md indexed", "Notes/Bike repair.md indexed", "Notes/Reading list.md indexed",
		"Templates/Daily.md indexed", "Templates/Project.md indexed",
	}
	if strings.Join(got, "\n") != strings.Join(wantFiles, "\n") {
		t.Errorf("coverage:\n%s\nwant (no hidden, excluded or git-ignored file):\n%s", strings.Join(got, "\n"), strings.Join(wantFiles, "\n"))
	}
	var res protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": "outcome placeholder"}, &res)
	if len(res.Hits) != 1 || res.Hits[0].Path != "Templates/Project.md" {
		t.Errorf("search in a template: %+v", res.Hits)
	}
	e.MustCall("vault/search", map[string]any{"query": "lighthouse", "from": "2026-11-22", "to": "2026-11-22"}, &res)
	if len(res.Hits) != 1 || res.Hits[0].Date != "2026-11-22" {
		t.Errorf("a long-form daily note by date: %+v", res.Hits)
	}
}

// A daily format margin cannot read is a warning, not a failed start.
func TestUnreadableDailyFormatStillStarts(t *testing.T) {
	dir := shapeVault(t, "personal")
	os.WriteFile(filepath.Join(dir, ".obsidian", "daily-notes.json"), []byte(`{"folder": "Journal", "format": "YYYY-MM-DD HH:mm"}`), 0o644)
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "HH") || st.Notes == 0 || st.DailyNotes != 0 {
		t.Errorf("status %+v: want the format named in a warning and the vault indexed", st)
	}
}

// The Tasks plugin's demo vault: nested daily folders, Templater templates
// with <% … %> code, and tasks as `- [ ] #task` lines rather than notes.
func TestTasksDemoVaultShape(t *testing.T) {
	dir := shapeVault(t, "tasks-demo")
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	var st protocol.StatusResult
	e.MustCall("vault/status", nil, &st)
	want := protocol.VaultStatus{Notes: 6, DailyNotes: 2, Templates: 2, ChecklistItems: 8}
	if st.Notes != want.Notes || st.Outputs != 0 || st.Tasks != 0 || st.DailyNotes != want.DailyNotes ||
		st.Templates != want.Templates || st.ChecklistItems != want.ChecklistItems || st.Failed != 0 {
		t.Errorf("status %+v, want %+v", st, want)
	}
	// The note named with a wrong weekday is not a daily note, and is
	// said to look like one.
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "2026-11-22-Monday.md") {
		t.Errorf("warnings %q: want the one dated note that is not a daily note", st.Warnings)
	}
	var res protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": "fence", "from": "2026-11-22", "to": "2026-11-22"}, &res)
	if len(res.Hits) != 1 || !strings.HasPrefix(res.Hits[0].Path, "Daily Notes/2026/11-November/") {
		t.Errorf("a nested daily note by date: %+v", res.Hits)
	}
}
