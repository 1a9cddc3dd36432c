package changes

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// Change set statuses (SPEC §3.3).
const (
	SetPending    = "pending"
	SetPartial    = "partially-resolved"
	SetResolved   = "resolved"
	SetExpired    = "expired"
	SetSuperseded = "superseded"
)

// Change item statuses. An item is open while pending or deferred.
const (
	ItemPending    = "pending"
	ItemConfirmed  = "confirmed" // confirmed and applied to the task note
	ItemRejected   = "rejected"
	ItemDeferred   = "deferred"
	ItemStale      = "stale"      // confirmed, but its target changed since it was proposed: not applied
	ItemSuperseded = "superseded" // a newer wake proposed a value for the same field
	ItemExpired    = "expired"
	ItemUndone     = "undone" // confirmed and applied, then undone by the person
)

// Verdicts a person gives an item.
const (
	Confirmed = "confirmed"
	Rejected  = "rejected"
	Deferred  = "deferred"
	// Undone and Redone are the verdicts of an undo of an applied item
	// and of an undo of that undo (Undo).
	Undone = "undone"
	Redone = "redone"
)

// ChangeSet is one wake's proposals to a person (SPEC §3.3, §4.2).
type ChangeSet struct {
	ID      string       `json:"id"`
	Agent   string       `json:"agent"`
	Task    string       `json:"task"`
	Run     int64        `json:"run"`
	Path    string       `json:"path"`
	Status  string       `json:"status"`
	Created time.Time    `json:"created"`
	Expires time.Time    `json:"expires"`
	Items   []ChangeItem `json:"items"`

	fingerprint string // the file as margin last wrote it
}

// ChangeItem is one proposed change to the task note.
type ChangeItem struct {
	ID      string          `json:"id"` // the block id in the file: c1, c2, ...
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Summary string          `json:"summary"`
	Status  string          `json:"status"`
	// Base fingerprints the field or checklist line the item targets as it
	// was when proposed; applying re-checks it.
	Base   string `json:"base"`
	Reason string `json:"reason,omitempty"`
	// Detail explains a status margin chose (stale, not applied).
	Detail  string    `json:"detail,omitempty"`
	Decided time.Time `json:"decided,omitzero"`

	field string // what the item targets, for superseding
}

func (it ChangeItem) open() bool { return it.Status == ItemPending || it.Status == ItemDeferred }

// Decision is one verdict on one item, as the ledger keeps it.
type Decision struct {
	ID        int64     `json:"id"`
	Agent     string    `json:"agent"`
	Task      string    `json:"task"`
	ChangeSet string    `json:"changeSet"`
	Item      string    `json:"item"`
	Tool      string    `json:"tool"`
	Summary   string    `json:"summary"`
	Verdict   string    `json:"verdict"`
	Reason    string    `json:"reason,omitempty"`
	Outcome   string    `json:"outcome"` // the item's status after the decision
	Created   time.Time `json:"created"`
}

// PromptLine is the decision as the agent reads it in Recent User Decisions.
func (d Decision) PromptLine() string {
	s := fmt.Sprintf("%s %s: %s (%s)", d.Created.Format("2006-01-02"), d.Verdict, d.Summary, d.Tool)
	if d.Outcome == ItemStale {
		s += " — not applied: the task had changed since the proposal"
	}
	if d.Verdict == Undone {
		s += " — undone by the person after it was applied"
	}
	if d.Reason != "" {
		s += " — reason: " + d.Reason
	}
	return s
}

