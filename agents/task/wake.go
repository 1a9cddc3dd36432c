package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// waking is one wake in progress: the agent, the state it reads and the run
// it records into.
type waking struct {
	rt       *Runtime
	agent    Agent
	template templates.Template
	key      RunKey
	run      int64

	taskSnap edit.Snapshot
	task     *note.Note
	entries  []index.EntryMeta
	sources  []Source

	report     Report
	hasReport  bool
	reportBase edit.Fingerprint // the report as this wake read it; writes compare-and-swap against it
	modelName  string
	decisions  []changes.Decision // the agent's recent decisions, newest first
	modelReq   llm.Request        // who the wake's model calls are for, without the prompt: what a probe asks for
	away       string             // why the model was away, when the run ended offline

	// related are the notes near the task by meaning that the wake shows;
	// seenRelated the paths of those the agent saw at its last completed
	// wake, and sawRelated those it sees at this one, recorded when it
	// completes.
	related     []relatedNote
	seenRelated []string
	sawRelated  []string
}

// recentDecisions is how many decisions a wake shows the agent (SPEC §4.1).
const recentDecisions = 20

// decisionKeys names the decisions a wake shows, for its run key: a new
// decision is a new state for the agent to process.
func decisionKeys(ds []changes.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = "decision:" + strconv.FormatInt(d.ID, 10)
	}
	return out
}

// decisionLines are the decisions as the prompt shows them, oldest first.
func decisionLines(ds []changes.Decision) []string {
	out := make([]string, 0, len(ds))
	for i := len(ds) - 1; i >= 0; i-- {
		out = append(out, ds[i].PromptLine())
	}
	return out
}

func (w *waking) journalPath() string { return JournalPath(w.rt.outputFolder(), w.agent.OutputName) }
func (w *waking) reportPath() string  { return ReportPath(w.rt.outputFolder(), w.agent.OutputName) }

func (w *waking) modelID() string {
	if w.modelName == "" {
		return "unknown"
	}
	return w.modelName
}

// cause names the wake in margin's history of its writes (SPEC §11).
func (w *waking) cause(ctx context.Context) context.Context {
	c := edit.Cause{Actor: w.agent.ID, Task: w.agent.Task, Model: w.modelName}
	if w.template.Name != "" {
		c.Template = w.template.Label()
	}
	return edit.WithCause(ctx, c)
}

// language is the language of the task's notes: the note's own
// frontmatter field, else the one margin keeps.
func (w *waking) language() string {
	if w.task != nil && w.task.Task != nil && w.task.Task.Language != "" {
		return w.task.Task.Language
	}
	return w.keptLanguage()
}

// promptLanguage is the language the wake's prompt names: the one margin
// keeps, when the task note (which the model reads) does not carry one.
func (w *waking) promptLanguage() string {
	if t := w.task.Task; t != nil && t.Language != "" {
		return "" // the model reads it in the note
	}
	return w.keptLanguage()
}

// keptLanguage is the language the agent found (set_task_language), which
// margin keeps in its state and the report; the report's alone after the
// state database was rebuilt.
func (w *waking) keptLanguage() string {
	if w.agent.Language != "" {
		return w.agent.Language
	}
	if languageRE.MatchString(w.report.Language) {
		return w.report.Language
	}
	return ""
}

// writeReport writes the report file, through the editor when the report
// is open there. It never overwrites a report the person edited after
// this wake read it: the change is refused unless the report is the one
// read, and their version is left for the next wake, which shows it to
// the agent as the current report.
func (w *waking) writeReport(ctx context.Context, tldr, content, generator string) error {
	p := w.reportPath()
	data := renderReport(w.agent.Task, w.agent.ID, w.template.Label(), w.rt.now(), w.agent.Wakes+1, tldr, generator, w.language(), content)
	edited := fmt.Errorf("the report %s changed since this wake read it (edited by hand?); it was not overwritten, and the next wake will see that version", p)
	res, err := w.rt.v.Files.Change(w.cause(ctx), w.rt.opts.Editor, p, func(cur edit.Current) ([]byte, error) {
		if cur.Fingerprint() != w.reportBase {
			return nil, edited
		}
		return data, nil
	})
	switch {
	case errors.Is(err, edited):
		return edited
	case errors.Is(err, edit.ErrEditorRefused):
		return fmt.Errorf("the editor refused the new report %s; nothing was written, and the next wake will try again", p)
	case err != nil:
		return fmt.Errorf("writing the report: %w", err)
	}
	w.reportBase, w.hasReport = res.Fingerprint, true
	if err := w.rt.store.setReport(ctx, w.agent.ID, string(res.Fingerprint), generator); err != nil {
		return err
	}
	w.rt.notify("margin/reportUpdated", ReportUpdated{Task: w.agent.Task, Path: p, TLDR: note.OneLine(tldr)})
	return nil
}

