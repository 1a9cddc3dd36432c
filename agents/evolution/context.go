package evolution

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// Metrics is how a template's agents did (seed 000 §4), from the state
// database: wake runs, the ledger's model calls and the decisions ledger.
// For the improver the "wakes" are evolution sessions and its "tool" is
// propose_directives, confirmed by approval.
type Metrics struct {
	Agents int `json:"agents"`
	// Tally counts every run, whatever version it ran: runs from before
	// margin recorded versions count only here.
	Tally
	// Versions are the active version of a task template and, when there
	// is one, the version before it: whether a new version does better is
	// what evolving directives is for. The improver has none, as an
	// evolution session does not record the improver's version.
	Versions   []VersionMetrics `json:"versions,omitempty"`
	Rejections []Rejection      `json:"rejections"`
	// Unmeasured says why a template's runs are not measured (a
	// review's), so that its zeros are not read as nothing done.
	Unmeasured string `json:"unmeasured,omitempty"`
}

// reviewUnmeasured is what a review's evolution context says in place of
// metrics: they are built for task agents, and a review proposes no
// change sets, so counting them would show the task agents' numbers as
// the review's.
const reviewUnmeasured = "A review proposes no change sets, so there are no decisions on its work to count, and margin does not measure review runs for evolution yet: weigh the directive and the person's messages."

// Tally is what a set of runs did: their wakes, model calls, and people's
// decisions on what they proposed.
type Tally struct {
	Wakes            int        `json:"wakes"`
	Completed        int        `json:"completed"`
	Incomplete       int        `json:"incomplete"`
	Failed           int        `json:"failed"`
	ModelCalls       int        `json:"modelCalls"`
	FailedCalls      int        `json:"failedCalls"`
	PromptTokens     int        `json:"promptTokens"`
	CompletionTokens int        `json:"completionTokens"`
	Tools            []ToolRate `json:"tools"`
}

// VersionMetrics is the tally of the runs of one template version.
type VersionMetrics struct {
	Version int  `json:"version"`
	Active  bool `json:"active"`
	Tally
}

// decided counts the decisions on the tally's proposals.
func (t Tally) decided() int {
	n := 0
	for _, r := range t.Tools {
		n += r.Confirmed + r.Rejected + r.Deferred
	}
	return n
}

func (t *Tally) addWakes(w Tally) {
	t.Wakes += w.Wakes
	t.Completed += w.Completed
	t.Incomplete += w.Incomplete
	t.Failed += w.Failed
}

// addTool adds one tool's decisions; tools arrive in order of name.
func (t *Tally) addTool(r ToolRate) {
	if n := len(t.Tools); n > 0 && t.Tools[n-1].Tool == r.Tool {
		t.Tools[n-1].Confirmed += r.Confirmed
		t.Tools[n-1].Rejected += r.Rejected
		t.Tools[n-1].Deferred += r.Deferred
		return
	}
	t.Tools = append(t.Tools, r)
}

func (t *Tally) addCalls(c ledger.Totals) {
	t.ModelCalls += c.Calls
	t.FailedCalls += c.Failed
	t.PromptTokens += c.PromptTokens
	t.CompletionTokens += c.CompletionTokens
}

// ToolRate is how people decided one tool's proposals.
type ToolRate struct {
	Tool      string `json:"tool"`
	Confirmed int    `json:"confirmed"`
	Rejected  int    `json:"rejected"`
	Deferred  int    `json:"deferred"`
}

// ConfirmRate is confirmed / (confirmed + rejected), in percent; -1 when
// nothing was decided either way.
func (r ToolRate) ConfirmRate() int {
	if r.Confirmed+r.Rejected == 0 {
		return -1
	}
	return r.Confirmed * 100 / (r.Confirmed + r.Rejected)
}

// Rejection is one rejected proposal and the person's reason.
type Rejection struct {
	Tool    string    `json:"tool"`
	Version int       `json:"version,omitempty"` // of the run that proposed it; 0 when not known
	Summary string    `json:"summary"`
	Reason  string    `json:"reason"`
	Date    time.Time `json:"date"`
}

// recentRejections is how many rejection reasons the context shows.
const recentRejections = 10

