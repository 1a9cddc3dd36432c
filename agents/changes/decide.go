package changes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// ErrBadVerdict refuses a verdict other than confirmed, rejected or deferred.
var ErrBadVerdict = errors.New("unknown verdict")

// Route turns the agent's proposals not yet in a change set into
// change sets of at most MaxItems items each (SPEC §4.2), writes their
// files and tells the client. A newer proposal for a field supersedes the
// open item an older set has for it.
func (c *Changes) Route(ctx context.Context, agent string, o Owner, run int64, task *note.Note) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, err := c.store.pendingProposals(ctx, agent)
	if err != nil || len(ps) == 0 {
		return err
	}
	var items []ChangeItem
	ids := make([]int64, 0, len(ps))
	for _, p := range ps {
		ids = append(ids, p.id)
		tool := ExplodedTool(p.tool)
		field, _ := target(task, tool, p.args)
		// Within one wake the model's last word on a field stands.
		for i := range items {
			if items[i].field == field {
				items = append(items[:i], items[i+1:]...)
				break
			}
		}
		items = append(items, ChangeItem{Tool: tool, Args: p.args, Summary: p.summary, Base: p.base, Status: ItemPending, field: field})
	}
	now := c.now()
	var sets []ChangeSet
	for len(items) > 0 {
		n := min(len(items), c.opts.MaxItems)
		chunk := items[:n:n]
		items = items[n:]
		for i := range chunk {
			chunk[i].ID = "c" + strconv.Itoa(i+1)
		}
		id := newChangeSetID()
		sets = append(sets, ChangeSet{ID: id, Agent: agent, Task: o.Task, Run: run, Status: SetPending,
			Path: ChangeSetPath(c.outputFolder(), o.OutputName, now, id), Created: now, Expires: now.Add(c.opts.ExpireAfter), Items: chunk})
	}
	older, err := c.store.addChangeSets(ctx, sets, ids, now)
	if err != nil {
		return err
	}
	for _, cs := range sets {
		data, err := renderChangeSet(cs, c.diffs(o.Task, cs.Items))
		if err != nil {
			return fmt.Errorf("rendering change set %s: %w", cs.ID, err)
		}
		fp, err := c.v.Files.WriteContext(edit.WithCause(ctx, edit.Cause{Actor: agent, Task: o.Task, ChangeSet: cs.ID}), cs.Path, "", data)
		if err != nil {
			return fmt.Errorf("writing change set %s: %w", cs.ID, err)
		}
		if err := c.store.setFileFingerprint(ctx, cs.ID, string(fp)); err != nil {
			return err
		}
		c.notify("margin/changeSetCreated", SetCreated{ID: cs.ID, Task: cs.Task, Path: cs.Path, Items: cs.Items})
	}
	for _, id := range older {
		cs, err := c.store.ChangeSet(ctx, id)
		if err != nil {
			return err
		}
		c.writeSetFile(ctx, cs)
	}
	return nil
}

// Restore writes the file of every change set the ledger has but
// whose file margin never recorded writing: Route stores a set
// before it creates the file, so a crash between the two leaves a set no
// person can see or decide in the vault. A file that was written before the
// crash is kept and recorded. It runs at startup, before any wake.
func (c *Changes) Restore(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, err := c.store.unwrittenSets(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		cs, err := c.store.ChangeSet(ctx, id)
		if err != nil {
			return err
		}
		fp := edit.Fingerprint("")
		if snap, err := c.v.Files.Read(cs.Path); err == nil {
			fp = snap.Fingerprint
		} else if errors.Is(err, fs.ErrNotExist) {
			data, err := renderChangeSet(cs, c.diffs(cs.Task, cs.Items))
			if err != nil {
				return fmt.Errorf("rendering change set %s: %w", cs.ID, err)
			}
			if fp, err = c.v.Files.WriteContext(edit.WithCause(ctx, c.cause(ctx, cs, cs.Task)), cs.Path, "", data); err != nil {
				return fmt.Errorf("writing change set %s: %w", cs.ID, err)
			}
			c.log.Info("wrote the file of a change set a crash had left without one", "id", cs.ID, "path", cs.Path)
			c.notify("margin/changeSetCreated", SetCreated{ID: cs.ID, Task: cs.Task, Path: cs.Path, Items: cs.Items})
		} else {
			return fmt.Errorf("reading change set %s: %w", cs.ID, err)
		}
		if err := c.store.setFileFingerprint(ctx, cs.ID, string(fp)); err != nil {
			return err
		}
	}
	return nil
}

