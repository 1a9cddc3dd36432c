package query

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
)

// Notes in Obsidian's templates folder are never evidence for an answer.
func TestTemplatesAreNotEvidence(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{
		".obsidian/templates.json": `{"folder": "Templates"}`,
		"Templates/Meeting.md":     "---\ncreated: {{date}}\n---\n## Agenda\nquarterly budget review\n",
		"Notes/Budget.md":          "## Plan\nquarterly budget review with the bank\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, []byte(s), 0o644)
	}
	v := querytest.IndexedVault(t, dir)
	e, err := newEngine(context.Background(), v, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.retriever.Retrieve(context.Background(), []Instruction{{Keywords: []string{"quarterly budget"}}}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if links := linksOf(got.Entries); len(links) != 1 || links[0] != "[[Notes/Budget#Plan]]" {
		t.Errorf("evidence %q, want only the note, not the template", links)
	}
}
