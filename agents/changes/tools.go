package changes

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/agents/internal/kit"
	"github.com/margin-md/margin/vault/note"
)

// Argument types of the deferred tools. Field order is the order the model sees.
type (
	titleArgs struct {
		Title        string `json:"title"`
		HumanSummary string `json:"human_summary,omitempty" jsonschema:"why, in one line; the person reads it after margin's own words for the change"`
	}
	statusArgs struct {
		Status       string `json:"status"`
		HumanSummary string `json:"human_summary,omitempty"`
	}
	estimateArgs struct {
		Estimate     string `json:"estimate" jsonschema:"a duration such as 90m, 2h, 1.5h or 1d (a day is 8 hours)"`
		HumanSummary string `json:"human_summary,omitempty"`
	}
	dueArgs struct {
		DueDate      string `json:"due_date" jsonschema:"YYYY-MM-DD"`
		HumanSummary string `json:"human_summary,omitempty"`
	}
	priorityArgs struct {
		Priority     string `json:"priority"`
		HumanSummary string `json:"human_summary,omitempty"`
	}
	labelArgs struct {
		Labels       []string `json:"labels"`
		HumanSummary string   `json:"human_summary,omitempty"`
	}
	newItem struct {
		Title string `json:"title"`
	}
	addItemsArgs struct {
		Items        []newItem `json:"items"`
		HumanSummary string    `json:"human_summary,omitempty"`
	}
	itemUpdate struct {
		Text string `json:"text" jsonschema:"the checklist item's text as it is now"`
		Done bool   `json:"done"`
	}
	updateItemsArgs struct {
		Items        []itemUpdate `json:"items"`
		HumanSummary string       `json:"human_summary,omitempty"`
	}
)