// openReport returns the editor's buffer of the report when it is open.
func (w *waking) openReport() (text string, version int, ok bool) {
	if w.rt.opts.Editor == nil {
		return "", 0, false
	}
	return w.rt.opts.Editor.Open(w.reportPath())
}

// gather reads the wake's state: template, task note, linked entries,
// current report. found is false when the task note is gone.
func (w *waking) gather(ctx context.Context) (found bool, err error) {
	rt := w.rt
	if w.template, err = rt.templates.Active(ctx, templates.TaskAgent); err != nil {
		return false, err
	}
	w.taskSnap, err = rt.v.Files.Read(w.agent.Task)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the task: %w", err)
	}
	w.task = note.Parse(w.agent.Task, w.taskSnap.Content, rt.v.Rules.TaskOptions())
	w.entries, err = rt.v.Index.LinkedEntries(ctx, w.agent.Task)
	if err != nil && !errors.Is(err, index.ErrNotFound) {
		return false, err
	}
	w.sources = append([]Source{taskSource(w.agent.Task, w.taskSnap.Content)}, entrySources(w.entries)...)
	if text, _, open := w.openReport(); open {
		// The buffer is the report as the person sees it; it is what
		// the write compares against.
		w.report, w.hasReport = ParseReport(w.reportPath(), []byte(text)), true
		w.report.fingerprint = edit.FingerprintOf([]byte(text))
	} else if w.report, w.hasReport, err = readReport(rt.v.Files, w.reportPath()); err != nil {
		return false, fmt.Errorf("reading the report: %w", err)
	}
	w.reportBase = w.report.fingerprint
	return true, nil
}

