package retrieve_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

// TestScope: the notes a query's filters let through, its words aside,
// as a search by meaning sees them (index.Scope).
func TestScope(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for p, text := range map[string]string{
		"Daily/2026-11-02.md": "## 08:00\n\nSlept well.\n",
		"Daily/2026-11-20.md": "## 08:00\n\nSlept badly.\n",
		"Tasks/Fix bike.md":   "---\ntype: task\nstatus: done\n---\n# Fix bike\n\nNew chain.\n",
		"Work/Plan.md":        "---\ntags: [work]\n---\n# Plan\n\nQ1.\n\n## Risks\n\nNone yet.\n",
		"Reports/r.md":        "---\nmargin: report\n---\n# Report\n",
		"Ideas.md":            "# Ideas\n",
	} {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	ix := v.Index()
	for _, c := range []struct {
		name   string
		q      index.Query
		all    bool
		except []string
		paths  []string
	}{
		{"no filter leaves out the outputs", index.Query{Text: "anything"}, true, []string{"Reports/r.md"}, nil},
		{"outputs kept", index.Query{Outputs: true}, true, nil, nil},
		{"dates", index.Query{From: "2026-11-15", To: "2026-11-30"}, false, nil, []string{"Daily/2026-11-20.md"}},
		{"glob", index.Query{Glob: "Work/**"}, false, nil, []string{"Work/Plan.md"}},
		{"tag", index.Query{Tags: []string{"#Work"}}, false, nil, []string{"Work/Plan.md"}},
		{"task fields", index.Query{Fields: index.TaskFilter{Status: []string{"Done"}}}, false, nil, []string{"Tasks/Fix bike.md"}},
		{"a property in the text", index.Query{Text: "chain status:done"}, false, nil, []string{"Tasks/Fix bike.md"}},
		{"nothing passes", index.Query{Glob: "Nowhere/**"}, false, nil, []string{}},
		{"outputs by glob", index.Query{Glob: "Reports/*", Outputs: true}, false, nil, []string{"Reports/r.md"}},
	} {
		s, err := ix.Scope(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		slices.Sort(s.Paths)
		if s.All != c.all || !slices.Equal(s.Except, c.except) || !slices.Equal(s.Paths, c.paths) || (s.Paths == nil) != (c.paths == nil) {
			t.Errorf("%s: %+v, want all %v except %v paths %#v", c.name, s, c.all, c.except, c.paths)
		}
	}
	if _, err := ix.Scope(ctx, index.Query{From: "someday"}); err == nil {
		t.Error("Scope took a date that is no date")
	}

	hits, err := ix.HitsAt(ctx, []index.Place{{Path: "Work/Plan.md", Line: 9}, {Path: "Gone.md", Line: 1}, {Path: "Work/Plan.md", Line: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Heading != "Risks" || hits[0].Snippet != "None yet." || hits[1].Heading != "Plan" || hits[1].Snippet != "Q1." {
		t.Errorf("HitsAt = %+v, want Risks then Plan, the gone note left out", hits)
	}
}
