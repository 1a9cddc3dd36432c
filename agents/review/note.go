package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// evidence is what a run may cite: every fact it found and every section
// of the notes it read, by normalised target. A citation a model writes
// that is not here is dropped with its claim: a review must never send
// the person to something that does not say what it claims.
type evidence map[string]string // target key → [[link]] as written in the note

func target(p, heading string) string {
	t := strings.TrimSuffix(p, ".md")
	if heading != "" {
		t += "#" + heading
	}
	return t
}

func targetKey(t string) string {
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(t), "[["), "]]"))
	if i := strings.Index(t, "|"); i >= 0 {
		t = t[:i]
	}
	p, h, _ := strings.Cut(t, "#")
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(p), ".md") + "#" + strings.TrimSpace(h))
}

// offer makes the section of p under heading citable and returns its link.
func (e evidence) offer(p, heading string) string {
	l := "[[" + target(p, heading) + "]]"
	e[targetKey(target(p, heading))] = l
	return l
}

func (e evidence) resolve(cite string) (string, bool) {
	l, ok := e[targetKey(cite)]
	return l, ok
}

var linkRE = regexp.MustCompile(`\[\[([^\[\]]+)\]\]`)

// claim is one cited line of a section.
type claim struct{ text string }

type section struct {
	heading string
	claims  []claim
}

// written is a run's note as it is being put together.
type written struct {
	def   Definition
	run   Run
	facts facts
	ev    evidence

	tldr      string    // the model's, when it kept to its evidence
	sections  []section // the model's, each claim cited
	proposals []string  // lines naming the change sets proposed
	dropped   int       // the model's claims dropped for want of a citation
	model     string    // the model that wrote it; "" offline
	away      string    // why the review was built offline, when it was not for lack of news
	note      string    // a line the note carries about the run
	replaced  string    // a line saying the person's edit replaced an evolved directive
}

// maxListed caps a list of facts in the note; the rest are counted.
const maxListed = 30

func taskTitle(t string, p string) string {
	if t != "" {
		return t
	}
	return strings.TrimSuffix(p[strings.LastIndex(p, "/")+1:], ".md")
}

func (w *written) offerFacts() {
	for _, d := range w.facts.due {
		w.ev.offer(d.Path, "")
	}
	for _, m := range w.facts.moved {
		w.ev.offer(m.Path, "")
	}
	for _, p := range w.facts.progress {
		w.ev.offer(p.path, "")
	}
	for _, e := range w.facts.entries {
		w.ev.offer(e.Path, e.Heading)
	}
}

