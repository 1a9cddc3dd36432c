package agents

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/adrg/frontmatter"
	"gopkg.in/yaml.v3"

	"github.com/margin-md/margin/vault/edit"
)

// templateName is the task agent's template (SPEC §3.3, §4.4).
const templateName = "task-agent"

// Template is the directive half of a task agent's system prompt.
type Template struct {
	Name    string
	Version int
	General string // ## General Directive
	Report  string // ## Report Directive
	Legacy  string // ## Directives, of a template written before the split
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

// defaultGeneral and defaultReport are the seeded directives (seed 000 §5).
const defaultGeneral = `You are a persistent, detail-oriented assistant for one task. You are calm,
direct and practical.

Handle imperfect notes (typos, half sentences, phone captures) gracefully and
infer what the person meant without fuss. When something is unclear, say so in
the report rather than guess.

**Verification over inference**: do not treat a checklist item as done because
of a related event; only when the notes say it is done.

**Tool discipline**: review "Recent User Decisions" before proposing a change.
If the person rejected a similar proposal, do not propose it again unless the
circumstances clearly changed. Propose only changes the notes support.`

const defaultReport = `You MUST finish by calling ` + "`update_report`" + ` with two fields: ` + "`tldr`" + ` and ` + "`content`" + `.

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

// seedTemplate renders the template file written on first run.
func seedTemplate(now time.Time) string {
	return fmt.Sprintf(`---
margin: template
name: %s
kind: task
version: 1
status: active
authored_by: seed
created: %s
---
# Task agent

Edit the directives below to change how every task agent works; bump
`+"`version`"+` when you do.

## General Directive

%s

## Report Directive

%s
`, templateName, now.Format(time.DateOnly), defaultGeneral, defaultReport)
}

// loadTemplate reads the active task-agent template from the vault, writing
// the seeded default first when there is none (and its v1 copy, SPEC §3.3).
func loadTemplate(root *edit.Root, outputFolder string, now time.Time) (Template, error) {
	active := path.Join(outputFolder, "Templates", templateName+".md")
	snap, err := root.Read(active)
	if errors.Is(err, fs.ErrNotExist) {
		content := []byte(seedTemplate(now))
		if _, err := root.Create(active, content); err != nil && !errors.Is(err, edit.ErrConflict) {
			return Template{}, fmt.Errorf("seeding the task-agent template: %w", err)
		}
		if _, err := root.Create(path.Join(outputFolder, "Templates", templateName, "v1.md"), content); err != nil && !errors.Is(err, edit.ErrConflict) {
			return Template{}, fmt.Errorf("seeding the task-agent template: %w", err)
		}
		snap, err = root.Read(active)
	}
	if err != nil {
		return Template{}, fmt.Errorf("reading the task-agent template: %w", err)
	}
	return parseTemplate(active, snap.Content)
}

// templateHeader is the frontmatter of a template file, decoded into its
// types so that a hand-edited version with, say, `version: two` is refused
// with a clear error rather than read as version 0.
type templateHeader struct {
	Name    string `yaml:"name"`
	Version int    `yaml:"version"`
}

// yamlFrontmatter reads `---` fenced YAML with yaml.v3, as the rest of
// margin does (adrg/frontmatter's default is yaml.v2).
var yamlFrontmatter = frontmatter.NewFormat("---", "---", yaml.Unmarshal)

// parseTemplate reads a template file: name and version from the
// frontmatter, directives from its `## ` sections.
func parseTemplate(p string, content []byte) (Template, error) {
	var h templateHeader
	body, err := frontmatter.Parse(bytes.NewReader(content), &h, yamlFrontmatter)
	if err != nil {
		return Template{}, fmt.Errorf("template %s: broken frontmatter: %w", p, err)
	}
	t := Template{Name: cmp.Or(h.Name, templateName), Version: cmp.Or(h.Version, 1)}
	sections := markdownSections(string(body))
	t.General = sections["general directive"]
	t.Report = sections["report directive"]
	t.Legacy = sections["directives"]
	if t.General == "" && t.Report == "" && t.Legacy == "" {
		return Template{}, fmt.Errorf("template %s has no ## General Directive, ## Report Directive or ## Directives section", p)
	}
	return t, nil
}

// markdownSections splits a body on level-2 headings, keyed by lower-cased
// heading text; deeper headings stay inside their section.
func markdownSections(body string) map[string]string {
	out := map[string]string{}
	var name string
	var buf strings.Builder
	flush := func() {
		if name != "" {
			out[name] = strings.TrimSpace(buf.String())
		}
		buf.Reset()
	}
	fence := false
	for _, line := range strings.SplitAfter(body, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(trimmed, "## ") {
			flush()
			name = strings.ToLower(strings.TrimSpace(trimmed[3:]))
			continue
		}
		buf.WriteString(line)
	}
	flush()
	return out
}
