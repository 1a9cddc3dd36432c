package query

import "testing"

// A dependent plan whose parts are filler is one question, not parts
// planned and analysed one by one.
func TestDependentPartsOfFillerAreNoParts(t *testing.T) {
	p := Plan{ExecutionStrategy: strategyDependent, SubQueries: []SubQuery{{1, "ok"}, {2, "## Summary"}, {3, "Why was I tired?"}}}
	if parts := dependentParts(p); parts != nil {
		t.Errorf("parts %+v, want none", parts)
	}
	p.SubQueries = append(p.SubQueries, SubQuery{4, "What should I change?"})
	if parts := dependentParts(p); len(parts) != 2 || parts[0].ID != 3 {
		t.Errorf("parts %+v, want the two real questions", parts)
	}
}