// ItemDecision is a person's verdict on one item of a change set.
type ItemDecision struct {
	Item    string `json:"item"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// target says what an item changes: a key for superseding and the current
// value of that target in the task note, which its base fingerprints.
func target(n *note.Note, tool string, args json.RawMessage) (field, value string) {
	if t, ok := itemTool(tool); ok {
		return t.targetIn(n, args)
	}
	return tool, ""
}

// ProposedAlready reports whether an open item makes the same change, so
// a wake that repeats a proposal the person has not decided yet adds
// nothing (and does not supersede it with itself).
func ProposedAlready(open []ChangeItem, n *note.Note, tool string, args json.RawMessage) bool {
	field, _ := target(n, tool, args)
	want := changeArgs(args)
	for _, it := range open {
		if it.field == field && changeArgs(it.Args) == want {
			return true
		}
	}
	return false
}

// changeArgs is the canonical form of a change's arguments without its
// human summary, which words the same change differently.
func changeArgs(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return string(args)
	}
	delete(m, "human_summary")
	b, _ := json.Marshal(m) // decoded from JSON, so it encodes
	return string(b)
}

// ItemBase fingerprints an item's target. It covers only that field or
// line, so applying one item of a set does not make its siblings stale.
func ItemBase(n *note.Note, tool string, args json.RawMessage) string {
	field, value := target(n, tool, args)
	sum := sha256.Sum256([]byte(field + "\x00" + value))
	return hex.EncodeToString(sum[:6])
}

// applyItem splices one confirmed item into the task note's content with a
// minimal diff. It returns stale (with why) when the item's target is no
// longer what it was proposed against, or its value is one the field
// cannot hold.
func applyItem(taskPath string, src []byte, it ChangeItem, taskRules note.Options) (out []byte, stale string, err error) {
	if err := CheckValues(it.Tool, it.Args); err != nil {
		// Never applicable, so not left pending: settled like a stale
		// item, with why.
		return nil, "refused, nothing written: " + err.Error(), nil
	}
	n := note.Parse(taskPath, src, taskRules)
	if n.FrontmatterError != "" {
		return nil, "", fmt.Errorf("the task's frontmatter does not parse: %s", n.FrontmatterError)
	}
	if inEffect(n, it) {
		// Already so (the person made the change by hand, or an apply
		// that crashed before recording it): confirmed with nothing to write.
		return src, "", nil
	}
	t, _ := itemTool(it.Tool) // CheckValues refuses a tool it does not know
	if ItemBase(n, it.Tool, it.Args) != it.Base {
		if _, value := target(n, it.Tool, it.Args); value == "" && t.gone != "" {
			return nil, t.gone, nil
		}
		return nil, "the task's " + t.label + " changed since it was proposed", nil
	}
	out, err = t.applyTo(src, n, it.Args)
	return out, "", err
}

// inEffect reports whether the task already reads as the item would make
// it, by the same no-op test proposals pass when the model makes them.
func inEffect(n *note.Note, it ChangeItem) bool {
	t, ok := itemTool(it.Tool)
	if !ok {
		return false
	}
	args := it.Args
	if t.item != "" {
		batch := cmp.Or(t.batch, "items")
		args = json.RawMessage(`{"` + batch + `":[` + string(it.Args) + `]}`)
	}
	// An add_link item carries the note its wake showed: that is what the
	// proposal is checked against again.
	var shown Shown
	var r RelatedNote
	if json.Unmarshal(it.Args, &r) == nil && r.Path != "" {
		shown.Related = []RelatedNote{r}
	}
	items, unchanged, err := t.items(n, shown, args)
	return err == nil && len(items) == 0 && len(unchanged) > 0
}

// setStatus is what a set's items make of it.
func setStatus(items []ChangeItem) string {
	open, superseded := 0, 0
	for _, it := range items {
		switch {
		case it.open():
			open++
		case it.Status == ItemSuperseded:
			superseded++
		}
	}
	switch {
	case superseded == len(items):
		return SetSuperseded
	case open == len(items):
		return SetPending
	case open > 0:
		return SetPartial
	}
	return SetResolved
}

func newChangeSetID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ChangeSetPath is where a change set's file of the agent with outputName
// lives (SPEC §3.3).
func ChangeSetPath(outputFolder, outputName string, created time.Time, id string) string {
	return path.Join(outputFolder, "Changes", outputName, created.Format("2006-01-02-1504")+"-"+id+".md")
}

// itemYAML is an item in the file's frontmatter, keys in SPEC order.
type itemYAML struct {
	ID      string         `yaml:"id"`
	Tool    string         `yaml:"tool"`
	Args    map[string]any `yaml:"args"`
	Summary string         `yaml:"summary"`
	Status  string         `yaml:"status"`
	Base    string         `yaml:"base"`
}

func itemsYAML(items []ChangeItem) []itemYAML {
	out := make([]itemYAML, len(items))
	for i, it := range items {
		var args map[string]any
		json.Unmarshal(it.Args, &args) // stored from valid JSON objects
		out[i] = itemYAML{ID: it.ID, Tool: it.Tool, Args: yamlArgs(it.Tool, args), Summary: it.Summary, Status: it.Status, Base: it.Base}
	}
	return out
}

// itemLine is an item's checkbox line in the file.
func itemLine(it ChangeItem) string {
	summary := note.OneLine(it.Summary)
	d := it.Decided.Format("2006-01-02")
	switch it.Status {
	case ItemConfirmed:
		return fmt.Sprintf("- [x] %s ✅ %s ^%s", summary, d, it.ID)
	case ItemRejected:
		if r := note.OneLine(it.Reason); r != "" {
			return fmt.Sprintf("- [-] %s ❌ %s — %s ^%s", summary, d, r, it.ID)
		}
		return fmt.Sprintf("- [-] %s ❌ %s ^%s", summary, d, it.ID)
	case ItemStale:
		return fmt.Sprintf("- [-] %s — not applied: %s ^%s", summary, note.OneLine(it.Detail), it.ID)
	case ItemUndone:
		return fmt.Sprintf("- [-] %s ↩️ undone %s ^%s", summary, d, it.ID)
	case ItemSuperseded, ItemExpired:
		return fmt.Sprintf("- [-] %s — %s ^%s", summary, it.Status, it.ID)
	}
	return fmt.Sprintf("- [ ] %s ^%s", summary, it.ID)
}

// renderChangeSet renders a new change set file, with the diffs of its
// items (by item id) below the lines.
func renderChangeSet(cs ChangeSet, diffs map[string]string) ([]byte, error) {
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(edit.Field{Key: "margin", Value: "changeset"}, edit.Field{Key: "id", Value: edit.Quoted(cs.ID)},
		edit.Field{Key: "task", Value: edit.Quoted(note.Wikilink(cs.Task))}, edit.Field{Key: "agent", Value: cs.Agent}, edit.Field{Key: "run", Value: cs.Run},
		edit.Field{Key: "status", Value: cs.Status}, edit.Field{Key: "created", Value: cs.Created}, edit.Field{Key: "expires", Value: cs.Expires},
		edit.Field{Key: "items", Value: []string{}}))
	if IsClient(cs.Agent) {
		fmt.Fprintf(&b, "%s proposed this over MCP; nothing changes in %s until you apply it.\n", strings.TrimPrefix(cs.Agent, ClientPrefix), cs.Task)
	}
	b.WriteString("Tick `[x]` to apply a change, or write `[-]` to reject it (text after ` — ` is your reason), then save.\n\n")
	for _, it := range cs.Items {
		b.WriteString(itemLine(it) + "\n")
	}
	b.WriteString(diffSection(cs.Items, diffs))
	// The items list goes in through the splicer, so a new file and an
	// updated one render it the same way.
	return edit.SetFrontmatter([]byte(b.String()), "items", itemsYAML(cs.Items))
}

// updateChangeSetFile rewrites the statuses in a change set file a person
// may have edited: the frontmatter's status and items are spliced and each
// decided item's line is replaced, found by its block id; everything else
// in the file stays as they wrote it. A line they deleted stays deleted.
func updateChangeSetFile(src []byte, cs ChangeSet) ([]byte, error) {
	out, err := edit.SetFrontmatter(src, "status", cs.Status)
	if err != nil {
		return nil, err
	}
	if out, err = edit.SetFrontmatter(out, "items", itemsYAML(cs.Items)); err != nil {
		return nil, err
	}
	n := note.Parse(cs.Path, out, note.Options{})
	for _, c := range n.Checklist {
		i := slices.IndexFunc(cs.Items, func(it ChangeItem) bool { return it.ID == c.BlockID })
		if i < 0 {
			continue
		}
		want := itemLine(cs.Items[i])
		if cs.Items[i].Status == ItemPending || strings.TrimSpace(c.Raw) == want {
			continue
		}
		if out, err = edit.ReplaceLine(out, c.Line, c.Raw, want); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fileDecisions reads the verdicts a person wrote into a change set file:
// `[x]` confirms, `[-]` rejects (text after " — " is the reason). A line
// counts only when its block id names an open item and its text still
// starts with the item's summary, so a half-typed or reworded line, or one
// pasted under another id, decides nothing. An id on two lines with
// different marks is ambiguous and decides nothing either.
func fileDecisions(src []byte, cs ChangeSet) (decisions []ItemDecision, ignored []string) {
	n := note.Parse(cs.Path, src, note.Options{})
	byItem := map[string]*ItemDecision{}
	conflict := map[string]bool{}
	var order []string
	for _, c := range n.Checklist {
		i := slices.IndexFunc(cs.Items, func(it ChangeItem) bool { return it.ID == c.BlockID })
		if i < 0 || !cs.Items[i].open() {
			continue
		}
		it := cs.Items[i]
		var d ItemDecision
		switch c.State {
		case 'x', 'X':
			d = ItemDecision{Item: it.ID, Verdict: Confirmed}
		case '-':
			d = ItemDecision{Item: it.ID, Verdict: Rejected}
		default:
			continue
		}
		summary := note.OneLine(it.Summary)
		text := note.OneLine(c.Text)
		switch {
		case text == summary:
		case strings.HasPrefix(text, summary+" — "):
			if d.Verdict != Rejected {
				ignored = append(ignored, fmt.Sprintf("%s: a reason only goes with a rejection", it.ID))
				continue
			}
			d.Reason = strings.TrimSpace(strings.TrimPrefix(text, summary+" — "))
		default:
			ignored = append(ignored, fmt.Sprintf("%s: the line no longer reads %q", it.ID, summary))
			continue
		}
		if prev, ok := byItem[it.ID]; ok {
			if *prev != d {
				conflict[it.ID] = true
			}
			continue
		}
		byItem[it.ID] = &d
		order = append(order, it.ID)
	}
	for _, id := range order {
		if conflict[id] {
			ignored = append(ignored, fmt.Sprintf("%s: two lines say different things", id))
			continue
		}
		decisions = append(decisions, *byItem[id])
	}
	return decisions, ignored
}