// Decide records a person's verdicts on items of a change set and applies
// the confirmed ones. It is the one path every way of deciding ends in:
// changes/decide, changes/confirmAll, the command line and the change set
// file. A verdict on an item that is decided already changes nothing, so
// the same decision twice applies nothing twice. A decision wakes the
// agent (coalesced like any change); applying does not.
func (c *Changes) Decide(ctx context.Context, id string, decisions []ItemDecision) (ChangeSet, error) {
	cs, changed, err := c.decide(ctx, id, decisions)
	if err != nil || !changed {
		return cs, err
	}
	c.wake(ctx, cs.Agent)
	return cs, nil
}

// owner is whose change set cs is: its agent's task, which follows
// renames; a client's set is applied to the note it was proposed on.
func (c *Changes) owner(ctx context.Context, cs ChangeSet) (Owner, error) {
	if IsClient(cs.Agent) {
		return Owner{Task: cs.Task}, nil
	}
	return c.agents.Owner(ctx, cs.Agent)
}

// cause names the writes of a set's items in margin's history: the agent
// or client, the task, the set (the item is each write's own), and the
// template version and model of the wake that proposed it.
func (c *Changes) cause(ctx context.Context, cs ChangeSet, task string) edit.Cause {
	cause := edit.Cause{Actor: cs.Agent, Task: task, ChangeSet: cs.ID}
	if IsClient(cs.Agent) || cs.Run == 0 {
		return cause
	}
	var err error
	if cause.Template, cause.Model, err = c.agents.RunCause(ctx, cs.Run); err != nil {
		c.log.Warn("margin's history will not name the template and model of this change set's writes", "id", cs.ID, "err", err)
	}
	return cause
}

// wake tells the agent of a set a decision was made on it. A client has
// no agent to wake: a change applied to a task note wakes the task's
// agent as any change to it does.
func (c *Changes) wake(ctx context.Context, agent string) {
	if !IsClient(agent) {
		c.agents.Wake(ctx, agent, "decision on a change set")
	}
}

// ConfirmAll confirms every open item of a change set.
func (c *Changes) ConfirmAll(ctx context.Context, id string) (ChangeSet, error) {
	cs, err := c.store.ChangeSet(ctx, id)
	if err != nil {
		return cs, err
	}
	var ds []ItemDecision
	for _, it := range cs.Items {
		if it.open() {
			ds = append(ds, ItemDecision{Item: it.ID, Verdict: Confirmed})
		}
	}
	return c.Decide(ctx, id, ds)
}

// ChangeSets lists change sets after expiring those due.
func (c *Changes) ChangeSets(ctx context.Context, f ChangeSetFilter) ([]ChangeSet, error) {
	if err := c.expireDue(ctx); err != nil {
		return nil, err
	}
	if f.Task != "" && f.Agent == "" {
		// The task's agent: its sets from before a rename name the old path.
		id, err := c.agents.AgentOf(ctx, f.Task)
		if err != nil {
			return nil, err
		}
		f.Agent = id
	}
	return c.store.ChangeSets(ctx, f)
}

