package changes

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/edit"
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
	noteRef struct {
		Path string `json:"path" jsonschema:"a note's path exactly as listed under Related notes"`
	}
	linkNotesArgs struct {
		Notes        []noteRef `json:"notes"`
		HumanSummary string    `json:"human_summary,omitempty"`
	}
)

var (
	estimateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(m|h|d)$`)
	dateRE     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// The closed sets of values a task change may carry; the schemas' enums,
// the value checks and MCP's enums are all built from these.
var (
	taskStatuses = []string{"open", "in-progress", "blocked", "done", "cancelled"}
	priorities   = []string{"P0", "P1", "P2", "P3"}
)

// TaskStatuses are the statuses a task note may have, in the order a
// person reads them.
func TaskStatuses() []string { return slices.Clone(taskStatuses) }

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
	// Items validates a call against the task and what the wake showed,
	// and splits it into change items (one per checklist item or note to
	// link), each with its summary; items that would change nothing come
	// back in unchanged with the reason.
	Items func(t *note.Note, shown Shown, args json.RawMessage) (items []Proposal, unchanged []string, err error)
	// Unfit says why the tool cannot apply to the task, "" when it can;
	// nil for a tool that always can. A wake offers only the tools that
	// can apply (SPEC §4.1).
	Unfit func(t *note.Note, shown Shown) string
}

// Shown is what a wake showed the agent besides its task and entries: the
// notes a link tool may propose. The other tools ignore it.
type Shown struct {
	// Related are the notes shown as related by meaning, not linked.
	Related []RelatedNote
}

// RelatedNote is a note a wake showed as related to the task, with the
// link text that names it from the task: what Obsidian writes, the note's
// name when that resolves to it alone, else its path without ".md". It is
// also the argument of one add_link item.
type RelatedNote struct {
	Path string `json:"path"`
	Link string `json:"link"`
}

// taskTool is one deferred task tool and all margin does with it: what
// the model is offered, how a call becomes change items, which values an
// item may carry, what it targets in the task note and how it is applied.
// The agents' tools, the value checks, the fields clients may propose and
// MCP's enum all come from taskTools, so a new tool is one entry there.
type taskTool struct {
	name, description string
	// item is what one change item of the tool is called when that is not
	// name: a batch tool explodes into one item per checklist line or
	// note, so each is decided and learned from alone; batch is the
	// argument that lists them ("items" when "").
	item, batch string
	// field is what a client calls the task field the tool sets, and arg
	// the argument that carries its value; "" for a tool clients do not
	// propose through propose_task_change.
	field, arg string
	// label is what a person calls the target, in explanations.
	label  string
	schema func() *jsonschema.Schema
	// unfit is DeferredTool.Unfit, propose DeferredTool.Items; a field
	// tool without propose proposes the value in arg unless the field
	// holds it already.
	unfit   func(*note.Note, Shown) string
	propose func(t *note.Note, shown Shown, args json.RawMessage) ([]Proposal, []string, error)
	// check refuses an item whose value its field cannot hold.
	check func(v itemValues) error
	// frontmatter is the key a field tool sets to the string in arg, and
	// current that key's value in the note now. A tool without one says
	// what an item targets (a key under the item's name for superseding,
	// and the value its base fingerprints) and how it is applied.
	frontmatter string
	current     func(*note.Note) string
	target      func(n *note.Note, args json.RawMessage) (key, value string)
	apply       func(src []byte, n *note.Note, args json.RawMessage) ([]byte, error)
	// gone is why an item is stale when its target is no longer in the
	// task; "" when it cannot be gone, only changed.
	gone string
	// clientValue is a client's value as the argument; nil for the value
	// trimmed.
	clientValue func(string) any
}

// itemName is what one change item of the tool is called.
func (t *taskTool) itemName() string {
	if t.item != "" {
		return t.item
	}
	return t.name
}

// targetIn is what an item changes: a key for superseding and the
// current value of that target in the task note, which its base
// fingerprints.
func (t *taskTool) targetIn(n *note.Note, args json.RawMessage) (key, value string) {
	if t.frontmatter != "" {
		return t.itemName(), t.current(n)
	}
	key, value = t.target(n, args)
	return t.itemName() + key, value
}

// items validates a call against the task and splits it into change items.
func (t *taskTool) items(n *note.Note, shown Shown, args json.RawMessage) ([]Proposal, []string, error) {
	if t.propose != nil {
		return t.propose(n, shown, args)
	}
	v, reason := t.value(args)
	if t.current(n) == v {
		return nil, []string{"the " + t.label + " is already " + v}, nil
	}
	return []Proposal{{Args: args, Summary: because("Set "+t.label+" to "+v, reason)}}, nil, nil
}

// value is the value a field tool's arguments carry, and the model's reason.
func (t *taskTool) value(args json.RawMessage) (value, reason string) {
	var a map[string]any
	json.Unmarshal(args, &a) // validated against the schema when proposed
	value, _ = a[t.arg].(string)
	reason, _ = a["human_summary"].(string)
	return value, reason
}

// applyTo splices an item into the task note's source.
func (t *taskTool) applyTo(src []byte, n *note.Note, args json.RawMessage) ([]byte, error) {
	if t.frontmatter != "" {
		v, _ := t.value(args)
		return edit.SetFrontmatter(src, t.frontmatter, v)
	}
	return t.apply(src, n, args)
}

// itemTool is the tool whose change items go by the name item.
func itemTool(item string) (*taskTool, bool) {
	for i := range taskTools {
		if taskTools[i].itemName() == item {
			return &taskTools[i], true
		}
	}
	return nil, false
}

// ExplodedTool is the name a checklist item of a batch tool goes by: the
// seed's singular tools, so each item is decided and learned from alone.
func ExplodedTool(tool string) string {
	for i := range taskTools {
		if taskTools[i].name == tool {
			return taskTools[i].itemName()
		}
	}
	return tool
}

// TaskFields are the task fields a client may propose to change
// (propose_task_change), in the order a person reads them.
func TaskFields() []string {
	var fields []string
	for _, t := range taskTools {
		if t.field != "" {
			fields = append(fields, t.field)
		}
	}
	return fields
}

// fieldTool is the tool that changes a task field a client names.
func fieldTool(field string) (*taskTool, bool) {
	for i := range taskTools {
		if field != "" && taskTools[i].field == field {
			return &taskTools[i], true
		}
	}
	return nil, false
}

// DeferredTools are the tools whose calls wait in a change set for a person.
func DeferredTools() []DeferredTool {
	out := make([]DeferredTool, len(taskTools))
	for i := range taskTools {
		t := &taskTools[i]
		out[i] = DeferredTool{Name: t.name, Description: t.description, Schema: t.schema(), Items: t.items, Unfit: t.unfit}
	}
	return out
}

// noChecklist keeps the checklist tools off a task without a checklist.
func noChecklist(t *note.Note, _ Shown) string {
	if len(t.Checklist) == 0 {
		return "the task has no checklist"
	}
	return ""
}

// enum is a closed set as a schema's enum.
func enum(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

var taskTools = []taskTool{
	{name: "set_task_title", description: "Propose a new title for the task.",
		field: "title", arg: "title", label: "title", frontmatter: "title", current: func(n *note.Note) string { return n.Title },
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[titleArgs](func(s *jsonschema.Schema) {
				p := s.Properties["title"]
				p.MinLength, p.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(llm.LineMax)
			})
		},
		propose: func(t *note.Note, _ Shown, args json.RawMessage) ([]Proposal, []string, error) {
			var a titleArgs
			json.Unmarshal(args, &a) // validated against the schema already
			if strings.TrimSpace(a.Title) == t.Title {
				return nil, []string{"the title is already " + strconv.Quote(t.Title)}, nil
			}
			return []Proposal{{Args: args, Summary: because("Rename the task to "+strconv.Quote(a.Title), a.HumanSummary)}}, nil, nil
		},
		check: func(v itemValues) error { return checkLine("the title", v.Title, maxTitle) }},
	{name: "set_task_status", description: "Propose a new status for the task.",
		field: "status", arg: "status", label: "status", frontmatter: "status", current: ofTask(func(t *note.Task) string { return t.Status }),
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[statusArgs](func(s *jsonschema.Schema) {
				s.Properties["status"].Enum = enum(taskStatuses)
			})
		},
		check: func(v itemValues) error { return checkOneOf("status", v.Status, taskStatuses) }},
	{name: "update_task_estimate", description: "Propose a new time estimate for the task.",
		field: "estimate", arg: "estimate", label: "estimate", frontmatter: "estimate", current: ofTask(func(t *note.Task) string { return strconv.Itoa(t.Estimate) }),
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[estimateArgs](func(s *jsonschema.Schema) {
				s.Properties["estimate"].Pattern = estimateRE.String()
			})
		},
		propose: func(t *note.Note, _ Shown, args json.RawMessage) ([]Proposal, []string, error) {
			var a estimateArgs
			json.Unmarshal(args, &a)
			if t.Task != nil && t.Task.Estimate == estimateMinutes(a.Estimate) {
				return nil, []string{"the estimate is already " + note.FormatMinutes(t.Task.Estimate)}, nil
			}
			return []Proposal{{Args: args, Summary: because("Set estimate to "+a.Estimate, a.HumanSummary)}}, nil, nil
		},
		check: checkEstimate},
	{name: "update_task_due_date", description: "Propose a new due date for the task.",
		field: "due", arg: "due_date", label: "due date", frontmatter: "due", current: ofTask(func(t *note.Task) string { return t.Due }),
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[dueArgs](func(s *jsonschema.Schema) {
				s.Properties["due_date"].Pattern = dateRE.String()
			})
		},
		check: checkDue},
	{name: "update_task_priority", description: "Propose a new priority for the task.",
		field: "priority", arg: "priority", label: "priority", frontmatter: "priority", current: ofTask(func(t *note.Task) string { return t.Priority }),
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[priorityArgs](func(s *jsonschema.Schema) {
				s.Properties["priority"].Enum = enum(priorities)
			})
		},
		check: func(v itemValues) error { return checkOneOf("priority", v.Priority, priorities) }},
	{name: "assign_task_labels", description: "Propose labels to add to the task.",
		field: "labels", arg: "labels", label: "labels",
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[labelArgs](func(s *jsonschema.Schema) {
				p := s.Properties["labels"]
				p.MinItems = jsonschema.Ptr(1)
				p.Items.MinLength = jsonschema.Ptr(1)
			})
		},
		propose: func(t *note.Note, _ Shown, args json.RawMessage) ([]Proposal, []string, error) {
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
		},
		check: checkLabels,
		target: func(n *note.Note, _ json.RawMessage) (string, string) {
			return "", taskField(n, func(t *note.Task) string { return strings.Join(t.Labels, ",") })
		},
		apply: func(src []byte, n *note.Note, args json.RawMessage) ([]byte, error) {
			var a labelArgs
			json.Unmarshal(args, &a)
			var tags []string
			if n.Frontmatter != nil {
				tags = n.Frontmatter.Strings("tags")
			}
			for _, l := range a.Labels {
				if !slices.ContainsFunc(tags, func(x string) bool { return strings.EqualFold(x, l) }) {
					tags = append(tags, l)
				}
			}
			return edit.SetFrontmatter(src, "tags", tags)
		},
		clientValue: func(value string) any {
			var labels []string
			for l := range strings.SplitSeq(value, ",") {
				if l = strings.TrimSpace(l); l != "" {
					labels = append(labels, l)
				}
			}
			return labels
		}},
	{name: "add_multiple_checklist_items", item: "add_checklist_item", label: "checklist",
		description: "Propose checklist items to add to the task; each becomes its own change.", unfit: noChecklist,
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[addItemsArgs](func(s *jsonschema.Schema) {
				p := s.Properties["items"]
				p.MinItems = jsonschema.Ptr(1)
				p.Items.Properties["title"].MinLength = jsonschema.Ptr(1)
				p.Items.Properties["title"].MaxLength = jsonschema.Ptr(llm.LineMax)
			})
		},
		propose: func(t *note.Note, _ Shown, args json.RawMessage) ([]Proposal, []string, error) {
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
		},
		check: func(v itemValues) error { return checkLine("a checklist item's title", v.Title, maxItem) },
		target: func(n *note.Note, args json.RawMessage) (string, string) {
			var a newItem
			json.Unmarshal(args, &a)
			present := slices.ContainsFunc(n.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, a.Title) })
			return ":" + strings.ToLower(a.Title), strconv.FormatBool(present)
		},
		apply: func(src []byte, _ *note.Note, args json.RawMessage) ([]byte, error) {
			var a newItem
			json.Unmarshal(args, &a)
			return edit.AppendChecklistItem(src, note.OneLine(a.Title))
		}},
	{name: "update_checklist_items", item: "update_checklist_item", label: "checklist",
		description: "Propose checking or unchecking existing checklist items; each becomes its own change.", unfit: noChecklist,
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[updateItemsArgs](func(s *jsonschema.Schema) {
				p := s.Properties["items"]
				p.MinItems = jsonschema.Ptr(1)
				p.Items.Properties["text"].MinLength = jsonschema.Ptr(1)
				p.Items.Properties["text"].MaxLength = jsonschema.Ptr(llm.LineMax)
			})
		},
		propose: func(t *note.Note, _ Shown, args json.RawMessage) ([]Proposal, []string, error) {
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
		},
		check: func(v itemValues) error { return checkLine("a checklist item's text", v.Text, maxItem) },
		target: func(n *note.Note, args json.RawMessage) (string, string) {
			var a itemUpdate
			json.Unmarshal(args, &a)
			if i := slices.IndexFunc(n.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, a.Text) }); i >= 0 {
				return ":" + strings.ToLower(a.Text), strings.TrimSpace(n.Checklist[i].Raw)
			}
			return ":" + strings.ToLower(a.Text), ""
		},
		apply: func(src []byte, n *note.Note, args json.RawMessage) ([]byte, error) {
			var a itemUpdate
			json.Unmarshal(args, &a)
			i := slices.IndexFunc(n.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, a.Text) })
			c := n.Checklist[i] // the base check found it
			_, after, _ := strings.Cut(c.Raw, "]")
			state := ' '
			if a.Done {
				state = 'x'
			}
			return edit.SetCheckbox(src, c.Line, after, state)
		},
		gone: "the checklist line it targets is gone from the task"},
	{name: "link_related_notes", item: "add_link", batch: "notes", label: "related links",
		description: "Propose links from the task to notes listed under Related notes that bear on it; each becomes its own change, a [[link]] under the task's Related heading.",
		unfit: func(_ *note.Note, s Shown) string {
			if len(s.Related) == 0 {
				return "this wake showed no related notes"
			}
			return ""
		},
		schema: func() *jsonschema.Schema {
			return llm.ArgsSchema[linkNotesArgs](func(s *jsonschema.Schema) {
				p := s.Properties["notes"]
				p.MinItems = jsonschema.Ptr(1)
				p.Items.Properties["path"].MinLength = jsonschema.Ptr(1)
			})
		},
		propose: proposeLinks,
		check:   checkLink,
		target: func(n *note.Note, args json.RawMessage) (string, string) {
			var a RelatedNote
			json.Unmarshal(args, &a)
			return ":" + strings.ToLower(a.Path), strconv.FormatBool(linksTo(n, a))
		},
		apply: func(src []byte, _ *note.Note, args json.RawMessage) ([]byte, error) {
			var a RelatedNote
			json.Unmarshal(args, &a)
			return edit.AppendUnderSection(src, "## "+relatedHeading, "- [["+a.Link+"]]")
		}},
}

// relatedHeading is the task note's section that add_link items write
// their links under, created at the end of the note when missing.
const relatedHeading = "Related"

// proposeLinks makes one add_link item of each note the call names that
// the wake showed as related and the task does not link yet. A note the
// wake did not show refuses the whole call, with the notes it did show:
// the model may only link what it was shown, and a weak model's guessed
// path must not reach a person as a proposal.
func proposeLinks(t *note.Note, shown Shown, args json.RawMessage) ([]Proposal, []string, error) {
	var a linkNotesArgs
	json.Unmarshal(args, &a) // validated against the schema already
	var out []Proposal
	var unchanged, unknown []string
	done := map[string]bool{}
	for _, ref := range a.Notes {
		i := slices.IndexFunc(shown.Related, func(r RelatedNote) bool { return strings.EqualFold(r.Path, strings.TrimSpace(ref.Path)) })
		if i < 0 {
			unknown = append(unknown, strconv.Quote(ref.Path))
			continue
		}
		r := shown.Related[i]
		switch {
		case done[r.Path]:
			continue
		case linksTo(t, r):
			unchanged = append(unchanged, r.Path+" is already linked from the task")
		default:
			b, _ := json.Marshal(r)
			out = append(out, Proposal{Args: b, Summary: because("Link [["+r.Link+"]] under "+relatedHeading, a.HumanSummary)})
		}
		done[r.Path] = true
	}
	if len(unknown) > 0 {
		var paths []string
		for _, r := range shown.Related {
			paths = append(paths, r.Path)
		}
		verb := "are"
		if len(unknown) == 1 {
			verb = "is"
		}
		return nil, nil, fmt.Errorf("%s %s not among the related notes this wake showed; nothing was proposed: link only these notes, by their path: %s",
			strings.Join(unknown, ", "), verb, strings.Join(paths, ", "))
	}
	return out, unchanged, nil
}

// linksTo reports whether the task links the related note, by a link
// naming it as the item would or by its path: the two spellings that
// resolve to it (a link by another name or alias is not told apart here,
// where there is no index; the wake's related notes leave those out).
func linksTo(n *note.Note, r RelatedNote) bool {
	want := []string{note.LinkKey(r.Link), note.LinkKey(r.Path)}
	for _, l := range n.Links {
		if k := note.LinkKey(l.Target); k != "" && slices.Contains(want, k) {
			return true
		}
	}
	return false
}

func ofTask(f func(*note.Task) string) func(*note.Note) string {
	return func(n *note.Note) string { return taskField(n, f) }
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
