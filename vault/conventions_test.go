package vault

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// writeVault writes files (vault path → content) under a new vault.
func writeVault(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func scanned(t *testing.T, opts Options) *Vault {
	t.Helper()
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	v, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return v
}

func kindOf(t *testing.T, v *Vault, p string) note.Kind {
	t.Helper()
	m, err := v.Index().Note(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m.Kind
}

func TestLongFormDailyFormatFromObsidian(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/daily-notes.json":                             `{"folder": "Journal", "format": "YYYY/MM-MMMM/dddd, MMMM Do YYYY"}`,
		"Journal/2026/11-November/Sunday, November 22nd 2026.md": "## 07:30\nran\n",
		"Journal/2026/11-November/Monday, November 22nd 2026.md": "wrong weekday\n",
	})
	v := scanned(t, Options{Dir: dir})
	if got := v.DailyFormat().Path(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)); got != "Journal/2026/11-November/Monday, November 23rd 2026.md" {
		t.Errorf("Path = %q", got)
	}
	m, err := v.Index().Note(context.Background(), "Journal/2026/11-November/Sunday, November 22nd 2026.md")
	if err != nil || m.Kind != note.KindDaily || m.Date != "2026-11-22" || len(m.Entries) != 1 {
		t.Errorf("daily note: %+v, %v", m, err)
	}
	if k := kindOf(t, v, "Journal/2026/11-November/Monday, November 22nd 2026.md"); k != note.KindNote {
		t.Errorf("a name that does not format back is a %s, want a note", k)
	}
	st, _ := v.Status(context.Background())
	if st.DailyNotes != 1 || len(st.Warnings) != 0 {
		t.Errorf("status %+v", st)
	}
}

func TestUnreadableDailyFormatIsAWarning(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/daily-notes.json": `{"folder": "Daily", "format": "YYYY-MM-DD HH:mm"}`,
		"Daily/22.11.2026.md":        "## 07:30\nran\n",
	})
	v := scanned(t, Options{Dir: dir, DailyFormat: "DD.MM.YYYY"})
	st, err := v.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "token HH is not supported") || !strings.Contains(st.Warnings[0], "DD.MM.YYYY") {
		t.Errorf("warnings %q: want the unreadable format named and the config's used", st.Warnings)
	}
	if st.DailyNotes != 1 || v.Rules().Daily.Folder != "Daily" {
		t.Errorf("status %+v: the folder still comes from Obsidian, the format from the config", st)
	}
}

func TestTemplatesAreSearchableButNeverTasksOrDaily(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/templates.json":                       `{"folder": "Templates"}`,
		".obsidian/plugins/templater-obsidian/data.json": `{"templates_folder": "_meta/templater", "trigger_on_file_creation": true}`,
		".obsidian/daily-notes.json":                     `{"folder": "", "format": "YYYY-MM-DD"}`,
		"Templates/Meeting.md":                           "---\ncreated: {{date}}\ntype: task\ntags: [meeting]\n---\n# {{title}}\nagenda placeholder\n",
		"Templates/2026-01-01.md":                        "a template named like a day\n",
		"_meta/templater/Daily.md":                       "---\ncreated: <% tp.date.now(\"YYYY-MM-DD\") %>\n---\n<%* tR += 'x' %>\n- [ ] plan\n",
		"Notes/Elsewhere.md":                             "---\ncreated: {{date}}\n---\nbody\n",
	})
	v := scanned(t, Options{Dir: dir, TaskFolders: []string{"Templates"}})
	for _, p := range []string{"Templates/Meeting.md", "Templates/2026-01-01.md", "_meta/templater/Daily.md"} {
		if k := kindOf(t, v, p); k != note.KindTemplate {
			t.Errorf("%s is a %s, want a template", p, k)
		}
	}
	st, _ := v.Status(context.Background())
	if st.Templates != 3 || st.Tasks != 0 || st.DailyNotes != 0 || st.Failed != 1 {
		t.Errorf("status %+v: want 3 templates, no task, no daily note, 1 failed (a placeholder outside the templates)", st)
	}
	hits, err := v.Index().Search(context.Background(), index.Query{Text: "agenda placeholder", Mode: index.ModeAll})
	if err != nil || len(hits) != 1 || hits[0].Path != "Templates/Meeting.md" {
		t.Errorf("search in templates: %+v, %v", hits, err)
	}
	failed, _ := v.Index().Coverage(context.Background(), index.StateFailed)
	if len(failed) != 1 || strings.Contains(failed[0].Reason, "map[") || !strings.Contains(failed[0].Reason, `"created"`) {
		t.Errorf("failed %+v: want the key named, not a Go type", failed)
	}
}

