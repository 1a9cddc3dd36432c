package changes

import (
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// ErrNotApplied refuses the undo of an item that was never applied.
var ErrNotApplied = errors.New("only an applied item can be undone")

// Undo undoes applied items of a change set (all of them when items is
// empty) through margin's history of its writes: each task note gets back
// exactly what the item replaced (history.History.Undo; a note edited at
// the item's lines since is a *history.ConflictError, and that item and
// the ones after it stay as they are). An undone item undone again is
// applied again. Each undo is a decision, recorded, shown in the set's
// file and to the agent, whose wake it asks for. It undoes any item
// applied through edit.Root, a client's edits too (an item that created a
// note removes it).
func (c *Changes) Undo(ctx context.Context, h *history.History, id string, items []string) (ChangeSet, error) {
	cs, changed, err := c.undo(ctx, h, id, items)
	if changed && !IsClient(cs.Agent) {
		c.agents.Wake(ctx, cs.Agent, "undo of an applied change")
	}
	return cs, err
}

func (c *Changes) undo(ctx context.Context, h *history.History, id string, items []string) (ChangeSet, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, err := c.store.ChangeSet(ctx, id)
	if err != nil {
		return cs, false, err
	}
	if len(items) == 0 {
		for _, it := range cs.Items {
			if it.Status == ItemConfirmed {
				items = append(items, it.ID)
			}
		}
		if len(items) == 0 {
			return cs, false, fmt.Errorf("change set %s: %w, and none of its items was applied", id, ErrNotApplied)
		}
	}
	for _, item := range items {
		i := itemIndex(cs, item)
		if i < 0 {
			return cs, false, fmt.Errorf("%w: no item %s in %s", ErrChangeSetNotFound, item, id)
		}
		if s := cs.Items[i].Status; s != ItemConfirmed && s != ItemUndone {
			return cs, false, fmt.Errorf("item %s of %s is %s: %w", item, id, s, ErrNotApplied)
		}
	}
	a, err := c.owner(ctx, cs)
	if err != nil {
		return cs, false, err
	}
	ctx = edit.WithCause(ctx, edit.Cause{Task: a.Task, ChangeSet: cs.ID})
	now := c.now()
	var (
		decided []ChangeItem
		ledger  []Decision
		undoErr error
	)
	for _, item := range items {
		it := &cs.Items[itemIndex(cs, item)]
		if _, undoErr = h.Undo(ctx, c.opts.Editor, cs.ID, it.ID); undoErr != nil {
			break
		}
		verdict, status := Undone, ItemUndone
		if it.Status == ItemUndone {
			verdict, status = Redone, ItemConfirmed
		}
		it.Status, it.Decided, it.Detail = status, now, ""
		decided = append(decided, *it)
		ledger = append(ledger, Decision{Agent: cs.Agent, Task: a.Task, ChangeSet: cs.ID, Item: it.ID, Tool: it.Tool,
			Summary: it.Summary, Verdict: verdict, Reason: it.Reason, Outcome: status, Created: now})
	}
	if len(decided) == 0 {
		return cs, false, undoErr
	}
	if err := c.store.recordDecisions(ctx, cs, decided, ledger); err != nil {
		return cs, false, errors.Join(undoErr, err)
	}
	if fresh, err := c.store.ChangeSet(ctx, id); err == nil {
		cs = fresh
	}
	c.writeSetFile(ctx, cs)
	for _, it := range decided {
		c.notify("margin/changeApplied", ItemDecided{ID: cs.ID, Item: it.ID, Status: it.Status})
	}
	return cs, true, undoErr
}

// UndoWrite undoes margin's write id that applied no change item (a
// report, a journal entry, a log entry, a template, a change set file)
// through margin's history, through the editor when the file is open
// there: history.History.UndoWrite.
func (c *Changes) UndoWrite(ctx context.Context, h *history.History, id int64) (history.Undone, error) {
	return h.UndoWrite(ctx, c.opts.Editor, id)
}