func (w *written) factSections() []section {
	var out []section
	add := func(heading string, lines []string) {
		if len(lines) == 0 {
			return
		}
		s := section{heading: heading}
		for i, l := range lines {
			if i == maxListed {
				s.claims = append(s.claims, claim{fmt.Sprintf("… and %d more", len(lines)-maxListed)})
				break
			}
			s.claims = append(s.claims, claim{l})
		}
		out = append(out, s)
	}
	var due []string
	for _, d := range w.facts.due {
		l := fmt.Sprintf("%s — %s, due %s", w.ev.offer(d.Path, ""), taskTitle(d.Title, d.Path), d.Due)
		if d.overdue {
			l += " (overdue)"
		}
		due = append(due, l)
	}
	add("Due", due)
	var moved []string
	for _, m := range w.facts.moved {
		moved = append(moved, fmt.Sprintf("%s — %s, due %s (was %s)", w.ev.offer(m.Path, ""), taskTitle(m.Title, m.Path), m.Due, m.from))
	}
	add("Moved dates", moved)
	var progress []string
	for _, p := range w.facts.progress {
		l := fmt.Sprintf("%s — %d of %d checklist items done", w.ev.offer(p.path, ""), p.done, p.total)
		if p.seen {
			l += fmt.Sprintf(" (was %d of %d)", p.wasDone, p.wasTotal)
		}
		progress = append(progress, l)
	}
	add("Checklist progress", progress)
	var entries []string
	for _, e := range w.facts.entries {
		first, _, _ := strings.Cut(e.Text, "\n")
		entries = append(entries, strings.TrimSpace(fmt.Sprintf("%s %s", w.ev.offer(e.Path, e.Heading), clip(note.OneLine(first), 120))))
	}
	add("New log entries", entries)
	return out
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// plural is n with the noun one, or many when n is not 1 ("" adds s).
func plural(n int, one string, many ...string) string {
	switch {
	case n == 1:
		return "1 " + one
	case len(many) > 0:
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// structuralTLDR is the TLDR of what the vault's structure says.
func (w *written) structuralTLDR() string {
	f := w.facts
	var parts []string
	if n := len(f.due); n > 0 {
		over := 0
		for _, d := range f.due {
			if d.overdue {
				over++
			}
		}
		s := plural(n, "task") + " due"
		if over > 0 {
			s += fmt.Sprintf(" (%d overdue)", over)
		}
		parts = append(parts, s)
	}
	if n := len(f.moved); n > 0 {
		parts = append(parts, plural(n, "due date")+" moved")
	}
	if n := len(f.progress); n > 0 {
		parts = append(parts, plural(n, "checklist")+" changed")
	}
	if n := len(f.entries); n > 0 {
		parts = append(parts, plural(n, "new log entry", "new log entries"))
	}
	if f.nothingNew() {
		if len(parts) == 0 {
			return "Nothing new since the last review."
		}
		return "Nothing new since the last review; " + strings.Join(parts, ", ") + "."
	}
	parts = append(parts, plural(len(f.changed), "note")+" changed")
	return strings.ToUpper(parts[0][:1]) + strings.Join(parts, ", ")[1:] + "."
}

// render is the note of the run (SPEC §3.3 style: `margin: review`).
func (w *written) render() []byte {
	tldr := w.tldr
	if tldr == "" {
		tldr = w.structuralTLDR()
	}
	from := "the start (first run)"
	if !w.run.From.IsZero() {
		from = w.run.From.Format(time.RFC3339)
	}
	fields := []edit.Field{{Key: "margin", Value: "review"}, {Key: "name", Value: edit.Quoted(w.def.Name)},
		{Key: "template", Value: edit.Quoted(w.run.Template)}, {Key: "period_from", Value: edit.Quoted(from)},
		{Key: "period_to", Value: w.run.To}, {Key: "generated_by", Value: edit.Quoted(w.run.GeneratedBy)},
		{Key: "run", Value: w.run.ID}, {Key: "tldr", Value: edit.Quoted(note.OneLine(tldr))}}
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(fields...))
	fmt.Fprintf(&b, "# %s review — %s\n\n**TLDR:** %s\n", w.def.Name, w.run.Date, note.OneLine(tldr))
	for _, line := range []string{w.replaced, w.note} {
		if line != "" {
			fmt.Fprintf(&b, "\n%s\n", line)
		}
	}
	if w.away != "" {
		fmt.Fprintf(&b, "\nBuilt offline from the vault's structure: %s.\n", w.away)
	}
	if w.dropped > 0 {
		fmt.Fprintf(&b, "\n%s left out: no citation resolved to a note this review read.\n", plural(w.dropped, "claim"))
	}
	sections := append(w.factSections(), w.sections...)
	if len(w.proposals) > 0 {
		s := section{heading: "Proposed changes"}
		for _, p := range w.proposals {
			s.claims = append(s.claims, claim{p})
		}
		sections = append(sections, s)
	}
	for _, s := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n", s.heading)
		for _, c := range s.claims {
			fmt.Fprintf(&b, "- %s\n", c.text)
		}
	}
	return []byte(b.String())
}

// modelReply is what a review asks the model for.
type modelReply struct {
	TLDR      string          `json:"tldr"`
	Sections  []replySection  `json:"sections"`
	Proposals []replyProposal `json:"proposals"`
}

type replySection struct {
	Heading string       `json:"heading"`
	Claims  []replyClaim `json:"claims"`
}

type replyClaim struct {
	Text  string   `json:"text"`
	Cites []string `json:"cites"`
}

type replyProposal struct {
	Task   string `json:"task"`
	Field  string `json:"field"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

const scaffold = `You write a periodic review of a person's markdown vault: what is due, what moved, what was done, what the notes and logs say. You are given what changed since the last review and the facts margin found in the vault's structure.
Reply with one JSON value: tldr, sections (heading and claims, each claim with the links it cites), and proposals (changes to task notes: task link, field, value, reason; usually none).`

// prompt is the user message: the period, the facts and the changed
// notes' sections, within the context budget.
func (w *written) prompt(ctx context.Context, r *Reviews) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Review %q, schedule %s.\n", w.def.Name, w.def.Schedule)
	if w.run.From.IsZero() {
		fmt.Fprintf(&b, "This is its first run: every note in scope is new. Until %s.\n", w.run.To.Format("2006-01-02 15:04"))
	} else {
		fmt.Fprintf(&b, "Period: %s to %s.\n", w.run.From.Format("2006-01-02 15:04"), w.run.To.Format("2006-01-02 15:04"))
	}
	b.WriteString("\n## What margin found\n")
	for _, s := range w.factSections() {
		fmt.Fprintf(&b, "\n### %s\n", s.heading)
		for _, c := range s.claims {
			fmt.Fprintf(&b, "- %s\n", c.text)
		}
	}
	b.WriteString("\n## Notes changed since the last review\n")
	limit := r.opts.ContextTokens * 4 // characters: about four a token
	left := 0
	for _, n := range w.facts.changed {
		text, err := r.opts.Index.Text(ctx, n.Path)
		if err != nil {
			return "", fmt.Errorf("reading %s for review %s: %w", n.Path, w.def.Name, err)
		}
		var nb strings.Builder
		fmt.Fprintf(&nb, "\n### %s\n", w.ev.offer(n.Path, ""))
		for _, s := range text.Sections {
			if s.Text == "" {
				continue
			}
			if s.Heading != "" {
				fmt.Fprintf(&nb, "%s\n", w.ev.offer(n.Path, s.Heading))
			}
			fmt.Fprintf(&nb, "%s\n", s.Text)
		}
		if b.Len()+nb.Len() > limit {
			left++
			continue
		}
		b.WriteString(nb.String())
	}
	if left > 0 {
		fmt.Fprintf(&b, "\n(%s left out to fit the context budget)\n", plural(left, "more changed note"))
	}
	return b.String(), nil
}

// write asks the model for the review and keeps what it can cite. A
// model that is away or out of budget leaves the review to the structure.
func (r *Reviews) write(ctx context.Context, tmpl templates.Template, w *written) error {
	user, err := w.prompt(ctx, r)
	if err != nil {
		return err
	}
	schema, err := llm.SchemaFor[modelReply]()
	if err != nil {
		return fmt.Errorf("the review's reply schema: %w", err)
	}
	req := llm.Request{Role: r.opts.Role, Tier: tmpl.Tier, Model: tmpl.Model, Schema: schema,
		System: llm.SystemPrompt(llm.PromptPart{Text: scaffold}, llm.PromptPart{Heading: "General Directive", Text: tmpl.General},
			llm.PromptPart{Heading: "Report Directive", Text: tmpl.Report}),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: user}}}
	resp, err := r.opts.Model.Chat(ctx, req)
	w.run.PromptTokens, w.run.CompletionTokens = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
	if r.opts.Budget != nil {
		r.opts.Budget.SpendTokens(r.now(), resp.Usage.PromptTokens+resp.Usage.CompletionTokens)
	}
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, llm.ErrUnavailable):
		w.away = err.Error()
		return nil
	case err != nil:
		w.away = "the model failed: " + err.Error()
		return nil
	}
	var rep modelReply
	if err := json.Unmarshal([]byte(extractObject(resp.Message.Content)), &rep); err != nil {
		w.away = "the model's reply was not the review asked for"
		return nil
	}
	w.keep(ctx, r, rep)
	if len(w.sections) == 0 && len(w.proposals) == 0 {
		// Nothing of the reply held to the notes (a weak model's filler,
		// or claims citing notes the run never read): the note is the
		// structure's, and says so rather than carry the model's name.
		w.away = "the model's reply held no claim citing a note this review read"
		if w.dropped > 0 {
			w.away = fmt.Sprintf("the model's %s cited no note this review read", plural(w.dropped, "claim"))
		}
		w.dropped = 0
		return nil
	}
	w.model = resp.Model
	return nil
}

// extractObject is the outermost JSON object of a reply that wraps it in
// a fence or prose.
func extractObject(s string) string {
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return s
	}
	return s[i : j+1]
}

// keep takes the claims of the model's reply that cite what the run
// read, and its proposals for task notes it read.
func (w *written) keep(ctx context.Context, r *Reviews, rep modelReply) {
	for _, s := range rep.Sections {
		heading := strings.TrimLeft(note.OneLine(s.Heading), "# ")
		if heading == "" {
			heading = "Notes"
		}
		out := section{heading: heading}
		for _, c := range s.Claims {
			var cites []string
			text := linkRE.ReplaceAllStringFunc(c.Text, func(m string) string {
				if l, ok := w.ev.resolve(m); ok {
					cites = append(cites, l)
					return l
				}
				return ""
			})
			text = strings.Join(strings.Fields(text), " ")
			for _, cite := range c.Cites {
				if l, ok := w.ev.resolve(cite); ok && !slices.Contains(cites, l) {
					cites = append(cites, l)
					text += " " + l
				}
			}
			if len(cites) == 0 || text == "" {
				w.dropped++
				continue
			}
			out.claims = append(out.claims, claim{note.OneLine(text)})
		}
		if len(out.claims) > 0 {
			w.sections = append(w.sections, out)
		}
	}
	if len(w.sections) > 0 {
		if tldr := note.OneLine(rep.TLDR); tldr != "" && w.linksResolve(tldr) {
			w.tldr = tldr
		}
	}
	for _, p := range rep.Proposals {
		w.propose(ctx, r, p)
	}
}

func (w *written) linksResolve(s string) bool {
	for _, m := range linkRE.FindAllString(s, -1) {
		if _, ok := w.ev.resolve(m); !ok {
			return false
		}
	}
	return true
}

// propose hands a proposal for a task note the run read to the change
// sets: a review never edits a person's note itself.
func (w *written) propose(ctx context.Context, r *Reviews, p replyProposal) {
	if r.opts.Proposer == nil {
		return
	}
	var task string
	for _, n := range w.facts.changed {
		if n.Task != nil && targetKey(p.Task) == targetKey(target(n.Path, "")) {
			task = n.Path
		}
	}
	for _, d := range w.facts.due {
		if targetKey(p.Task) == targetKey(target(d.Path, "")) {
			task = d.Path
		}
	}
	if task == "" || !slices.Contains(changes.TaskFields(), p.Field) {
		w.dropped++
		return
	}
	cs, err := r.opts.Proposer.ProposeTaskChange(ctx, "review "+w.def.Name, task, p.Field, p.Value, p.Reason)
	if err != nil {
		r.log.Info("a review's proposal was not kept", "review", w.def.Name, "task", task, "field", p.Field, "err", err)
		return
	}
	w.proposals = append(w.proposals, fmt.Sprintf("%s — set %s to %s: %s ([[%s]])", w.ev.offer(task, ""), p.Field, note.OneLine(p.Value),
		note.OneLine(p.Reason), strings.TrimSuffix(cs.Path, ".md")))
}