func TestIgnoredAsObsidianAndGitIgnoreThem(t *testing.T) {
	dir := writeVault(t, map[string]string{
		".obsidian/app.json":          `{"userIgnoreFilters": ["Archive/", "/\\.excalidraw\\.md$/", "/([/"]}`,
		"Archive/old.md":              "x\n",
		"Archived.md":                 "kept: the filter is the folder\n",
		"a/drawing.excalidraw.md":     "x\n",
		".github/ISSUE_TEMPLATE/b.md": "x\n",
		".claude/agents/x.md":         "x\n",
		"sub/.hidden.md":              "x\n",
		".gitignore":                  "node_modules/\n*.generated.md\n!keep.generated.md\n",
		"node_modules/pkg/README.md":  "x\n",
		"docs/out.generated.md":       "x\n",
		"docs/keep.generated.md":      "kept: re-included\n",
		"docs/.gitignore":             "drafts\n",
		"docs/drafts/d.md":            "x\n",
		"drafts/top.md":               "kept: docs/.gitignore is for docs only\n",
		"note.md":                     "kept\n",
	})
	// The vault sits in a repository whose root ignores build/.
	repo := filepath.Dir(dir)
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte("vault/build/\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "build"), 0o755)
	os.WriteFile(filepath.Join(dir, "build", "b.md"), []byte("x\n"), 0o644)

	want := []string{"Archived.md", "docs/keep.generated.md", "drafts/top.md", "note.md"}
	v := scanned(t, Options{Dir: dir})
	if got := coveredPaths(t, v); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("indexed %q, want %q", got, want)
	}
	if st, _ := v.Status(context.Background()); len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], `"/([/"`) {
		t.Errorf("warnings %q: want the bad filter named", st.Warnings)
	}
	v.Close()

	// respect_gitignore: false indexes what git ignores, and the new rules
	// take effect without removing the index.
	v = scanned(t, Options{Dir: dir, NoGitignore: true})
	got := coveredPaths(t, v)
	if len(got) != len(want)+4 {
		t.Errorf("without git's rules indexed %q", got)
	}
}

func coveredPaths(t *testing.T, v *Vault) []string {
	t.Helper()
	cov, err := v.Index().Coverage(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range cov {
		out = append(out, f.Path)
	}
	return out
}

func TestChangedRulesReclassifyEveryNote(t *testing.T) {
	dir := writeVault(t, map[string]string{
		"Notes/Ship it.md":    "# Ship it\n",
		"Daily/2026-11-22.md": "## 07:30\nran\n",
		"Log/22.11.2026.md":   "## 07:30\nran\n",
	})
	v := scanned(t, Options{Dir: dir})
	if k := kindOf(t, v, "Notes/Ship it.md"); k != note.KindNote {
		t.Fatalf("before: %s", k)
	}
	v.Close()

	v = scanned(t, Options{Dir: dir, TaskFolders: []string{"Notes"}, DailyFolder: "Log", DailyFormat: "DD.MM.YYYY"})
	for p, want := range map[string]note.Kind{"Notes/Ship it.md": note.KindTask, "Daily/2026-11-22.md": note.KindNote, "Log/22.11.2026.md": note.KindDaily} {
		if k := kindOf(t, v, p); k != want {
			t.Errorf("%s is a %s after the rules changed, want %s", p, k, want)
		}
	}
	v.Close()

	// The same rules again: nothing is read.
	v, err := Open(context.Background(), Options{Dir: dir, TaskFolders: []string{"Notes"}, DailyFolder: "Log", DailyFormat: "DD.MM.YYYY"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	res, err := v.Scan(context.Background(), nil)
	if err != nil || res.Unchanged != 3 {
		t.Errorf("scan with the same rules: %+v, %v; want every note unchanged", res, err)
	}
}

func TestStatusSeparatesOutputsFromNotes(t *testing.T) {
	dir := writeVault(t, map[string]string{
		"Tasks/Ship.md":                             "- [ ] one\n- [x] two\n",
		"Notes/Idea.md":                             "- [ ] three\n",
		"Margin/Reports/Ship.md":                    "---\nmargin: report\n---\n- [ ] not the user's\n",
		"Margin/Journal/Ship.md":                    "---\nmargin: journal\n---\n",
		"Margin/Context Archive.md":                 "no key, still margin's\n",
		"Margin/Changes/Ship/2026-11-22-0730-ab.md": "---\nmargin: changeset\n---\n- [ ] Set estimate ^c1\n",
	})
	v := scanned(t, Options{Dir: dir})
	st, err := v.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Notes != 2 || st.Outputs != 4 || st.Tasks != 1 || st.ChecklistItems != 3 {
		t.Errorf("status %+v: want 2 notes, 4 outputs, 1 task, 3 checklist items", st)
	}
}
