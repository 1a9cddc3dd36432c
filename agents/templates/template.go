package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// TaskAgent is the task agent's template (SPEC §3.3, §4.4).
const TaskAgent = "task-agent"

// Improver is the evolution agent's own template: evolvable like any
// other, within the recursion cap (see maxImproverDepth).
const Improver = "template-improver"

// Template kinds: what runs from the template.
const (
	KindTask     = "task"     // task agents
	KindImprover = "improver" // the evolution agent, which improves templates
	KindReview   = "review"   // a scheduled review (agents/review), adopted from its definition file
)

// Template statuses and authors, as the frontmatter spells them.
const (
	StatusActive   = "active"
	StatusArchived = "archived"

	BySeed      = "seed"
	ByUser      = "user"
	ByEvolution = "evolution"
)

// Template is one version of a template: the directive half of an agent's
// system prompt and the frontmatter that says where it came from.
type Template struct {
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	Version    int       `json:"version"`
	Status     string    `json:"status"`
	AuthoredBy string    `json:"authoredBy"`
	Created    time.Time `json:"created"`
	Tier       string    `json:"tier,omitempty"`
	Model      string    `json:"model,omitempty"`
	// Depth counts the evolutions of an improver template by itself in a
	// row that produced this version; a person's edit resets it.
	Depth   int    `json:"depth,omitempty"`
	General string `json:"generalDirective"` // ## General Directive
	Report  string `json:"reportDirective"`  // ## Report Directive
	Legacy  string `json:"directives,omitempty"`
	// Path is the version's file in the vault.
	Path string `json:"path"`
}

// ID is name@version, as reports and runs name it. It carries a short hash
// of the directives too: a hand edit that does not bump the version still
// changes what the agent is told, so it must change the run key.
func (t Template) ID() string {
	sum := sha256.Sum256([]byte(t.General + "\x00" + t.Report + "\x00" + t.Legacy))
	return fmt.Sprintf("%s@%d+%s", t.Name, t.Version, hex.EncodeToString(sum[:4]))
}

// Label is name@version, for the report's frontmatter.
func (t Template) Label() string { return fmt.Sprintf("%s@%d", t.Name, t.Version) }

// IsLegacy reports whether the template predates the split into general
// and report directives (seed 000 §2.1: an empty general directive).
func (t Template) IsLegacy() bool { return t.General == "" }

// sameDirectives reports whether two versions tell the agent the same
// thing: directives, tier and model.
func (t Template) sameDirectives(o Template) bool {
	return t.General == o.General && t.Report == o.Report && t.Legacy == o.Legacy && t.Tier == o.Tier && t.Model == o.Model
}

// DefaultGeneral and DefaultReport are the seeded directives (seed 000 §5).
const DefaultGeneral = `You are a persistent, detail-oriented assistant for one task. You are calm,
direct and practical.

Handle imperfect notes (typos, half sentences, phone captures) gracefully and
infer what the person meant without fuss. When something is unclear, say so in
the report rather than guess.

**Verification over inference**: do not treat a checklist item as done because
of a related event; only when the notes say it is done.

**Tool discipline**: review "Recent User Decisions" before proposing a change.
If the person rejected a similar proposal, do not propose it again unless the
circumstances clearly changed. Propose only changes the notes support.`

const DefaultReport = `You MUST finish by calling ` + "`update_report`" + ` with two fields: ` + "`tldr`" + ` and ` + "`content`" + `.

### tldr
One to three sentences on where the task stands now: what is done, what is
next, what is at risk. This is what the person sees first.

### content
A markdown report with these sections, each left out when empty:

1. **Achieved** — completed work, as a bulleted list.
2. **What is left to do** — remaining work as checkboxes (` + "`- [ ] item`" + `).
3. **Risks and blockers** — anything that threatens the due date.
4. **Learnings** — decisions and insights worth keeping.
5. **Links** — every URL and note link found in the task and its entries.

### What not to include
- No reasoning about yourself, no "I noticed". Private notes go to ` + "`record_observations`" + `.

### Style
- Write in the task's language.
- Present tense for the current state, past tense for completed work.`