func (c *Changes) decide(ctx context.Context, id string, decisions []ItemDecision) (ChangeSet, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.expireLocked(ctx); err != nil {
		return ChangeSet{}, false, err
	}
	cs, err := c.store.ChangeSet(ctx, id)
	if err != nil {
		return cs, false, err
	}
	for _, d := range decisions {
		switch d.Verdict {
		case Confirmed, Rejected, Deferred:
		default:
			return cs, false, fmt.Errorf("item %s: %w %q: want confirmed, rejected or deferred", d.Item, ErrBadVerdict, d.Verdict)
		}
		if !hasItem(cs, d.Item) {
			return cs, false, fmt.Errorf("%w: no item %s in %s", ErrChangeSetNotFound, d.Item, id)
		}
	}
	a, err := c.owner(ctx, cs)
	if err != nil {
		return cs, false, err
	}
	now := c.now()
	before := make([]ChangeItem, len(cs.Items))
	copy(before, cs.Items)
	var confirm []int
	seen := map[string]bool{} // an item named twice in one request is decided once
	for _, d := range decisions {
		i := itemIndex(cs, d.Item)
		it := &cs.Items[i]
		if seen[it.ID] || !it.open() || d.Verdict == Deferred && it.Status == ItemDeferred {
			continue
		}
		seen[it.ID] = true
		it.Decided, it.Detail = now, ""
		switch d.Verdict {
		case Rejected:
			it.Status, it.Reason = ItemRejected, note.OneLine(d.Reason)
		case Deferred:
			it.Status = ItemDeferred
		case Confirmed:
			confirm = append(confirm, i)
		}
	}
	ctx = edit.WithCause(ctx, c.cause(ctx, cs, a.Task))
	if len(confirm) > 0 {
		if err := c.applyConfirmed(ctx, a.Task, cs.Items, confirm); err != nil {
			return cs, false, fmt.Errorf("applying change set %s: %w", id, err)
		}
	}
	var decided []ChangeItem
	var ledger []Decision
	for i, it := range cs.Items {
		if it.Status == before[i].Status && it.Detail == before[i].Detail {
			continue
		}
		decided = append(decided, it)
		if it.Status == before[i].Status {
			continue // not applied (a refusal or a conflict): the item stays open, explained
		}
		verdict := it.Status
		if it.Status == ItemStale {
			verdict = Confirmed
		}
		ledger = append(ledger, Decision{Agent: cs.Agent, Task: a.Task, ChangeSet: cs.ID, Item: it.ID, Tool: it.Tool,
			Summary: it.Summary, Verdict: verdict, Reason: it.Reason, Outcome: it.Status, Created: now})
	}
	if len(decided) == 0 {
		return cs, false, nil
	}
	if err := c.store.recordDecisions(ctx, cs, decided, ledger); err != nil {
		return cs, false, err
	}
	if cs, err = c.store.ChangeSet(ctx, id); err != nil {
		return cs, false, err
	}
	c.writeSetFile(ctx, cs)
	for _, it := range decided {
		c.notify("margin/changeApplied", ItemDecided{ID: cs.ID, Item: it.ID, Status: it.Status, Detail: it.Detail})
	}
	return cs, len(ledger) > 0, nil
}

func hasItem(cs ChangeSet, id string) bool { return itemIndex(cs, id) >= 0 }

