package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
	"golang.org/x/text/language"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/note"
)

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
)

var (
	languageRE = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
)

// wakeTools holds what the tools of one wake share: the run they belong
// to, the task as they last read or wrote it, and what they did.
type wakeTools struct {
	w *waking

	reported bool   // update_report ran
	tldr     string // and wrote this
}

// toolbox builds the wake's tools: the immediate ones, then the deferred,
// each only when it can apply to the task as the wake read it (SPEC §4.1:
// no set_task_language on a task with a language, no checklist tools on a
// task without a checklist). A tool left out is withheld with its reason,
// for a model that calls it anyway. The definitions are built the same way
// each wake, so a task of the same shape is offered the same bytes: they
// are part of the prompt's stable prefix.
func (wt *wakeTools) toolbox() (*llm.Toolbox, error) {
	task := wt.w.task
	nonEmpty := func(names ...string) func(*jsonschema.Schema) {
		return func(s *jsonschema.Schema) {
			for _, n := range names {
				s.Properties[n].MinLength = jsonschema.Ptr(1)
			}
		}
	}
	tools := []llm.Tool{
		&llm.FuncTool{ToolName: "update_report", About: "Publish the task's new report: a short tldr and the whole report as markdown. Call it once, last; the wake ends with it.",
			ArgSchema: llm.ArgsSchema[reportArgs](nonEmpty("tldr", "content")), Do: wt.updateReport},
		&llm.FuncTool{ToolName: "record_observations", About: "Append private observations to your journal, to remember on later wakes.",
			ArgSchema: llm.ArgsSchema[observationArgs](func(s *jsonschema.Schema) {
				p := s.Properties["observations"]
				p.MinItems = jsonschema.Ptr(1)
				p.Items.MinLength = jsonschema.Ptr(1)
			}), Do: wt.recordObservations},
	}
	withheld := map[string]string{}
	if err := languageUnset(wt.w.language()); err != nil {
		withheld["set_task_language"] = err.Error()
	} else {
		tools = append(tools, &llm.FuncTool{ToolName: "set_task_language", About: "Set the language of the task's notes when it is clear and not set yet.",
			ArgSchema: llm.ArgsSchema[languageArgs](func(s *jsonschema.Schema) {
				s.Properties["language"].Pattern = languageRE.String()
			}), Do: wt.setLanguage})
	}
	shown := wt.w.shown()
	for _, d := range changes.DeferredTools() {
		if d.Unfit != nil {
			if why := d.Unfit(task, shown); why != "" {
				withheld[d.Name] = why
				continue
			}
		}
		tools = append(tools, &llm.FuncTool{ToolName: d.Name, About: d.Description + " The person approves or rejects it.", ArgSchema: d.Schema,
			Do: func(ctx context.Context, args json.RawMessage) (string, error) { return wt.propose(ctx, d, args) }})
	}
	box, err := llm.NewToolbox(tools...)
	if err != nil {
		return nil, err
	}
	for name, why := range withheld {
		box.Withhold(name, why)
	}
	return box, nil
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
	fn func() (status, result string, ps []changes.Proposal, err error), landed func() (result string, ok bool)) (string, error) {
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
func (w *waking) settleStarted(ctx context.Context) error {
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
			if landed, err = journalHas(w.rt.v.Files, w.journalPath(), texts); err != nil {
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
	// A small model fills free fields with "ok" or a bare heading: such a
	// report would replace one that says something (issue 33).
	a.TLDR = headingMark.ReplaceAllString(a.TLDR, "")
	if llm.SaysNothing(a.TLDR) || llm.SaysNothing(headingLine.ReplaceAllString(a.Content, "")) {
		return "", fmt.Errorf("the report says nothing (tldr %q, content %q): say where the task stands, in the tldr in a sentence, in the content under its sections",
			note.OneLine(a.TLDR), note.OneLine(a.Content))
	}
	out, err := wt.effect(ctx, "update_report", args, false, func() (string, string, []changes.Proposal, error) {
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
	return wt.effect(ctx, "record_observations", args, false, func() (string, string, []changes.Proposal, error) {
		now := w.rt.now()
		lines := make([]string, 0, len(texts))
		for _, o := range texts {
			lines = append(lines, journalLine(now, o))
		}
		if len(lines) == 0 {
			return "", "", nil, errors.New("every observation is blank or says nothing")
		}
		if err := appendJournal(w.cause(ctx), w.rt.v.Files, w.rt.opts.Editor, w.journalPath(), w.agent.Task, w.agent.ID, lines); err != nil {
			return "", "", nil, err
		}
		return "applied", result, nil, nil
	}, func() (string, bool) {
		in, err := journalHas(w.rt.v.Files, w.journalPath(), texts)
		return result, err == nil && in
	})
}

// observationTexts are the observations as journal lines carry them, each
// once (two that differ only in case, spacing or punctuation are one),
// without those that say nothing.
func observationTexts(obs []string) []string {
	out := make([]string, 0, len(obs))
	seen := map[string]bool{}
	for _, o := range obs {
		key := strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, o)
		if o = note.OneLine(o); !llm.SaysNothing(o) && !seen[key] {
			seen[key] = true
			out = append(out, o)
		}
	}
	return out
}

// headingMark is a markdown heading's marker at the start of a line: a
// tldr is one sentence, not a section. headingLine is the whole line.
var (
	headingMark = regexp.MustCompile(`(?m)^[ \t]*#{1,6}[ \t]+`)
	headingLine = regexp.MustCompile(`(?m)^[ \t]*#{1,6}([ \t].*)?$`)
)

// setLanguage keeps the language of the task's notes in margin's state
// and the report, never in the task note: nothing outside the output
// folder changes without a person's approval (SPEC §1.3, §4.1).
func (wt *wakeTools) setLanguage(ctx context.Context, args json.RawMessage) (string, error) {
	var a languageArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	// The schema's pattern lets "ok" through: a small model's filler.
	if _, err := language.Parse(a.Language); err != nil {
		return "", fmt.Errorf("%q is not a language: give the BCP 47 code of the notes' language, e.g. en, de, pt-BR", a.Language)
	}
	w := wt.w
	return wt.effect(ctx, "set_task_language", args, false, func() (string, string, []changes.Proposal, error) {
		if err := languageUnset(w.language()); err != nil {
			return "", "", nil, err
		}
		if err := w.rt.store.setLanguage(ctx, w.agent.ID, a.Language); err != nil {
			return "", "", nil, err
		}
		w.agent.Language = a.Language
		return "applied", "language set to " + a.Language + " (margin keeps it with the report; the task note is not changed)", nil, nil
	}, nil)
}

// languageUnset refuses set_task_language on a task whose language is
// known (the wake does not offer it then): the tool only fills in a
// language, and changing the person's choice, or the one found before,
// is not the model's to make.
func languageUnset(language string) error {
	if language != "" {
		return fmt.Errorf("the task's language is already %s; set_task_language only sets a language that is not set yet", language)
	}
	return nil
}

// propose records a deferred call's change items as proposals; items that
// would change nothing are dropped and the model is told why.
func (wt *wakeTools) propose(ctx context.Context, d changes.DeferredTool, args json.RawMessage) (string, error) {
	w := wt.w
	items, unchanged, err := d.Items(w.task, w.shown(), args)
	if err != nil {
		return "", err
	}
	for _, p := range items {
		if err := changes.CheckValues(changes.ExplodedTool(d.Name), p.Args); err != nil {
			return "", err
		}
	}
	open, err := w.rt.changes.Store().OpenItems(ctx, w.agent.ID)
	if err != nil {
		return "", err
	}
	var waiting []string
	items = slices.DeleteFunc(items, func(p changes.Proposal) bool {
		if changes.ProposedAlready(open, w.task, changes.ExplodedTool(d.Name), p.Args) {
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
		items[i].Base = changes.ItemBase(w.task, changes.ExplodedTool(d.Name), items[i].Args)
	}
	return wt.effect(ctx, d.Name, args, true, func() (string, string, []changes.Proposal, error) {
		result := fmt.Sprintf("proposed %d change(s) for the person to approve: %s", len(items), summaries(items))
		if dropped != "" {
			result += "; " + dropped
		}
		return "proposed", result, items, nil
	}, nil)
}

func summaries(ps []changes.Proposal) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Summary
	}
	return strings.Join(out, "; ")
}
