package agents

import (
	"context"
	"encoding/json"
	"errors"
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

// tool is one tool a wake offers.
type tool struct {
	name, description string
	schema            *jsonschema.Schema
	run               func(ctx context.Context, args json.RawMessage) (string, error)
}

// tool implements llm.Tool.
func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.description }
func (t *tool) Schema() *jsonschema.Schema { return t.schema }
func (t *tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.run(ctx, args)
}

// schemaFor generates a tool's argument schema from its Go type, then lets
// edit tighten it (enums, patterns, minimums) where Go types cannot say it.
func schemaFor[T any](edit func(s *jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err)) // the argument types are fixed at compile time
	}
	if edit != nil {
		edit(s)
	}
	return s
}

func one(n int) *int { return &n }

// Argument types of the tools. Field order is the order the model sees.
type (
	reportArgs struct {
		TLDR    string `json:"tldr" jsonschema:"one to three sentences on where the task stands"`
		Content string `json:"content" jsonschema:"the whole report, markdown"`
	}
	observationArgs struct {
		Observations []string `json:"observations" jsonschema:"private notes worth remembering on later wakes, one sentence each"`
	}
	languageArgs struct {
		Language string `json:"language" jsonschema:"BCP 47 language code of the task's notes, e.g. en, de, ko, pt-BR"`
	}
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
	languageRE = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	estimateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(m|h|d)$`)
	dateRE     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

var statuses = []any{"open", "in-progress", "blocked", "done", "cancelled"}

func setProp(s *jsonschema.Schema, name string, f func(p *jsonschema.Schema)) { f(s.Properties[name]) }

// wakeTools holds what the tools of one wake share: the run they belong
// to, the task as they last read or wrote it, and what they did.
type wakeTools struct {
	w *wake

	reported bool   // update_report ran
	tldr     string // and wrote this
}

// toolbox builds the wake's tools: three immediate, the rest deferred.
func (wt *wakeTools) toolbox() (*llm.Toolbox, error) {
	nonEmpty := func(names ...string) func(*jsonschema.Schema) {
		return func(s *jsonschema.Schema) {
			for _, n := range names {
				setProp(s, n, func(p *jsonschema.Schema) { p.MinLength = one(1) })
			}
		}
	}
	tools := []llm.Tool{
		&tool{name: "update_report", description: "Publish the task's new report: a short tldr and the whole report as markdown. Call it once, last; the wake ends with it.",
			schema: schemaFor[reportArgs](nonEmpty("tldr", "content")), run: wt.updateReport},
		&tool{name: "record_observations", description: "Append private observations to your journal, to remember on later wakes.",
			schema: schemaFor[observationArgs](func(s *jsonschema.Schema) {
				setProp(s, "observations", func(p *jsonschema.Schema) { p.MinItems = one(1); p.Items.MinLength = one(1) })
			}), run: wt.recordObservations},
		&tool{name: "set_task_language", description: "Set the language of the task's notes when it is clear and not set yet.",
			schema: schemaFor[languageArgs](func(s *jsonschema.Schema) {
				setProp(s, "language", func(p *jsonschema.Schema) { p.Pattern = languageRE.String() })
			}), run: wt.setLanguage},
	}
	for _, d := range deferredTools() {
		tools = append(tools, &tool{name: d.name, description: d.description + " The person approves or rejects it.", schema: d.schema,
			run: func(ctx context.Context, args json.RawMessage) (string, error) { return wt.propose(ctx, d, args) }})
	}
	return llm.NewToolbox(tools...)
}

// effect runs fn once per operation id: a call that a crashed attempt of
// the same run already made returns what it returned then, and does not
// write anything again.
//
// An effect that is not idempotent (an append) passes landed, which says
// whether the effect is already in the vault and with what result: the
// call is then recorded as started before fn runs, so a crash between the
// write and its record leaves a trace, and the re-run asks landed instead
// of writing again.
func (wt *wakeTools) effect(ctx context.Context, name string, args json.RawMessage, deferred bool,
	fn func() (status, result string, ps []proposal, err error), landed func() (result string, ok bool)) (string, error) {
	w := wt.w
	op, err := operationID(w.key, name, args)
	if err != nil {
		return "", err
	}
	prev, seen, err := w.rt.store.toolCall(ctx, op)
	if err != nil {
		return "", err
	}
	if seen && prev.Status != toolCallStarted {
		return prev.Result + " (already done by an earlier attempt of this run)", nil
	}
	canon, _ := canonicalJSON(args) // operationID parsed args already
	tc := ToolCall{OperationID: op, Run: w.run, Tool: name, Args: json.RawMessage(canon), Deferred: deferred,
		Status: toolCallStarted, Created: w.rt.now()}
	if landed != nil {
		if seen {
			if result, ok := landed(); ok {
				return result, w.rt.store.finishToolCall(ctx, op, "applied", result)
			}
		} else if err := w.rt.store.addToolCall(ctx, w.agent.ID, tc, nil); err != nil {
			return "", err
		}
	}
	status, result, ps, err := fn()
	if err != nil {
		if landed != nil {
			if derr := w.rt.store.dropToolCall(ctx, op); derr != nil {
				return "", errors.Join(err, derr)
			}
		}
		return "", err
	}
	if landed != nil {
		return result, w.rt.store.finishToolCall(ctx, op, status, result)
	}
	tc.Status, tc.Result = status, result
	if err := w.rt.store.addToolCall(ctx, w.agent.ID, tc, ps); err != nil {
		return "", err
	}
	return result, nil
}

// settleStarted resolves the calls a crash interrupted mid-effect, before
// the run is re-run (whose model may not repeat them): one whose effect is
// in the vault is recorded as applied; one whose effect is not is
// forgotten, as if never made, so a repeat of it runs.
func (w *wake) settleStarted(ctx context.Context) error {
	calls, err := w.rt.store.startedToolCalls(ctx, w.run)
	if err != nil {
		return err
	}
	for _, tc := range calls {
		landed := false
		var texts []string
		if tc.Tool == "record_observations" {
			var a observationArgs
			json.Unmarshal(tc.Args, &a)
			texts = observationTexts(a.Observations)
			if landed, err = journalHas(w.rt.v.Root(), w.journalPath(), texts); err != nil {
				return err
			}
		}
		if !landed {
			err = w.rt.store.dropToolCall(ctx, tc.OperationID)
		} else {
			err = w.rt.store.finishToolCall(ctx, tc.OperationID, "applied", fmt.Sprintf("recorded %d observation(s) in the journal", len(texts)))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (wt *wakeTools) updateReport(ctx context.Context, args json.RawMessage) (string, error) {
	var a reportArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.TLDR) == "" || strings.TrimSpace(a.Content) == "" {
		return "", errors.New("tldr and content must not be blank")
	}
	out, err := wt.effect(ctx, "update_report", args, false, func() (string, string, []proposal, error) {
		if err := wt.w.writeReport(ctx, a.TLDR, a.Content, wt.w.modelID()); err != nil {
			return "", "", nil, err
		}
		return "applied", "report published", nil, nil
	}, nil)
	if err == nil {
		wt.reported, wt.tldr = true, a.TLDR
	}
	return out, err
}

func (wt *wakeTools) recordObservations(ctx context.Context, args json.RawMessage) (string, error) {
	var a observationArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	w := wt.w
	texts := observationTexts(a.Observations)
	result := fmt.Sprintf("recorded %d observation(s) in the journal", len(texts))
	return wt.effect(ctx, "record_observations", args, false, func() (string, string, []proposal, error) {
		now := w.rt.now()
		lines := make([]string, 0, len(texts))
		for _, o := range texts {
			lines = append(lines, journalLine(now, o))
		}
		if len(lines) == 0 {
			return "", "", nil, errors.New("every observation is blank")
		}
		if err := appendJournal(ctx, w.rt.v.Root(), w.rt.opts.Editor, w.journalPath(), w.agent.Task, w.agent.ID, lines); err != nil {
			return "", "", nil, err
		}
		return "applied", result, nil, nil
	}, func() (string, bool) {
		in, err := journalHas(w.rt.v.Root(), w.journalPath(), texts)
		return result, err == nil && in
	})
}

// observationTexts are the observations as journal lines carry them.
func observationTexts(obs []string) []string {
	out := make([]string, 0, len(obs))
	for _, o := range obs {
		if o = oneLine(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// setLanguage is the one direct write to a person's task note (SPEC §1.3):
// a frontmatter splice. A note open in the editor is spliced there, into
// the buffer as it is now (workspace/applyEdit with its version); a closed
// one on disk, compare-and-swap against the note as the wake read it, so
// an edit made meanwhile is never overwritten.
func (wt *wakeTools) setLanguage(ctx context.Context, args json.RawMessage) (string, error) {
	var a languageArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	w := wt.w
	if err := languageUnset(w.task); err != nil {
		return "", err
	}
	return wt.effect(ctx, "set_task_language", args, false, func() (string, string, []proposal, error) {
		if ed := w.rt.opts.Editor; ed != nil {
			if buffer, version, open := ed.Open(w.agent.Task); open {
				// The buffer may have been given a language since the wake read the note.
				if err := languageUnset(note.Parse(w.agent.Task, []byte(buffer), note.Options{TaskFolders: w.rt.v.Options().TaskFolders})); err != nil {
					return "", "", nil, err
				}
				updated, err := edit.SetFrontmatter([]byte(buffer), "language", a.Language)
				if err != nil {
					return "", "", nil, fmt.Errorf("setting the language: %w", err)
				}
				applied, err := ed.ApplyEdit(ctx, w.agent.Task, version, string(updated))
				if err != nil {
					return "", "", nil, fmt.Errorf("setting the language in the task note open in the editor: %w; nothing was written", err)
				}
				if !applied {
					return "", "", nil, errors.New("setting the language: the editor refused the edit of the open task note; nothing was written")
				}
				// Saved as it is, the buffer is what the agent has seen.
				w.taskWritten(updated, edit.FingerprintOf(updated))
				return "applied", "language set to " + a.Language + " in the note open in the editor", nil, nil
			}
		}
		updated, err := edit.SetFrontmatter(w.taskSnap.Content, "language", a.Language)
		if err != nil {
			return "", "", nil, fmt.Errorf("setting the language: %w", err)
		}
		fp, err := w.rt.v.Root().Write(w.agent.Task, w.taskSnap.Fingerprint, updated)
		if err != nil {
			return "", "", nil, fmt.Errorf("setting the language: %w", err)
		}
		w.taskWritten(updated, fp)
		return "applied", "language set to " + a.Language, nil, nil
	}, nil)
}

// languageUnset refuses set_task_language on a task whose language is
// set: the tool only fills in a language the person has not chosen, and
// changing their choice is theirs to make.
func languageUnset(n *note.Note) error {
	if n.Task != nil && n.Task.Language != "" {
		return fmt.Errorf("the task's language is already %s; set_task_language only sets a language that is not set yet", n.Task.Language)
	}
	return nil
}

// proposal is one change item of a deferred tool call.
type proposal struct {
	Args    json.RawMessage
	Summary string
	// Base fingerprints only what the item targets (itemBase), so
	// applying one item of a set does not make its siblings stale.
	Base string
}

// deferredTool is a tool whose calls become proposals (SPEC §4.1): the
// change-set flow routes them to a person; nothing here applies them.
type deferredTool struct {
	name, description string
	schema            *jsonschema.Schema
	// items validates a call against the task and splits it into change
	// items (one per checklist item), each with its summary; items that
	// would change nothing come back in unchanged with the reason.
	items func(t *note.Note, args json.RawMessage) (items []proposal, unchanged []string, err error)
}

func deferredTools() []deferredTool {
	return []deferredTool{
		{name: "set_task_title", description: "Propose a new title for the task.",
			schema: schemaFor[titleArgs](func(s *jsonschema.Schema) { setProp(s, "title", func(p *jsonschema.Schema) { p.MinLength = one(1) }) }),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a titleArgs
				json.Unmarshal(args, &a) // validated against the schema already
				if strings.TrimSpace(a.Title) == t.Title {
					return nil, []string{"the title is already " + strconv.Quote(t.Title)}, nil
				}
				return []proposal{{Args: args, Summary: because("Rename the task to "+strconv.Quote(a.Title), a.HumanSummary)}}, nil, nil
			}},
		{name: "set_task_status", description: "Propose a new status for the task.",
			schema: schemaFor[statusArgs](func(s *jsonschema.Schema) { setProp(s, "status", func(p *jsonschema.Schema) { p.Enum = statuses }) }),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a statusArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Status }) == a.Status {
					return nil, []string{"the status is already " + a.Status}, nil
				}
				return []proposal{{Args: args, Summary: because("Set status to "+a.Status, a.HumanSummary)}}, nil, nil
			}},
		{name: "update_task_estimate", description: "Propose a new time estimate for the task.",
			schema: schemaFor[estimateArgs](func(s *jsonschema.Schema) {
				setProp(s, "estimate", func(p *jsonschema.Schema) { p.Pattern = estimateRE.String() })
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a estimateArgs
				json.Unmarshal(args, &a)
				if t.Task != nil && t.Task.Estimate == estimateMinutes(a.Estimate) {
					return nil, []string{"the estimate is already " + formatMinutes(t.Task.Estimate)}, nil
				}
				return []proposal{{Args: args, Summary: because("Set estimate to "+a.Estimate, a.HumanSummary)}}, nil, nil
			}},
		{name: "update_task_due_date", description: "Propose a new due date for the task.",
			schema: schemaFor[dueArgs](func(s *jsonschema.Schema) {
				setProp(s, "due_date", func(p *jsonschema.Schema) { p.Pattern = dateRE.String() })
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a dueArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Due }) == a.DueDate {
					return nil, []string{"the due date is already " + a.DueDate}, nil
				}
				return []proposal{{Args: args, Summary: because("Set due date to "+a.DueDate, a.HumanSummary)}}, nil, nil
			}},
		{name: "update_task_priority", description: "Propose a new priority for the task.",
			schema: schemaFor[priorityArgs](func(s *jsonschema.Schema) {
				setProp(s, "priority", func(p *jsonschema.Schema) { p.Enum = []any{"P0", "P1", "P2", "P3"} })
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a priorityArgs
				json.Unmarshal(args, &a)
				if taskField(t, func(t *note.Task) string { return t.Priority }) == a.Priority {
					return nil, []string{"the priority is already " + a.Priority}, nil
				}
				return []proposal{{Args: args, Summary: because("Set priority to "+a.Priority, a.HumanSummary)}}, nil, nil
			}},
		{name: "assign_task_labels", description: "Propose labels to add to the task.",
			schema: schemaFor[labelArgs](func(s *jsonschema.Schema) {
				setProp(s, "labels", func(p *jsonschema.Schema) { p.MinItems = one(1); p.Items.MinLength = one(1) })
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
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
				return []proposal{{Args: args, Summary: because("Add labels "+strings.Join(add, ", "), a.HumanSummary)}}, nil, nil
			}},
		{name: "add_multiple_checklist_items", description: "Propose checklist items to add to the task; each becomes its own change.",
			schema: schemaFor[addItemsArgs](func(s *jsonschema.Schema) {
				setProp(s, "items", func(p *jsonschema.Schema) {
					p.MinItems = one(1)
					p.Items.Properties["title"].MinLength = one(1)
				})
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a addItemsArgs
				json.Unmarshal(args, &a)
				var out []proposal
				var unchanged []string
				for _, it := range a.Items {
					if slices.ContainsFunc(t.Checklist, func(c note.ChecklistItem) bool { return strings.EqualFold(c.Text, it.Title) }) {
						unchanged = append(unchanged, strconv.Quote(it.Title)+" is already on the checklist")
						continue
					}
					b, _ := json.Marshal(it)
					out = append(out, proposal{Args: b, Summary: because("Add checklist item "+strconv.Quote(it.Title), a.HumanSummary)})
				}
				return out, unchanged, nil
			}},
		{name: "update_checklist_items", description: "Propose checking or unchecking existing checklist items; each becomes its own change.",
			schema: schemaFor[updateItemsArgs](func(s *jsonschema.Schema) {
				setProp(s, "items", func(p *jsonschema.Schema) {
					p.MinItems = one(1)
					p.Items.Properties["text"].MinLength = one(1)
				})
			}),
			items: func(t *note.Note, args json.RawMessage) ([]proposal, []string, error) {
				var a updateItemsArgs
				json.Unmarshal(args, &a)
				var out []proposal
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
					out = append(out, proposal{Args: b, Summary: because(verb+strconv.Quote(item.Text), a.HumanSummary)})
				}
				return out, unchanged, nil
			}},
	}
}

// propose records a deferred call's change items as proposals; items that
// would change nothing are dropped and the model is told why.
func (wt *wakeTools) propose(ctx context.Context, d deferredTool, args json.RawMessage) (string, error) {
	w := wt.w
	items, unchanged, err := d.items(w.task, args)
	if err != nil {
		return "", err
	}
	for _, p := range items {
		if err := checkValues(explodedTool(d.name), p.Args); err != nil {
			return "", err
		}
	}
	open, err := w.rt.store.openItems(ctx, w.agent.ID)
	if err != nil {
		return "", err
	}
	var waiting []string
	items = slices.DeleteFunc(items, func(p proposal) bool {
		if proposedAlready(open, w.task, explodedTool(d.name), p.Args) {
			waiting = append(waiting, p.Summary)
			return true
		}
		return false
	})
	var drops []string
	if len(unchanged) > 0 {
		drops = append(drops, "dropped, because it would change nothing: "+strings.Join(unchanged, "; "))
	}
	if len(waiting) > 0 {
		drops = append(drops, "dropped, because it is proposed already and waits for the person's decision: "+strings.Join(waiting, "; "))
	}
	dropped := strings.Join(drops, "; ")
	if len(items) == 0 {
		return dropped, nil
	}
	for i := range items {
		items[i].Base = itemBase(w.task, explodedTool(d.name), items[i].Args)
	}
	return wt.effect(ctx, d.name, args, true, func() (string, string, []proposal, error) {
		result := fmt.Sprintf("proposed %d change(s) for the person to approve: %s", len(items), summaries(items))
		if dropped != "" {
			result += "; " + dropped
		}
		return "proposed", result, items, nil
	}, nil)
}

func summaries(ps []proposal) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Summary
	}
	return strings.Join(out, "; ")
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