// ImproverGeneral and ImproverReport are the seeded directives of the
// template improver (seed 000 §5: "describes the meta-improvement role").
const ImproverGeneral = `You improve the directives of one agent template. You are shown its current
general and report directives, how its agents performed (wakes, failures,
tokens, how often people confirmed or rejected each kind of proposal and
why), their recent reports and observations, the template's version history
and notes from earlier evolution sessions.

Change only what the evidence supports. A tool whose proposals people keep
rejecting needs a tighter rule; a report section people never read can go.
Keep what works word for word: every change costs the agents' stable prompt
prefix. Never weaken the rules about data versus instructions, and never
touch the general directive to change the report or the other way round.

When the person answers, take their point seriously and propose again.`

const ImproverReport = "Call `propose_directives` with the complete rewritten general directive, the\n" +
	"complete rewritten report directive (unchanged text where nothing should\n" +
	"change) and a rationale. Then tell the person in two or three sentences what\n" +
	"you changed and which evidence made you change it."

// builtin is a template margin seeds when the vault has none by its name.
type builtin struct {
	kind, title, general, report string
}

var builtins = map[string]builtin{
	TaskAgent: {KindTask, "Task agent", DefaultGeneral, DefaultReport},
	Improver:  {KindImprover, "Template improver", ImproverGeneral, ImproverReport},
}

// Render renders a version file (SPEC §3.3). The active file
// `<name>.md` is a byte copy of its version's file.
func Render(t Template) []byte {
	fields := []edit.Field{{Key: "margin", Value: "template"}, {Key: "name", Value: t.Name}, {Key: "kind", Value: t.Kind}, {Key: "version", Value: t.Version},
		{Key: "status", Value: t.Status}, {Key: "authored_by", Value: t.AuthoredBy}, {Key: "created", Value: t.Created.UTC()}}
	if t.Tier != "" {
		fields = append(fields, edit.Field{Key: "tier", Value: edit.Quoted(t.Tier)})
	}
	if t.Model != "" {
		fields = append(fields, edit.Field{Key: "model", Value: edit.Quoted(t.Model)})
	}
	if t.Depth > 0 {
		fields = append(fields, edit.Field{Key: "depth", Value: t.Depth})
	}
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(fields...))
	title := t.Name
	if bi, ok := builtins[t.Name]; ok {
		title = bi.title
	}
	fmt.Fprintf(&b, "# %s\n\nEdit the directives below and save: margin keeps the edit as a new version\n(every version is in the `%s/` folder beside this file), and agents use it\nfrom their next wake.\n", title, t.Name)
	if t.Legacy != "" {
		fmt.Fprintf(&b, "\n## Directives\n\n%s\n", t.Legacy)
	}
	if t.General != "" {
		fmt.Fprintf(&b, "\n## General Directive\n\n%s\n", t.General)
	}
	if t.Report != "" {
		fmt.Fprintf(&b, "\n## Report Directive\n\n%s\n", t.Report)
	}
	return []byte(b.String())
}

// templateHeader is the frontmatter of a template file, decoded into its
// types so that a hand-edited version with, say, `version: two` is refused
// with a clear error rather than read as version 0.
type templateHeader struct {
	Margin     string `yaml:"margin"`
	Name       string `yaml:"name"`
	Kind       string `yaml:"kind"`
	Version    int    `yaml:"version"`
	Status     string `yaml:"status"`
	AuthoredBy string `yaml:"authored_by"`
	Created    string `yaml:"created"`
	Tier       string `yaml:"tier"`
	Model      string `yaml:"model"`
	Depth      int    `yaml:"depth"`
}

// ErrInvalidTemplate marks a template file that does not parse or say enough.
var ErrInvalidTemplate = errors.New("invalid template")