var (
	estimateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(m|h|d)$`)
	dateRE     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

var statuses = []any{"open", "in-progress", "blocked", "done", "cancelled"}

// Proposal is one change item of a deferred tool call.
type Proposal struct {
	Args    json.RawMessage
	Summary string
	// Base fingerprints only what the item targets (ItemBase), so
	// applying one item of a set does not make its siblings stale.
	Base string
}

// DeferredTool is a tool whose calls become proposals (SPEC §4.1): the
// change-set flow routes them to a person; the tool applies nothing.
type DeferredTool struct {
	Name, Description string
	Schema            *jsonschema.Schema
	// Items validates a call against the task and splits it into change
	// items (one per checklist item), each with its summary; items that
	// would change nothing come back in unchanged with the reason.
	Items func(t *note.Note, args json.RawMessage) (items []Proposal, unchanged []string, err error)
	// Unfit says why the tool cannot apply to the task, "" when it can;
	// nil for a tool that always can. A wake offers only the tools that
	// can apply (SPEC §4.1).
	Unfit func(t *note.Note) string
}

// noChecklist keeps the checklist tools off a task without a checklist.
func noChecklist(t *note.Note) string {
	if len(t.Checklist) == 0 {
		return "the task has no checklist"
	}
	return ""
}

// DeferredTools are the tools whose calls wait in a change set for a person.
func DeferredTools() []DeferredTool {
	return []DeferredTool{
		{Name: "set_task_title", Description: "Propose a new title for the task.",
			Schema: kit.SchemaFor[titleArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "title", func(p *jsonschema.Schema) { p.MinLength = kit.One(1) })
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a titleArgs
				json.Unmarshal(args, &a) // validated against the schema already
				if strings.TrimSpace(a.Title) == t.Title {
					return nil, []string{"the title is already " + strconv.Quote(t.Title)}, nil
				}
				return []Proposal{{Args: args, Summary: because("Rename the task to "+strconv.Quote(a.Title), a.HumanSummary)}}, nil, nil
			}},
		{Name: "set_task_status", Description: "Propose a new status for the task.",
			Schema: kit.SchemaFor[statusArgs](func(s *jsonschema.Schema) { kit.SetProp(s, "status", func(p *jsonschema.Schema) { p.Enum = statuses }) }),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a statusArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Status }) == a.Status {
					return nil, []string{"the status is already " + a.Status}, nil
				}
				return []Proposal{{Args: args, Summary: because("Set status to "+a.Status, a.HumanSummary)}}, nil, nil
			}},
		{Name: "update_task_estimate", Description: "Propose a new time estimate for the task.",
			Schema: kit.SchemaFor[estimateArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "estimate", func(p *jsonschema.Schema) { p.Pattern = estimateRE.String() })
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a estimateArgs
				json.Unmarshal(args, &a)
				if t.Task != nil && t.Task.Estimate == estimateMinutes(a.Estimate) {
					return nil, []string{"the estimate is already " + note.FormatMinutes(t.Task.Estimate)}, nil
				}
				return []Proposal{{Args: args, Summary: because("Set estimate to "+a.Estimate, a.HumanSummary)}}, nil, nil
			}},
		{Name: "update_task_due_date", Description: "Propose a new due date for the task.",
			Schema: kit.SchemaFor[dueArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "due_date", func(p *jsonschema.Schema) { p.Pattern = dateRE.String() })
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a dueArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Due }) == a.DueDate {
					return nil, []string{"the due date is already " + a.DueDate}, nil
				}
				return []Proposal{{Args: args, Summary: because("Set due date to "+a.DueDate, a.HumanSummary)}}, nil, nil
			}},
		{Name: "update_task_priority", Description: "Propose a new priority for the task.",
			Schema: kit.SchemaFor[priorityArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "priority", func(p *jsonschema.Schema) { p.Enum = []any{"P0", "P1", "P2", "P3"} })
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a priorityArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Priority }) == a.Priority {
					return nil, []string{"the priority is already " + a.Priority}, nil
				}
				return []Proposal{{Args: args, Summary: because("Set priority to "+a.Priority, a.HumanSummary)}}, nil, nil
			}},
		{Name: "assign_task_labels", Description: "Propose labels to add to the task.",
			Schema: kit.SchemaFor[labelArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "labels", func(p *jsonschema.Schema) { p.MinItems = kit.One(1); p.Items.MinLength = kit.One(1) })
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a labelArgs
				json.Unmarshal(args, &a)
				var add []string
				for _, l := range a.Labels {
					if t.Task == nil || !slices.ContainsFunc(t.Task.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
						add = append(add, l)
					}
				}
				if len(add) == 0 {
					return nil, []string{"the task already has every one of these labels"}, nil
				}
				return []Proposal{{Args: args, Summary: because("Add labels "+strings.Join(add, ", "), a.HumanSummary)}}, nil, nil
			}},
		{Name: "add_multiple_checklist_items", Description: "Propose checklist items to add to the task; each becomes its own change.", Unfit: noChecklist,
			Schema: kit.SchemaFor[addItemsArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "items", func(p *jsonschema.Schema) {
					p.MinItems = kit.One(1)
					p.Items.Properties["title"].MinLength = kit.One(1)
				})
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a addItemsArgs
				json.Unmarshal(args, &a)
				var out []Proposal
				var unchanged []string
				for _, it := range a.Items {
					if slices.ContainsFunc(t.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, it.Title) }) {
						unchanged = append(unchanged, strconv.Quote(it.Title)+" is already on the checklist")
						continue
					}
					b, _ := json.Marshal(it)
					out = append(out, Proposal{Args: b, Summary: because("Add checklist item "+strconv.Quote(it.Title), a.HumanSummary)})
				}
				return out, unchanged, nil
			}},
		{Name: "update_checklist_items", Description: "Propose checking or unchecking existing checklist items; each becomes its own change.", Unfit: noChecklist,
			Schema: kit.SchemaFor[updateItemsArgs](func(s *jsonschema.Schema) {
				kit.SetProp(s, "items", func(p *jsonschema.Schema) {
					p.MinItems = kit.One(1)
					p.Items.Properties["text"].MinLength = kit.One(1)
				})
			}),
			Items: func(t *note.Note, args json.RawMessage) ([]Proposal, []string, error) {
				var a updateItemsArgs
				json.Unmarshal(args, &a)
				var out []Proposal
				var unchanged []string
				for _, u := range a.Items {
					i := slices.IndexFunc(t.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, u.Text) })
					if i < 0 {
						return nil, nil, fmt.Errorf("no checklist item reads %q; use the exact text of an item", u.Text)
					}
					item := t.Checklist[i]
					if isDone := item.State == 'x' || item.State == 'X'; isDone == u.Done {
						unchanged = append(unchanged, fmt.Sprintf("%q is already %s", u.Text, map[bool]string{true: "done", false: "not done"}[u.Done]))
						continue
					}
					b, _ := json.Marshal(u)
					verb := "Check off "
					if !u.Done {
						verb = "Uncheck "
					}
					out = append(out, Proposal{Args: b, Summary: because(verb+strconv.Quote(item.Text), a.HumanSummary)})
				}
				return out, unchanged, nil
			}},
	}
}

func taskField(n *note.Note, f func(*note.Task) string) string {
	if n.Task == nil {
		return ""
	}
	return f(n.Task)
}

// estimateMinutes reads what estimateRE accepts, as note does: a day is 8 hours.
func estimateMinutes(s string) int {
	return int(min(estimateSpan(s), maxEstimateM+1) + 0.5)
}

// estimateSpan is estimateMinutes before rounding, in a float so that an
// absurd estimate stays absurd instead of overflowing an int.
func estimateSpan(s string) float64 {
	m := estimateRE.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	switch m[2] {
	case "h":
		n *= 60
	case "d":
		n *= 8 * 60
	}
	return n
}
