package server_test

import (
	"slices"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// vault/search leaves margin's reports and journals out, which restate
// the task, unless outputs asks for them.
func TestSearchLeavesOutputsOutUnlessAsked(t *testing.T) {
	dir := shapeVault(t, "personal")
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	for _, tc := range []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{"query": "derailleur"}, []string{"Notes/Bike repair.md"}},
		{map[string]any{"query": "derailleur", "outputs": true}, []string{"Margin/Reports/Bike repair.md", "Notes/Bike repair.md"}},
		{map[string]any{"glob": "Margin/**"}, nil},
		{map[string]any{"glob": "Margin/**", "outputs": true}, []string{"Margin/Journal/Bike repair.md", "Margin/Reports/Bike repair.md"}},
	} {
		var res protocol.SearchResult
		e.MustCall("vault/search", tc.params, &res)
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.Path)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) || res.Total != len(tc.want) {
			t.Errorf("vault/search %v: %v (total %d), want %v", tc.params, got, res.Total, tc.want)
		}
	}
}
