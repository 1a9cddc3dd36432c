package wire_test

import (
	"testing"

	"github.com/margin-md/margin/server/protocol"
)

func pair[T any]() (any, any) { var zero T; return fill[T](), zero }

// TestTheWireIsPinned holds the JSON of each type the protocol shares with
// margin's domain to testdata.
func TestTheWireIsPinned(t *testing.T) {
	for _, c := range []struct {
		name string
		vals func() (any, any)
	}{
		{"Agent", pair[protocol.Agent]},
		{"WakeState", pair[protocol.WakeState]},
		{"Activity", pair[protocol.Activity]},
		{"Report", pair[protocol.Report]},
		{"ReportUpdated", pair[protocol.ReportUpdated]},
		{"AgentStatus", pair[protocol.AgentStatus]},
		{"AgentCounts", pair[protocol.AgentCounts]},
		{"ChangeSet", pair[protocol.ChangeSet]},
		{"ItemDecision", pair[protocol.ItemDecision]},
		{"Decision", pair[protocol.Decision]},
		{"ChangeSetCreated", pair[protocol.ChangeSetCreated]},
		{"ChangeApplied", pair[protocol.ChangeApplied]},
		{"Answer", pair[protocol.Answer]},
		{"EvolutionTurn", pair[protocol.EvolutionTurn]},
		{"EvolutionSession", pair[protocol.EvolutionSession]},
		{"Template", pair[protocol.Template]},
		{"TemplateProblem", pair[protocol.TemplateProblem]},
		{"VaultStatus", pair[protocol.VaultStatus]},
		{"IndexStatus", pair[protocol.IndexStatus]},
		{"ScanResult", pair[protocol.ScanResult]},
		{"FileState", pair[protocol.FileState]},
		{"SearchResult", pair[protocol.SearchResult]},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, zero := c.vals()
			golden(t, c.name, full, zero)
		})
	}
}
