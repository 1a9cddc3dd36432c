package wire_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
)

// conversion is one of wire's conversions, on a full and on a zero
// value of what it converts from.
type conversion struct {
	name string // the golden file's, and the test's
	// pair converts a full and a zero value; unreached lists the fields
	// of the full one the conversion does not carry.
	pair      func() (full, zero any)
	unreached func() []string
}

func convert[From, To any](name string, f func(From) To) conversion {
	return conversion{
		name:      name,
		pair:      func() (any, any) { var zero From; return f(fill[From]()), f(zero) },
		unreached: func() []string { return unreached(f) },
	}
}

// one is a conversion of lists on a list of one.
func one[From, To any](f func([]From) []To) func(From) To {
	return func(x From) To { return f([]From{x})[0] }
}

// conversions are wire's, each named as the protocol names its result.
var conversions = []conversion{
	convert("Agent", wire.Agent),
	convert("WakeState", wire.WakeState),
	convert("Activity", wire.Activity),
	convert("Report", wire.Report),
	convert("Review", wire.Review),
	convert("ReportUpdated", wire.ReportUpdated),
	convert("AgentStatus", wire.AgentStatus),
	convert("AgentCounts", wire.AgentCounts),
	convert("ChangeSet", wire.ChangeSet),
	convert("Decision", one(wire.Decisions)),
	convert("ChangeSetCreated", wire.ChangeSetCreated),
	convert("ChangeApplied", wire.ChangeApplied),
	convert("Answer", wire.Answer),
	convert("LogResult", func(l query.Logged) protocol.LogResult { return wire.LogResult(query.Result{Logged: &l}) }),
	convert("EvolutionTurn", wire.EvolutionTurn),
	convert("EvolutionSession", wire.EvolutionSession),
	convert("Template", wire.Template),
	convert("TemplateProblem", wire.TemplateProblem),
	convert("VaultStatus", wire.VaultStatus),
	convert("EmbeddingStatus", wire.EmbeddingStatus),
	convert("IndexStatus", wire.IndexStatus),
	convert("ScanResult", wire.ScanResult),
	convert("FileState", one(wire.FileStates)),
	convert("SearchResult", wire.SearchResult),
}

// TestTheWireIsPinned holds the JSON each conversion writes, of a full
// value and of a zero one, to testdata: the editors read these names, and
// a field renamed or dropped in agents/ or vault/ must not change them.
func TestTheWireIsPinned(t *testing.T) {
	for _, c := range conversions {
		t.Run(c.name, func(t *testing.T) {
			full, zero := c.pair()
			golden(t, c.name, full, zero)
		})
	}
}

// TestEveryDomainFieldReachesTheWire fails for a field of a domain type
// that its conversion leaves behind: one added to agents/ or vault/ since
// the conversion was written.
func TestEveryDomainFieldReachesTheWire(t *testing.T) {
	for _, c := range conversions {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range c.unreached() {
				t.Errorf("%s does not reach the wire: convert it in server/wire (and declare it in server/protocol), or tag it json:\"-\" if it is for no wire", path)
			}
		})
	}
}

// TestDecisionsReachTheChangeSets holds changes/decide's verdicts, the one
// wire type converted to the domain, to testdata, and fails for a field of
// it that does not reach the change sets.
func TestDecisionsReachTheChangeSets(t *testing.T) {
	golden(t, "ItemDecision", fill[protocol.ItemDecision](), protocol.ItemDecision{})
	for _, path := range unreached(one(wire.ItemDecisions)) {
		t.Errorf("%s does not reach the change sets: convert it in server/wire", path)
	}
}

// TestUnreachedFindsAFieldLeftBehind holds unreached to what it is for: a
// conversion that forgets a field, however deep, is caught.
func TestUnreachedFindsAFieldLeftBehind(t *testing.T) {
	forgets := func(cs changes.ChangeSet) protocol.ChangeSet {
		for i := range cs.Items {
			cs.Items[i].Detail = ""
		}
		cs.Expires = cs.Created
		return wire.ChangeSet(cs)
	}
	got := unreached(forgets)
	want := []string{"changes.ChangeSet.Expires", "changes.ChangeSet.Items.Detail"}
	if !slices.Equal(got, want) {
		t.Errorf("unreached = %v, want %v", got, want)
	}
	if got := unreached(func(task.Counts) protocol.AgentCounts { return protocol.AgentCounts{} }); len(got) != 9 {
		t.Errorf("a conversion that reads nothing leaves %d fields behind, want all 9: %v", len(got), got)
	}
}

// TestNotificationsAreTheProtocols holds each notification the agents
// send, and the vault's, to the params protocol.Notifications names.
func TestNotificationsAreTheProtocols(t *testing.T) {
	agents := map[string]any{
		"margin/reportUpdated":    task.ReportUpdated{},
		"margin/changeSetCreated": changes.SetCreated{},
		"margin/changeApplied":    changes.ItemDecided{},
		"margin/agentStatus":      task.AgentStatus{},
		"margin/templateProblem":  templates.TemplateProblem{},
	}
	for _, n := range protocol.Notifications {
		var got any
		if n.Name == "margin/indexStatus" {
			got = wire.IndexStatus(vault.IndexEvent{})
		} else if params, ok := agents[n.Name]; ok {
			if got, ok = wire.Notification(params); !ok {
				t.Errorf("%s: wire.Notification does not convert %T", n.Name, params)
				continue
			}
		} else {
			t.Errorf("%s: no domain value for it here", n.Name)
			continue
		}
		if reflect.TypeOf(got) != n.Params {
			t.Errorf("%s: wire sends %T, protocol.Notifications says %v", n.Name, got, n.Params)
		}
	}
	if _, ok := wire.Notification(evolution.Turn{}); ok {
		t.Error("wire.Notification converts a value no notification carries")
	}
	if _, ok := wire.Notification(index.Hit{}); ok {
		t.Error("wire.Notification converts a value no notification carries")
	}
}