// Parse reads a template file with vault/note, as the index reads it:
// header from the frontmatter, directives from its `## ` sections. Missing
// keys (or a missing header) take the defaults of the template named by the
// file (a hand-written legacy template has few).
func Parse(p string, content []byte) (Template, error) {
	var h templateHeader
	_, err := note.DecodeFrontmatter(content, &h)
	if err != nil && !errors.Is(err, note.ErrNoFrontmatter) {
		return Template{}, fmt.Errorf("%w %s: broken frontmatter: %v", ErrInvalidTemplate, p, err)
	}
	t := Template{Name: h.Name, Kind: h.Kind, Version: h.Version, Status: h.Status, AuthoredBy: h.AuthoredBy,
		Tier: h.Tier, Model: h.Model, Depth: h.Depth, Path: p}
	if t.Name == "" {
		t.Name = TaskAgent
	}
	if t.Kind == "" {
		t.Kind = KindTask
		if bi, ok := builtins[t.Name]; ok {
			t.Kind = bi.kind
		}
	}
	if t.Version <= 0 {
		t.Version = 1
	}
	if t.Status == "" {
		t.Status = StatusActive
	}
	if t.AuthoredBy == "" {
		t.AuthoredBy = ByUser
	}
	switch {
	case h.Margin != "" && h.Margin != "template":
		return Template{}, fmt.Errorf("%w %s: margin: %q, want template", ErrInvalidTemplate, p, h.Margin)
	case t.Kind != KindTask && t.Kind != KindImprover && t.Kind != KindReview:
		return Template{}, fmt.Errorf("%w %s: kind %q, want %s, %s or %s", ErrInvalidTemplate, p, t.Kind, KindTask, KindImprover, KindReview)
	case t.Status != StatusActive && t.Status != StatusArchived:
		return Template{}, fmt.Errorf("%w %s: status %q, want active or archived", ErrInvalidTemplate, p, t.Status)
	case t.AuthoredBy != BySeed && t.AuthoredBy != ByUser && t.AuthoredBy != ByEvolution:
		return Template{}, fmt.Errorf("%w %s: authored_by %q, want seed, user or evolution", ErrInvalidTemplate, p, t.AuthoredBy)
	case t.Tier != "" && t.Tier != "low" && t.Tier != "medium" && t.Tier != "high":
		return Template{}, fmt.Errorf("%w %s: tier %q, want low, medium or high", ErrInvalidTemplate, p, t.Tier)
	case t.Depth < 0:
		return Template{}, fmt.Errorf("%w %s: depth %d, want 0 or more", ErrInvalidTemplate, p, t.Depth)
	}
	if h.Created != "" {
		if t.Created, err = parseCreated(h.Created); err != nil {
			return Template{}, fmt.Errorf("%w %s: created %q: want YYYY-MM-DD or an RFC 3339 time", ErrInvalidTemplate, p, h.Created)
		}
	}
	sections, err := markdownSections(content)
	if err != nil {
		return Template{}, fmt.Errorf("%w %s: %v", ErrInvalidTemplate, p, err)
	}
	t.General = sections["general directive"]
	t.Report = sections["report directive"]
	t.Legacy = sections["directives"]
	switch {
	case t.General == "" && t.Report == "" && t.Legacy == "":
		return Template{}, fmt.Errorf("%w %s has no ## General Directive, ## Report Directive or ## Directives section", ErrInvalidTemplate, p)
	case t.General == "" && t.Legacy == "":
		return Template{}, fmt.Errorf("%w %s has a ## Report Directive but no ## General Directive", ErrInvalidTemplate, p)
	}
	return t, nil
}

func parseCreated(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	return time.Parse(time.DateOnly, s)
}

// markdownSections maps the text of each level-2 heading (lower-cased) to
// its section, deeper headings included, as vault/note reads the file: a
// `## ` line in a code block (``` or ~~~ fences of any length) or an HTML
// block is no heading, and a level-1 heading ends the section.
func markdownSections(content []byte) (map[string]string, error) {
	o := note.ParseOutline(content)
	if o.Plain != "" {
		return nil, fmt.Errorf("body not read: %s", o.Plain)
	}
	out := map[string]string{}
	for _, s := range o.Sections {
		if s.Level == 2 {
			out[strings.ToLower(s.Text)] = strings.ReplaceAll(s.BodyText(content), "\r\n", "\n")
		}
	}
	return out, nil
}

