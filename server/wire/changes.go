package wire

import (
	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/protocol"
)

// ChangeSet is cs as the protocol sends it.
func ChangeSet(cs changes.ChangeSet) protocol.ChangeSet {
	return protocol.ChangeSet{
		ID: cs.ID, Agent: cs.Agent, Task: cs.Task, Run: cs.Run, Path: cs.Path, Status: cs.Status,
		Created: cs.Created, Expires: cs.Expires, Items: list(cs.Items, changeItem),
	}
}

// ChangeSets are sets as the protocol sends them.
func ChangeSets(sets []changes.ChangeSet) []protocol.ChangeSet { return list(sets, ChangeSet) }

func changeItem(it changes.ChangeItem) protocol.ChangeItem {
	return protocol.ChangeItem{
		ID: it.ID, Tool: it.Tool, Args: it.Args, Summary: it.Summary, Status: it.Status,
		Base: it.Base, Reason: it.Reason, Detail: it.Detail, Decided: it.Decided,
	}
}

// ItemDecisions are the verdicts changes/decide was sent, as the change
// sets take them.
func ItemDecisions(ds []protocol.ItemDecision) []changes.ItemDecision {
	return list(ds, func(d protocol.ItemDecision) changes.ItemDecision {
		return changes.ItemDecision{Item: d.Item, Verdict: d.Verdict, Reason: d.Reason}
	})
}

// Decisions are ds as the protocol sends them.
func Decisions(ds []changes.Decision) []protocol.Decision {
	return list(ds, func(d changes.Decision) protocol.Decision {
		return protocol.Decision{
			ID: d.ID, Agent: d.Agent, Task: d.Task, ChangeSet: d.ChangeSet, Item: d.Item, Tool: d.Tool,
			Summary: d.Summary, Verdict: d.Verdict, Reason: d.Reason, Outcome: d.Outcome, Created: d.Created,
		}
	})
}

// ChangeSetCreated is margin/changeSetCreated's params.
func ChangeSetCreated(s changes.SetCreated) protocol.ChangeSetCreated {
	return protocol.ChangeSetCreated{ID: s.ID, Task: s.Task, Path: s.Path, Items: list(s.Items, changeItem)}
}

// ChangeApplied is margin/changeApplied's params.
func ChangeApplied(d changes.ItemDecided) protocol.ChangeApplied {
	return protocol.ChangeApplied{ID: d.ID, Item: d.Item, Status: d.Status, Detail: d.Detail}
}

// ChangePreview is an item's preview: the note as it is and as applying
// the item alone would write it.
func ChangePreview(pv changes.Preview) protocol.ChangePreview {
	props := make([]protocol.PropertyChange, len(pv.Properties))
	for i, c := range pv.Properties {
		props[i] = protocol.PropertyChange{Key: c.Key, Before: c.Before, After: c.After, Change: c.Change}
	}
	return protocol.ChangePreview{ID: pv.ChangeSet, Item: pv.Item, Summary: pv.Summary, Path: pv.Path, Exists: pv.Exists, InEditor: pv.InEditor,
		Before: string(pv.Before), After: string(pv.After), Stale: pv.Stale, Reason: pv.Reason, Properties: props}
}