// execute runs the wake's work and says how it ended. The run row exists.
func (w *waking) execute(ctx context.Context, reason string, seen map[string]Source) (runEnd, error) {
	rt := w.rt
	if w.task.FrontmatterError != "" {
		tldr, content := brokenReport(w.agent.Task, w.task.FrontmatterError)
		if err := w.writeReport(ctx, tldr, content, generatedMargin); err != nil {
			return runEnd{status: RunFailed, detail: err.Error()}, nil
		}
		return runEnd{status: RunCompleted, detail: "the task's frontmatter does not parse; reported without a model"}, nil
	}
	if w.settled() {
		return w.writeSettled(ctx)
	}
	if rt.model == nil {
		return w.writeOffline(ctx, "no model is configured", RunOffline)
	}

	w.modelReq = llm.Request{Role: rt.opts.Role, Tier: w.template.Tier, Model: w.template.Model}
	if why := rt.watch.away(); why != "" {
		// The probe says when the model is back; calling it meanwhile
		// would only fail again.
		return w.writeOffline(ctx, why, RunOffline)
	}

	full := len(seen) == 0
	found := w.findRelated(ctx)
	w.sawRelated = relatedPaths(found)
	if full || !sameNotes(w.sawRelated, w.seenRelated) {
		w.related = found
	}
	wt := &wakeTools{w: w}
	box, err := wt.toolbox()
	if err != nil {
		return runEnd{}, err
	}
	journal, err := ReadJournal(rt.v.Files, w.journalPath())
	if err != nil {
		return runEnd{}, fmt.Errorf("reading the journal: %w", err)
	}
	req := llm.Request{Role: w.modelReq.Role, Tier: w.modelReq.Tier, Model: w.modelReq.Model,
		System: systemPrompt(w.template), Tools: box.Specs()}
	fixed := llm.EstimateTokens(req)
	msg, _, related := userMessage(wakeContext{
		Now: rt.now(), Reason: reason, Task: w.sources[0], Entries: w.sources[1:], Seen: seen,
		Report: reportBody(w), TLDR: w.report.TLDR, Journal: journal, Decisions: decisionLines(w.decisions), Language: w.promptLanguage(),
		Related: w.related, Budget: max(rt.opts.ContextTokens-fixed, 0),
	})
	if !related && len(w.related) > 0 {
		// Left out to fit the budget: unseen, so the next wake shows them,
		// and without them the link tool has nothing to link.
		w.related, w.sawRelated = nil, nil
		if box, err = wt.toolbox(); err != nil {
			return runEnd{}, err
		}
		req.Tools = box.Specs()
	}
	req.Messages = []llm.Message{{Role: llm.RoleUser, Content: msg}}

	rec := &recordingModel{w: w}
	ctx = ledger.WithScope(ctx, "run:"+strconv.FormatInt(w.run, 10))
	res, err := llm.RunTools(ctx, rec, req, box, llm.Loop{MaxTurns: rt.opts.MaxTurns, StopAfter: []string{"update_report"}})
	rec.persist(ctx, res.Messages)
	end := runEnd{turns: res.Turns, promptTokens: rec.prompt, completions: rec.completion}
	switch {
	case ctx.Err() != nil:
		// Shutting down: the run stays "started" and is re-run under the
		// same key at the next start, like after a crash.
		return end, ctx.Err()
	case rec.cut && !wt.reported:
		end.status, end.detail = RunIncomplete, fmt.Sprintf("%s after %s, without update_report; the previous report stands",
			llm.DeadlineCut(rt.opts.WakeDeadline, "agents.wake_deadline"), plural(res.Turns, "turn"))
	case errors.Is(err, llm.ErrUnavailable):
		status := RunFailed
		if llm.Away(err) {
			status = RunOffline
		}
		off, oerr := w.writeOffline(ctx, err.Error(), status)
		off.turns, off.promptTokens, off.completions = end.turns, end.promptTokens, end.completions
		if oerr == nil && status == RunFailed {
			// A model that answered, but not usably: the report says so.
			if err := w.markFailed(ctx, fmt.Sprintf("run %d %s: %s", w.run, off.status, off.detail)); err != nil {
				off.detail += "; " + err.Error()
			}
		}
		return off, oerr
	case err != nil:
		end.status, end.detail = RunFailed, err.Error()
	case !wt.reported:
		end.status, end.detail = RunIncomplete, fmt.Sprintf("ended (%s after %d turns) without update_report; the previous report stands", res.Stop, res.Turns)
	default:
		end.status = RunCompleted
	}
	if end.status != RunCompleted {
		// The model published nothing usable: the report stands, and says so.
		if err := w.markFailed(ctx, fmt.Sprintf("run %d %s: %s", w.run, end.status, end.detail)); err != nil {
			end.detail += "; " + err.Error()
		}
	}
	return end, nil
}

// reportBody is the report as the agent is shown it: the body, whoever
// wrote it last (the agent, the offline writer, or the person).
func reportBody(w *waking) string {
	if !w.hasReport {
		return ""
	}
	return w.report.Content
}

// writeOffline writes the offline report and ends the run with status:
// RunOffline when the model is away (the wake waits for it, see
// modelWatch), RunFailed when it failed (the wake is retried when the
// backoff runs out). A report a model wrote is not replaced: it says more
// than the task's structure, which the person can read in the task itself.
func (w *waking) writeOffline(ctx context.Context, why, status string) (runEnd, error) {
	end := runEnd{status: status, detail: "model unavailable: " + why}
	if status == RunOffline {
		w.away = why
	}
	if w.hasReport && w.report.GeneratedBy != generatedOffline && w.report.GeneratedBy != generatedMargin {
		end.detail += "; the model's last report stands"
		return end, nil
	}
	task := w.task.Task
	if task == nil {
		task = &note.Task{Title: w.task.Title}
	}
	tldr, content := offlineReport(task, w.task.Checklist, w.entries, llm.Fix(errors.New(why)))
	if err := w.writeReport(ctx, tldr, content, generatedOffline); err != nil {
		end.detail += "; " + err.Error()
		return end, nil
	}
	end.detail += "; offline report written"
	return end, nil
}

// recordingModel is the model as a wake sees it: every turn is persisted
// as it happens (the prompt before the call, the reply after it), model
// calls wait for the global concurrency limit, and tokens are counted.
type recordingModel struct {
	w          *waking
	persisted  int // messages of the conversation already stored
	prompt     int
	completion int
	// used is the time the wake's calls held a model slot, against
	// agents.wake_deadline; cut says the deadline ended a call.
	used time.Duration
	cut  bool
}