// Metrics is how the agents of template t did: for a task template its
// wakes, model calls and people's decisions, in total and for its active
// and previous version; for the improver its evolution sessions; for a
// review none, and Unmeasured says why.
func (e *Evolution) Metrics(ctx context.Context, t templates.Template) (Metrics, error) {
	var m Metrics
	if t.Kind == templates.KindReview {
		m.Unmeasured = reviewUnmeasured
		return m, nil
	}
	prefix := "run:"
	if t.Kind == templates.KindImprover {
		prefix = "evolution:"
		err := e.store.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(status = 'approved'), 0), COALESCE(SUM(status = 'open'), 0),
			COALESCE(SUM(status = 'rejected'), 0) FROM evolution_sessions`).Scan(&m.Wakes, &m.Completed, &m.Incomplete, &m.Failed)
		if err != nil {
			return m, fmt.Errorf("counting evolution sessions: %w", err)
		}
		if m.Completed+m.Failed > 0 {
			m.Tools = []ToolRate{{Tool: "propose_directives", Confirmed: m.Completed, Rejected: m.Failed}}
		}
		rows, err := e.store.db.QueryContext(ctx, `SELECT template, base_version, reason, updated_at FROM evolution_sessions
			WHERE status = 'rejected' AND reason <> '' ORDER BY updated_at DESC, rowid DESC LIMIT ?`, recentRejections)
		if err != nil {
			return m, err
		}
		defer rows.Close()
		for rows.Next() {
			var r Rejection
			var name, at string
			var v int
			if err := rows.Scan(&name, &v, &r.Reason, &at); err != nil {
				return m, err
			}
			r.Tool, r.Summary, r.Date = "propose_directives", fmt.Sprintf("new directives for %s@%d", name, v), store.Unstamp(at)
			m.Rejections = append(m.Rejections, r)
		}
		if err := rows.Err(); err != nil {
			return m, err
		}
	} else if err := e.taskMetrics(ctx, t, &m); err != nil {
		return m, err
	}
	tot, err := e.ledger.TotalsWithPrefix(ctx, prefix)
	if err != nil {
		return m, err
	}
	m.ModelCalls, m.FailedCalls, m.PromptTokens, m.CompletionTokens = tot.Calls, tot.Failed, tot.PromptTokens, tot.CompletionTokens
	return m, nil
}

// taskMetrics counts the task agents' wakes, model calls and decisions,
// in total and for the active version of t and the version before it.
// Every task agent runs the task-agent template; a decision counts for
// the version of the run whose change set it decided.
func (e *Evolution) taskMetrics(ctx context.Context, t templates.Template, m *Metrics) error {
	counts, err := e.agents.LifecycleCounts(ctx)
	if err != nil {
		return err
	}
	m.Agents = counts[task.Active] + counts[task.Dormant]
	prev, err := e.previousVersion(ctx, t)
	if err != nil {
		return err
	}
	m.Versions = []VersionMetrics{{Version: t.Version, Active: true}}
	if prev > 0 {
		m.Versions = append(m.Versions, VersionMetrics{Version: prev})
	}
	byLabel := map[string]*Tally{}
	for i := range m.Versions {
		byLabel[fmt.Sprintf("%s@%d", t.Name, m.Versions[i].Version)] = &m.Versions[i].Tally
	}

	wakes, err := e.agents.WakeTallies(ctx)
	if err != nil {
		return err
	}
	for _, w := range wakes {
		tally := Tally{Wakes: w.Wakes, Completed: w.Completed, Incomplete: w.Incomplete, Failed: w.Failed}
		m.addWakes(tally)
		if to := byLabel[w.Template]; to != nil {
			to.addWakes(tally)
		}
	}

	// A decision counts for the version of the run that proposed its item.
	runs, err := e.agents.RunTemplates(ctx)
	if err != nil {
		return err
	}
	decided, err := e.changes.DecisionTallies(ctx)
	if err != nil {
		return err
	}
	type toolVersion struct{ tool, label string }
	rates := map[toolVersion]ToolRate{}
	for _, d := range decided {
		k := toolVersion{d.Tool, runs[d.Run]}
		r := rates[k]
		r.Tool = d.Tool
		r.Confirmed += d.Confirmed
		r.Rejected += d.Rejected
		r.Deferred += d.Deferred
		rates[k] = r
	}
	keys := slices.SortedFunc(maps.Keys(rates), func(a, b toolVersion) int {
		return cmp.Or(cmp.Compare(a.tool, b.tool), cmp.Compare(a.label, b.label))
	})
	for _, k := range keys {
		m.addTool(rates[k])
		if to := byLabel[k.label]; to != nil {
			to.addTool(rates[k])
		}
	}

	if err := e.versionCalls(ctx, byLabel, runs); err != nil {
		return err
	}
	return e.rejections(ctx, t, m, runs)
}

// previousVersion is the version of t the agents ran last before the
// active one (after a rollback, the version rolled back from); when they
// ran no other, the version numbered before it. 0 when there is none.
func (e *Evolution) previousVersion(ctx context.Context, t templates.Template) (int, error) {
	label, err := e.agents.LastOtherVersion(ctx, t.Name, t.Label())
	if err != nil {
		return 0, err
	}
	if v := versionOf(t.Name, label); v > 0 {
		return v, nil
	}
	versions, err := e.templates.Versions(ctx, t.Name)
	if err != nil {
		return 0, err
	}
	prev := 0
	for _, v := range versions {
		if v.Version < t.Version {
			prev = v.Version
		}
	}
	return prev, nil
}

// versionOf is the version in a run's template label, 0 when the label
// is empty or names another template.
func versionOf(name, label string) int {
	v, ok := strings.CutPrefix(label, name+"@")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(v)
	return n
}

// versionCalls adds the ledger's model calls of each version's wake runs
// (runs maps a run to its version) to its tally.
func (e *Evolution) versionCalls(ctx context.Context, byLabel map[string]*Tally, runs map[int64]string) error {
	byScope, err := e.ledger.TotalsByScope(ctx, "run:")
	if err != nil {
		return err
	}
	for id, label := range runs {
		if to := byLabel[label]; to != nil {
			to.addCalls(byScope["run:"+strconv.FormatInt(id, 10)])
		}
	}
	return nil
}

// rejections reads the latest rejections with reasons, each with the
// version of the run that proposed it when known.
func (e *Evolution) rejections(ctx context.Context, t templates.Template, m *Metrics, runs map[int64]string) error {
	rs, err := e.changes.ReasonedRejections(ctx, recentRejections)
	if err != nil {
		return err
	}
	for _, d := range rs {
		m.Rejections = append(m.Rejections, Rejection{Tool: d.Tool, Summary: d.Summary, Reason: d.Reason, Date: d.Created,
			Version: versionOf(t.Name, runs[d.Run])})
	}
	return nil
}

// How much of the agents' outputs the context shows.
const (
	contextReports      = 5    // the most recently woken agents' reports
	contextReportChars  = 1500 // of each report's body
	contextObservations = 5    // journal lines per agent
	contextNotes        = 10   // earlier sessions
)

// Context is the first message of a session (seed 000 §4): both
// directives separately with their version, the metrics, the version
// history, the agents' recent reports and observations, and the notes of
// earlier sessions.
func (e *Evolution) Context(ctx context.Context, t templates.Template, m Metrics) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evolution of template %s\n\nKind: %s. Active version: %d (authored by %s, %s).\n",
		t.Name, t.Kind, t.Version, t.AuthoredBy, minuteOf(t.Created))
	if t.IsLegacy() {
		fmt.Fprintf(&b, "\n## Current Directives (v%d, legacy: one field for both)\n\n%s\n", t.Version, t.Legacy)
	} else {
		fmt.Fprintf(&b, "\n## Current General Directive (v%d)\n\n%s\n", t.Version, t.General)
		fmt.Fprintf(&b, "\n## Current Report Directive (v%d)\n\n%s\n", t.Version, t.Report)
	}

	b.WriteString("\n## Performance Metrics\n\n")
	writeMetrics(&b, t.Kind, m)

	versions, err := e.templates.Versions(ctx, t.Name)
	if err != nil {
		return "", err
	}
	b.WriteString("\n## Version History\n\n")
	for i := len(versions) - 1; i >= 0; i-- {
		v := versions[i]
		fmt.Fprintf(&b, "- v%d — %s, authored by %s, %s\n", v.Version, v.Status, v.AuthoredBy, minuteOf(v.Created))
	}

	if t.Kind == templates.KindTask {
		if err := e.writeOutputs(ctx, &b); err != nil {
			return "", err
		}
	}

	b.WriteString("\n## Evolution Notes\n\n")
	past, err := e.Sessions(ctx, t.Name, contextNotes)
	if err != nil {
		return "", err
	}
	if len(past) == 0 {
		b.WriteString("(no earlier sessions)\n")
	}
	for _, s := range past {
		fmt.Fprintf(&b, "- %s, from v%d: %s\n", s.Created.UTC().Format("2006-01-02 15:04"), s.BaseVersion, sessionNote(s))
	}
	b.WriteString("\nWeigh the evidence, then propose improved directives with propose_directives, or ask the person a question first if the evidence is too thin to act on.\n")
	return b.String(), nil
}

// metricsColumn is one column of the metrics table.
type metricsColumn struct {
	title string
	Tally
}

// writeMetrics writes the metrics as a table, the active version and the
// one before it side by side. The all-versions column is left out when
// it would repeat the active one: then every run and decision is of it.
func writeMetrics(b *strings.Builder, kind string, m Metrics) {
	if kind == templates.KindReview {
		b.WriteString(reviewUnmeasured + "\n")
		return
	}
	var cols []metricsColumn
	for _, v := range m.Versions {
		title := fmt.Sprintf("v%d", v.Version)
		if v.Active {
			title += " (active)"
		}
		cols = append(cols, metricsColumn{title, v.Tally})
	}
	if len(m.Versions) != 1 || m.Versions[0].Wakes != m.Wakes || m.Versions[0].decided() != m.decided() {
		cols = append(cols, metricsColumn{"all versions", m.Tally})
	}
	if kind == templates.KindImprover {
		b.WriteString("Evolution sessions are the improver's wakes; an approval confirms its proposal.\n\n")
	} else {
		fmt.Fprintf(b, "Agents: %d. A version's column counts the wakes that ran it and the decisions on what they proposed", m.Agents)
		if len(cols) > len(m.Versions) {
			b.WriteString("; all versions counts every wake and decision, also of older versions and of runs whose version was not recorded")
		}
		b.WriteString(".\n\n")
	}
	row := func(label string, cell func(Tally) string) {
		b.WriteString("| " + label)
		for _, c := range cols {
			b.WriteString(" | " + cell(c.Tally))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" | " + c.title)
	}
	b.WriteString(" |\n|---")
	b.WriteString(strings.Repeat("|---:", len(cols)))
	b.WriteString("|\n")
	if kind == templates.KindImprover {
		row("Evolution sessions: approved / rejected / open", func(t Tally) string {
			return fmt.Sprintf("%d: %d / %d / %d", t.Wakes, t.Completed, t.Failed, t.Incomplete)
		})
	} else {
		row("Wakes: completed / incomplete / failed", func(t Tally) string {
			return fmt.Sprintf("%d: %d / %d / %d", t.Wakes, t.Completed, t.Incomplete, t.Failed)
		})
	}
	row("Model calls (failed)", func(t Tally) string { return fmt.Sprintf("%d (%d)", t.ModelCalls, t.FailedCalls) })
	row("Tokens: prompt / completion", func(t Tally) string { return fmt.Sprintf("%d / %d", t.PromptTokens, t.CompletionTokens) })
	for _, r := range m.Tools {
		row(r.Tool+": confirmed / rejected / deferred", func(t Tally) string { return toolCell(t, r.Tool) })
	}
	if len(m.Tools) == 0 {
		b.WriteString("\nNo proposal decided yet.\n")
	}
	if len(m.Rejections) > 0 {
		b.WriteString("\nRejection reasons, newest first:\n\n")
		for _, r := range m.Rejections {
			version := ""
			if r.Version > 0 {
				version = fmt.Sprintf(" v%d", r.Version)
			}
			fmt.Fprintf(b, "- %s%s %s %q: %s\n", r.Date.UTC().Format("2006-01-02"), version, r.Tool, note.OneLine(r.Summary), note.OneLine(r.Reason))
		}
	}
}

// toolCell is how people decided one tool's proposals in a column.
func toolCell(t Tally, tool string) string {
	for _, r := range t.Tools {
		if r.Tool != tool {
			continue
		}
		rate := ""
		if p := r.ConfirmRate(); p >= 0 {
			rate = fmt.Sprintf(" (%d%%)", p)
		}
		return fmt.Sprintf("%d / %d / %d%s", r.Confirmed, r.Rejected, r.Deferred, rate)
	}
	return "–"
}

// writeOutputs adds the recent reports and observations of the task agents.
func (e *Evolution) writeOutputs(ctx context.Context, b *strings.Builder) error {
	recent, err := e.agents.RecentlyWoken(ctx, contextReports)
	if err != nil {
		return err
	}
	b.WriteString("\n## Instance Reports\n\n")
	if len(recent) == 0 {
		b.WriteString("(no agent has woken yet)\n")
	}
	for _, a := range recent {
		rep, err := task.ReadReport(e.v.Files, e.v.OutputFolder, a)
		if errors.Is(err, vault.ErrNotFound) {
			fmt.Fprintf(b, "- %s: no report yet\n", a.Task)
			continue
		}
		if err != nil {
			return err
		}
		body := rep.Content
		if r := []rune(body); len(r) > contextReportChars {
			body = string(r[:contextReportChars]) + "\n…(cut)"
		}
		b.WriteString(llm.Fenced(fmt.Sprintf("data: report on %s, by %s, TLDR: %s", a.Task, rep.GeneratedBy, note.OneLine(rep.TLDR)), body))
	}
	b.WriteString("\n## Instance Observations\n\n")
	none := true
	for _, a := range recent {
		lines, err := task.ReadJournal(e.v.Files, task.JournalPath(e.v.OutputFolder, a.OutputName))
		if err != nil || len(lines) == 0 {
			continue
		}
		none = false
		lines = lines[max(0, len(lines)-contextObservations):]
		b.WriteString(llm.Fenced("data: latest observations on "+a.Task, strings.Join(lines, "\n")))
	}
	if none {
		b.WriteString("(none)\n")
	}
	return nil
}

// minuteOf is a time as the context shows it; a template written by hand
// may not say when.
func minuteOf(t time.Time) string {
	if t.IsZero() {
		return "date unknown"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

// sessionNote is an earlier session in one line: how it ended and why.
func sessionNote(s Session) string {
	switch s.Status {
	case SessionApproved:
		why := ""
		if s.Proposal != nil {
			why = " — " + note.OneLine(s.Proposal.Rationale)
		}
		return fmt.Sprintf("approved as v%d%s", s.ResultVersion, why)
	case SessionRejected:
		if s.Reason == "" {
			return "rejected, no reason given"
		}
		return "rejected — " + s.Reason
	}
	if s.Proposal != nil {
		return "left open with a proposal — " + note.OneLine(s.Proposal.Rationale)
	}
	return "left open without a proposal"
}

// renderSession renders a session's file (SPEC §3.3): the context it was
// given, the conversation, the proposal with a diff of each directive,
// and the outcome.
func renderSession(s Session) []byte {
	fields := []edit.Field{{Key: "margin", Value: "evolution"}, {Key: "template", Value: s.Template}, {Key: "session", Value: s.ID},
		{Key: "base_version", Value: s.BaseVersion}, {Key: "status", Value: s.Status}, {Key: "created", Value: s.Created.UTC()}, {Key: "updated", Value: s.Updated.UTC()}}
	if s.ResultVersion > 0 {
		fields = append(fields, edit.Field{Key: "result_version", Value: s.ResultVersion})
	}
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(fields...))
	fmt.Fprintf(&b, "# Evolution of %s from v%d\n\n## Outcome\n\n", s.Template, s.BaseVersion)
	switch s.Status {
	case SessionApproved:
		fmt.Fprintf(&b, "Approved %s: version %d is active, and agents use it from their next wake.\n", s.Updated.UTC().Format("2006-01-02 15:04"), s.ResultVersion)
	case SessionRejected:
		reason := s.Reason
		if reason == "" {
			reason = "no reason given"
		}
		fmt.Fprintf(&b, "Rejected %s: %s\n", s.Updated.UTC().Format("2006-01-02 15:04"), reason)
	default:
		b.WriteString("Open: approve or reject the proposal (`margin evolve`, or evolution/approve and evolution/reject).\n")
	}

	b.WriteString("\n## Proposal\n\n")
	if p := s.Proposal; p == nil {
		b.WriteString("(none yet)\n")
	} else {
		fmt.Fprintf(&b, "%s\n", p.Rationale)
		for _, d := range []struct{ title, diff string }{{"General Directive", p.GeneralDiff}, {"Report Directive", p.ReportDiff}} {
			fmt.Fprintf(&b, "\n### %s\n\n", d.title)
			if d.diff == "" {
				b.WriteString("(unchanged)\n")
			} else {
				b.WriteString(codeBlock("diff", d.diff))
			}
		}
	}

	b.WriteString("\n## Conversation\n")
	for i, m := range s.Messages {
		switch {
		case i == 0 || m.Role == llm.RoleTool:
			// The context is below; tool results are margin's own words.
		case m.Role == llm.RoleUser:
			fmt.Fprintf(&b, "\n**You:** %s\n", strings.TrimSpace(m.Content))
		default:
			text := strings.TrimSpace(m.Content)
			for _, tc := range m.ToolCalls {
				text = strings.TrimSpace(text + "\n\n_called " + tc.Name + "_")
			}
			fmt.Fprintf(&b, "\n**Evolution agent:** %s\n", text)
		}
	}
	if len(s.Messages) <= 1 {
		b.WriteString("\n(nothing said yet)\n")
	}

	b.WriteString("\n## Context\n\nWhat the evolution agent was shown first:\n\n")
	b.WriteString(codeBlock("markdown", s.Context))
	return []byte(b.String())
}

// codeBlock fences text in a block longer than any backtick run in it.
func codeBlock(lang, text string) string {
	fence := llm.FenceFor(text)
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence + "\n"
}