func itemIndex(cs ChangeSet, id string) int {
	for i, it := range cs.Items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// applyConfirmed re-validates and applies the confirmed items to the task
// note in one edit, through the editor when the note is open there (see
// edit.Root.Change: a person's save meanwhile is applied to again, and an
// item whose target it changed becomes stale). An edit the editor refuses,
// or that keeps losing races with a person's saves, leaves its items
// pending with the reason in Detail.
func (c *Changes) applyConfirmed(ctx context.Context, task string, items []ChangeItem, confirm []int) error {
	var (
		decided  []ChangeItem // items as the last attempt settled them
		applied  []int
		inEditor bool
	)
	_, err := c.v.Files.ChangeParts(ctx, c.opts.Editor, task, func(cur edit.Current) ([]byte, []edit.Part, error) {
		decided, inEditor = slices.Clone(items), cur.InEditor
		var (
			out   []byte
			parts []edit.Part
		)
		out, parts, applied = c.applyTo(task, cur, decided, confirm)
		return out, parts, nil
	})
	if decided == nil {
		return err // refused before the note was read
	}
	copy(items, decided)
	notApplied := func(why string) error {
		for _, i := range applied {
			items[i].Detail = "not applied: " + why
		}
		return nil
	}
	switch {
	case errors.Is(err, edit.ErrEditorRefused):
		return notApplied("the editor refused the edit; the item stays pending")
	case errors.Is(err, edit.ErrConflict):
		return notApplied("the task kept changing on disk while it was being applied; decide again")
	case err != nil && inEditor:
		return notApplied("the editor did not apply the edit: " + err.Error())
	case err != nil:
		return err
	}
	for _, i := range applied {
		items[i].Status = ItemConfirmed
	}
	return nil
}

// applyTo applies the confirmed items of items (by index) to the note at
// task as cur has it, each to what the ones before it made, and settles
// in items the ones that do not apply: stale, with why, or left open with
// why in Detail. It returns the note after them (nil when none applies to
// a note to create), each applied item's part, so each can be undone
// alone, and the indices of those applied. Applying and previewing an
// item both come here, so a preview shows what applying writes.
func (c *Changes) applyTo(task string, cur edit.Current, items []ChangeItem, confirm []int) (out []byte, parts []edit.Part, applied []int) {
	if isEdit(items, confirm) {
		out, parts := applyEdits(cur, items, confirm, &applied)
		return out, parts, applied
	}
	if !cur.Exists {
		for _, i := range confirm {
			items[i].Status, items[i].Detail = ItemStale, "the task note "+task+" is gone"
		}
		return nil, nil, nil
	}
	out = cur.Content
	for _, i := range confirm {
		next, stale, err := applyItem(task, out, items[i], c.v.Rules.TaskOptions())
		switch {
		case err != nil:
			items[i].Detail = "not applied: " + err.Error()
		case stale != "":
			items[i].Status, items[i].Detail = ItemStale, stale
		default:
			parts = append(parts, edit.Part{Item: items[i].ID, Before: out, After: next})
			out = next
			applied = append(applied, i)
		}
	}
	return out, parts, applied
}

// writeSetFile brings a change set's file in line with its statuses,
// through the editor when the file is open there. A
// file the person damaged (its frontmatter no longer parses) is left as
// they wrote it: their text matters more than margin's view of it, and
// the database still has every decision.
func (c *Changes) writeSetFile(ctx context.Context, cs ChangeSet) {
	var (
		damaged  error
		inEditor bool
	)
	res, err := c.v.Files.Change(ctx, c.opts.Editor, cs.Path, func(cur edit.Current) ([]byte, error) {
		inEditor = cur.InEditor
		if !cur.Exists {
			return nil, nil // deleted by hand: the decisions stand in the database
		}
		out, err := updateChangeSetFile(cur.Content, cs)
		if err != nil {
			damaged = err
		}
		return out, err
	})
	switch {
	case damaged != nil:
		c.log.Warn("the change set file cannot be updated; left as it is", "path", cs.Path, "err", err)
	case errors.Is(err, edit.ErrConflict):
		// The person's next save brings the lines in line (DecideFile).
		c.log.Info("the change set file kept changing while margin wrote its statuses; the database has them", "path", cs.Path)
	case err != nil && inEditor:
		c.log.Warn("the editor did not take the change set's new statuses; the database has them", "path", cs.Path, "err", err)
	case err != nil:
		c.log.Warn("writing a change set file", "path", cs.Path, "err", err)
	case res.Written && !res.InEditor:
		if err := c.store.setFileFingerprint(ctx, cs.ID, string(res.Fingerprint)); err != nil {
			c.log.Warn("recording a change set file", "path", cs.Path, "err", err)
		}
	}
}

// expireDue expires the open change sets whose time is up (SPEC §4.2).
func (c *Changes) expireDue(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.expireLocked(ctx)
}

func (c *Changes) expireLocked(ctx context.Context) error {
	now := c.now()
	ids, err := c.store.expiring(ctx, now)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := c.store.expire(ctx, id, now); err != nil {
			return err
		}
		cs, err := c.store.ChangeSet(ctx, id)
		if err != nil {
			return err
		}
		c.writeSetFile(ctx, cs)
	}
	return nil
}

// expiryCheck is how often Run looks for expired change sets: often enough
// that a set expires close to its time, capped so a week-long expiry does
// not mean a check a week late.
func expiryCheck(expireAfter time.Duration) time.Duration {
	return min(max(expireAfter/4, 10*time.Millisecond), time.Minute)
}

// DecideFile reads the verdicts a person wrote into the change set file
// at p and decides them. Run calls it for each save Watch queues, on the
// change sets' own goroutine, never on the task agents' loop: applying
// may wait on the editor.
func (c *Changes) DecideFile(ctx context.Context, p string) error {
	cs, ok, err := c.store.ChangeSetAt(ctx, p)
	if err != nil || !ok {
		return err
	}
	snap, err := c.v.Files.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading change set %s: %w", cs.ID, err)
	}
	if string(snap.Fingerprint) == cs.fingerprint {
		// The version margin wrote: nothing of the person's to read. (Own
		// writes are remembered in memory only; after a restart a rescan
		// can report margin's last write as a change.)
		return nil
	}
	ds, ignored := fileDecisions(snap.Content, cs)
	for _, why := range ignored {
		c.log.Info("a line of a change set file decides nothing", "path", p, "why", why)
	}
	changed := false
	if len(ds) > 0 {
		if cs, changed, err = c.decide(ctx, cs.ID, ds); err != nil {
			return err
		}
	}
	if changed {
		c.wake(ctx, cs.Agent)
		return nil // decide wrote the file
	}
	// A save made from a copy older than margin's last write (the person
	// saved while items were being decided) takes the decided lines back
	// to how they read before: write them as decided again. Only those
	// lines and the frontmatter's statuses change; the rest is theirs.
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, err = c.store.ChangeSet(ctx, cs.ID); err != nil {
		return err
	}
	c.writeSetFile(ctx, cs)
	return nil
}