// Directives a template file cannot hold as written: read back, they would
// come out cut short (see directiveProblem).
var (
	ErrGeneralNotKept = fmt.Errorf("%w: the general directive cannot be kept as written", ErrBadDirectives)
	ErrReportNotKept  = fmt.Errorf("%w: the report directive cannot be kept as written", ErrBadDirectives)
)

// checkDirectives refuses directives that would not read back from their
// template file as they were saved.
func checkDirectives(general, report string) error {
	if p := directiveProblem(general); p != "" {
		return fmt.Errorf("%w: %s", ErrGeneralNotKept, p)
	}
	if p := directiveProblem(report); p != "" {
		return fmt.Errorf("%w: %s", ErrReportNotKept, p)
	}
	return nil
}

// directiveProblem says why a directive would not read back from its
// template file as written, "" when it would. markdownSections reads the
// file as vault/note does, so a heading of level 1 or 2 inside a directive
// (a `## ` line outside code, or a line underlined with === or ---) would
// end it there (the rest silently dropped or taken for the other
// directive), and a code fence or HTML block left open would swallow the
// headings after it. Refusing is honest; escaping would show the person
// something other than what they typed.
func directiveProblem(d string) string {
	// In the file a blank line comes before the directive, so its first
	// lines are never a frontmatter block.
	src := "\n" + d
	o := note.ParseOutline([]byte(src))
	if o.Plain != "" {
		return "its markup is too costly to read back: " + o.Plain
	}
	for _, s := range o.Sections {
		if s.Level <= 2 {
			return fmt.Sprintf("the line %q would start a new section of the template file; use ### or deeper inside a directive",
				strings.TrimRight(src[s.Offset:s.Body], "\r\n"))
		}
	}
	switch c := o.Closer; {
	case strings.HasPrefix(c, "`") || strings.HasPrefix(c, "~"):
		return fmt.Sprintf("a %s code fence is left open; close it", c)
	case c != "":
		return fmt.Sprintf("an HTML block is left open; close it with %s", c)
	}
	return ""
}

// FitDirective makes a directive that a template file would not hold as
// written (directiveProblem) fit where the fix is mechanical: a heading of
// level 1 or 2, which would start a new section of the file, becomes a ###
// heading of the same text. It returns the directive as it can be saved,
// the headings it demoted, and why it still cannot be saved ("" when it
// can): a problem that is not mechanical is the author's to fix.
func FitDirective(d string) (fitted string, demoted []string, problem string) {
	src := "\n" + d // as directiveProblem reads it
	o := note.ParseOutline([]byte(src))
	if o.Plain == "" {
		var b strings.Builder
		at := 0
		for _, s := range o.Sections {
			if s.Level > 2 {
				continue
			}
			text := strings.Join(strings.Fields(s.Raw), " ")
			b.WriteString(src[at:s.Offset])
			b.WriteString("### " + text + "\n")
			at = s.Body
			demoted = append(demoted, strings.TrimRight(src[s.Offset:s.Body], "\r\n"))
		}
		b.WriteString(src[at:])
		src = b.String()
	}
	fitted = strings.TrimPrefix(src, "\n")
	return fitted, demoted, directiveProblem(fitted)
}

// seededGeneral is the general directive the seeding pass writes for a
// legacy template (seed 000 §5): the purpose-built default, then what the
// old directives said about persona and behaviour. Paragraphs about the
// report are left to the report directive, which is seeded fresh; carrying
// them over would tangle the two again.
func seededGeneral(kind, legacy string) string {
	base := DefaultGeneral
	if kind == KindImprover {
		base = ImproverGeneral
	}
	var kept []string
	for _, para := range strings.Split(strings.ReplaceAll(legacy, "\r\n", "\n"), "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" || strings.Contains(strings.ToLower(para), "report") {
			continue
		}
		kept = append(kept, para)
	}
	if len(kept) == 0 {
		return base
	}
	return base + "\n\n### From the earlier directives\n\n" + strings.Join(kept, "\n\n")
}
