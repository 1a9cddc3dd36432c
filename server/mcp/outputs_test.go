package mcp_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/margin-md/margin/vault/index"
)

// search_notes leaves margin's reports and journals out, which restate
// the task and outranked it, unless outputs asks for them.
func TestSearchNotesLeavesOutputsOutUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	for p, text := range map[string]string{
		"Tasks/Tax return.md":          "---\ntype: task\nstatus: open\n---\nFile the tax return before May.\n",
		"Margin/Reports/Tax return.md": "---\nmargin: report\ntask: \"[[Tasks/Tax return.md]]\"\n---\nThe tax return waits on the tax form.\n",
		"Margin/Journal/Tax return.md": "---\nmargin: journal\n---\n- asked about the tax form\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := newRigAt(t, dir, nil)
	for _, tc := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"query": "tax"}, []string{"Tasks/Tax return.md"}},
		{map[string]any{"query": "tax", "outputs": true}, []string{"Margin/Journal/Tax return.md", "Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
	} {
		res := structured[index.Result](t, r.call(t, "search_notes", tc.args))
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Path)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) || res.Total != len(tc.want) {
			t.Errorf("search_notes %v: %v (total %d), want %v", tc.args, got, res.Total, tc.want)
		}
	}
}
