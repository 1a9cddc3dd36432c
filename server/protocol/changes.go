package protocol

import (
	"encoding/json"
	"time"
)

// ChangeSet is one wake's proposals to a person.
type ChangeSet struct {
	ID      string       `json:"id"`
	Agent   string       `json:"agent"` // the task agent's id, or mcp:<client name>
	Task    string       `json:"task"`
	Run     int64        `json:"run"`
	Path    string       `json:"path"`
	Status  string       `json:"status"` // pending | partially-resolved | resolved | expired | superseded
	Created time.Time    `json:"created"`
	Expires time.Time    `json:"expires"`
	Items   []ChangeItem `json:"items"`
}

// ChangeItem is one proposed change to a task note.
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
}

// ChangesListParams are changes/list's params.
type ChangesListParams struct {
	Task   string `json:"task,omitempty"`
	Status string `json:"status,omitempty"` // pending | partially-resolved | resolved | expired | superseded | all
}

// ChangesListResult is changes/list's result.
type ChangesListResult struct {
	ChangeSets []ChangeSet `json:"changeSets"`
}

// ChangesDecideParams are changes/decide's params.
type ChangesDecideParams struct {
	ID        string         `json:"id"`
	Decisions []ItemDecision `json:"decisions"`
}

// ItemDecision is a person's verdict on one item of a change set.
type ItemDecision struct {
	Item    string `json:"item"`
	Verdict string `json:"verdict"` // confirmed | rejected | deferred
	Reason  string `json:"reason,omitempty"`
}

// ChangesConfirmAllParams are changes/confirmAll's params.
type ChangesConfirmAllParams struct {
	ID string `json:"id"`
}

// ChangesPreviewParams are changes/preview's params: one open item of a
// change set. A decided item is -33007 (only an open item can be
// previewed); an unknown set or item -33000; a note that cannot be read
// as a task now (its frontmatter does not parse) -33006.
type ChangesPreviewParams struct {
	ID   string `json:"id"`
	Item string `json:"item"`
}

// ChangePreview is changes/preview's result: the note the item changes as
// it is now (the editor's buffer when it is open there, as applying would
// find it) and as applying that item alone would leave it, computed by the
// code that applies, so a diff of the two is exactly what a confirm
// writes. A stale item (its target moved on; a confirm would not apply
// it) has stale and the reason applying would give, and no after. Reason
// also says when applying would write nothing. Properties are the
// frontmatter keys the item adds, removes or changes, for an editor to
// show as properties ("status: open → done") rather than YAML lines.
// The texts are the note's UTF-8; an invalid byte reads as U+FFFD.
type ChangePreview struct {
	ID         string           `json:"id"`
	Item       string           `json:"item"`
	Summary    string           `json:"summary"`
	Path       string           `json:"path"`
	Exists     bool             `json:"exists"`   // false for a note a proposed edit would create
	InEditor   bool             `json:"inEditor"` // before is the editor's buffer, not the file
	Before     string           `json:"before"`
	After      string           `json:"after,omitempty"`
	Stale      bool             `json:"stale"`
	Reason     string           `json:"reason,omitempty"`
	Properties []PropertyChange `json:"properties"`
}

// PropertyChange is one frontmatter key a change adds, removes or changes,
// its values as Obsidian's properties show them (a list's items joined by
// ", ").
type PropertyChange struct {
	Key    string `json:"key"`
	Before string `json:"before,omitempty"` // absent when added
	After  string `json:"after,omitempty"`  // absent when removed
	Change string `json:"change"`           // added | removed | changed
}

// ChangesUndoParams are changes/undo's params: the item, or items, of
// the change set to undo; all its applied items when neither is given.
// Undoing an undone item applies it again. When the note no longer holds
// what margin wrote, or a later write of margin's that still stands
// changed the item's lines (even back to the same text), the error is
// -33001 with data {path, original, margin, current, later?}
// (vault/history.ConflictError; later names that write, to undo first)
// and nothing is written. Write, instead of id, undoes margin's write of
// that history id that applied no change item (a report, a journal or
// log entry, a template), by the same rule.
type ChangesUndoParams struct {
	ID    string   `json:"id,omitempty"`
	Item  string   `json:"item,omitempty"`
	Items []string `json:"items,omitempty"`
	Write int64    `json:"write,omitempty"`
}

// ChangesUndoResult is changes/undo's result: the change set, for an undo
// of its items; the write undone, for an undo by write id.
type ChangesUndoResult struct {
	*ChangeSet
	Write *UndoneWrite `json:"write,omitempty"`
}

// UndoneWrite is the write changes/undo {write} undid.
type UndoneWrite struct {
	Write int64  `json:"write"`
	Path  string `json:"path"`
}

// DecisionsListParams are decisions/list's params.
type DecisionsListParams struct {
	Agent string `json:"agent,omitempty"`
	Task  string `json:"task,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// DecisionsListResult is decisions/list's result.
type DecisionsListResult struct {
	Decisions []Decision `json:"decisions"`
}

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

// ShowChangesResult is margin.showChanges's result: the change set a "N
// suggested changes" lens names, and whether the editor was asked to open
// its file.
type ShowChangesResult struct {
	ChangeSet
	Shown bool `json:"shown"`
}