// errWakeCut ends a wake's model loop at its deadline.
var errWakeCut = errors.New("the wake's deadline passed")

func (m *recordingModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.persist(ctx, req.Messages)
	rt := m.w.rt
	select {
	case rt.sem <- struct{}{}:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	// The deadline counts the model's time, not the wait for a free slot
	// behind other agents' wakes.
	left := rt.opts.WakeDeadline - m.used
	callCtx, cancel := context.WithTimeout(ctx, left)
	start := time.Now()
	resp, err := rt.model.Chat(callCtx, req)
	m.used += time.Since(start)
	cancel()
	<-rt.sem
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		m.cut = true
		return resp, errWakeCut
	}
	if err != nil {
		return resp, err
	}
	m.prompt += resp.Usage.PromptTokens
	m.completion += resp.Usage.CompletionTokens
	rt.sched.budget.add(rt.now(), resp.Usage.PromptTokens+resp.Usage.CompletionTokens)
	if resp.Model != "" && resp.Model != m.w.modelName {
		m.w.modelName = resp.Model
		// Recorded at once: a proposal's item may be applied, and its
		// write recorded with the run's model, before the wake ends.
		if err := rt.store.setRunModel(context.WithoutCancel(ctx), m.w.run, resp.Model); err != nil {
			rt.log.Warn("recording a run's model", "agent", m.w.agent.ID, "err", err)
		}
	}
	m.persist(ctx, append(req.Messages, resp.Message))
	return resp, nil
}

// persist stores the messages of the conversation not stored yet. A
// failure is logged: the audit trail must not stop a wake.
func (m *recordingModel) persist(ctx context.Context, msgs []llm.Message) {
	for ; m.persisted < len(msgs); m.persisted++ {
		lm := msgs[m.persisted]
		msg := Message{Role: string(lm.Role), Content: lm.Content, ToolCallID: lm.ToolCallID, ToolName: lm.ToolName, Created: m.w.rt.now()}
		if len(lm.ToolCalls) > 0 {
			type call struct {
				ID   string          `json:"id"`
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			}
			calls := make([]call, len(lm.ToolCalls))
			for i, tc := range lm.ToolCalls {
				calls[i] = call{tc.ID, tc.Name, tc.Args}
				if !json.Valid(tc.Args) {
					calls[i].Args, _ = json.Marshal(string(tc.Args))
				}
			}
			msg.ToolCalls, _ = json.Marshal(calls) // RawMessages checked valid above
		}
		if err := m.w.rt.store.addMessage(context.WithoutCancel(ctx), m.w.agent.ID, m.w.run, msg); err != nil {
			m.w.rt.log.Warn("recording a message", "agent", m.w.agent.ID, "err", err)
		}
	}
}

// plural is n and noun, the noun in its plural form unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// runWake runs one wake of the agent: the run-key check, the run record, the
// work, and the bookkeeping of how it ended. retryAt is when to try again
// after a failure; zero for none.
func (r *Runtime) runWake(ctx context.Context, id string, req wakeRequest) (retryAt time.Time, err error) {
	a, err := r.store.Agent(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	if a.Lifecycle == Destroyed || a.Lifecycle == Dormant && !req.force {
		return time.Time{}, nil
	}
	if err := r.renameOutputs(ctx, &a); err != nil {
		return time.Time{}, fmt.Errorf("wake of %s: %w", a.Task, err)
	}
	w := &waking{rt: r, agent: a}
	found, err := w.gather(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("wake of %s: %w", a.Task, err)
	}
	if !found {
		return time.Time{}, r.taskGone(ctx, a)
	}
	if err := r.store.setTaskFingerprint(ctx, a.ID, string(w.taskSnap.Fingerprint)); err != nil {
		return time.Time{}, err
	}
	if w.decisions, err = r.changes.Store().Decisions(ctx, changes.DecisionFilter{Agent: a.ID, Limit: recentDecisions}); err != nil {
		return time.Time{}, err
	}
	w.key = runKey(a.ID, w.template.ID(), w.sources, decisionKeys(w.decisions))

	prev, interrupted, err := r.store.interrupted(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	seen, err := r.store.sources(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	if w.seenRelated, err = r.store.seenRelated(ctx, a.ID); err != nil {
		return time.Time{}, err
	}
	full := len(seen) == 0
	reason := req.reason
	switch {
	case interrupted:
		// A crash stopped this run: do it again under its own key, so
		// the tool calls it already made are recognised.
		w.key, w.run, reason = RunKey(prev.RunKey), prev.ID, prev.Reason+" (re-run after an interrupted attempt)"
		if err := r.store.restartRun(ctx, w.run, w.template.Label(), full); err != nil {
			return time.Time{}, err
		}
		if err := w.settleStarted(ctx); err != nil {
			return time.Time{}, err
		}
	default:
		if req.force {
			// A wake someone asked for is its own state: the same notes
			// with a new request.
			w.key = runKey(a.ID, w.template.ID(), w.sources, append(decisionKeys(w.decisions), "request@"+store.Stamp(r.now())))
		} else if done, err := r.processed(ctx, a.ID, string(w.key)); err != nil {
			return time.Time{}, err
		} else if done {
			r.mu.Lock()
			r.skipped[a.ID]++
			r.mu.Unlock()
			r.log.Debug("wake skipped: this state was processed already", "agent", a.ID, "task", a.Task)
			return time.Time{}, nil
		}
		if w.run, err = r.store.startRun(ctx, a.ID, string(w.key), reason, w.template.Label(), full, r.now()); err != nil {
			return time.Time{}, err
		}
	}
	r.log.Info("agent waking", "agent", a.ID, "task", a.Task, "reason", reason, "full", full)

	end, err := w.execute(ctx, reason, seen)
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, nil
		}
		end = runEnd{status: RunFailed, detail: err.Error()}
	}
	// Proposals reach the person however the wake ended: each was
	// validated and recorded when the model made it.
	owner := changes.Owner{Task: w.agent.Task, OutputName: w.agent.OutputName}
	if err := r.changes.Route(w.cause(context.WithoutCancel(ctx)), a.ID, owner, w.run, w.task); err != nil {
		r.log.Error("routing proposals to a change set", "agent", a.ID, "err", err)
	}
	if end.status == RunCompleted {
		end.settledKey = string(runKey(a.ID, w.template.ID(), w.sources, decisionKeys(w.decisions)))
	}
	finishCtx := context.WithoutCancel(ctx)
	if err := r.store.finishRun(finishCtx, a.ID, w.run, end, w.sources, w.sawRelated, w.template.Label(), r.now()); err != nil {
		return time.Time{}, err
	}
	if end.status == RunOffline {
		r.waitForModel(ctx, a, w.away, w.modelReq)
		return time.Time{}, nil
	}
	if end.status != RunCompleted {
		return r.countFailure(finishCtx, a, end.detail)
	}
	if a.Failures > 0 {
		r.sendStatus(finishCtx, a.ID)
	}
	return time.Time{}, nil
}

// countFailure counts a failed wake: a retry after exponential backoff, or, after
// dormant_after failures in a row, dormancy. It returns when to retry.
func (r *Runtime) countFailure(ctx context.Context, a Agent, detail string) (time.Time, error) {
	n, err := r.store.recordFailure(ctx, a.ID)
	if err != nil {
		return time.Time{}, err
	}
	var next time.Time
	if n >= r.opts.DormantAfter {
		r.log.Warn("agent going dormant after failed wakes", "agent", a.ID, "task", a.Task, "failures", n, "last", detail)
		if err := r.store.failDormant(ctx, a.ID, fmt.Sprintf("%d failed wakes in a row; last: %s", n, detail)); err != nil {
			return time.Time{}, err
		}
	} else {
		next = r.now().Add(backoff(n, r.opts.BackoffInitial, r.opts.BackoffMax))
		if err := r.store.setNextWake(ctx, a.ID, next); err != nil {
			return time.Time{}, err
		}
		r.log.Warn("wake failed; retrying later", "agent", a.ID, "task", a.Task, "failures", n, "next", next, "why", detail)
	}
	r.sendStatus(ctx, a.ID)
	return next, nil
}

// backoff is the wait before retry n (1-based): initial·2ⁿ⁻¹, at most max.
func backoff(n int, initial, maxWait time.Duration) time.Duration {
	d := initial
	for i := 1; i < n && d < maxWait; i++ {
		d *= 2
	}
	return min(d, maxWait)
}
