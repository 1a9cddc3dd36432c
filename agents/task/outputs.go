package task

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// Generators of a report besides a model id.
const (
	generatedOffline = "offline" // built from the task's structure without a model
	generatedMargin  = "margin"  // margin's own notice (broken frontmatter)
)

// ReportPath is where the report of the agent with outputName lives (SPEC
// §3.3): an agent's output name, not its task's stem, so that tasks of one
// name in different folders never share a report.
func ReportPath(outputFolder, outputName string) string {
	return path.Join(outputFolder, "Reports", outputName+".md")
}

// JournalPath is where the journal of the agent with outputName lives.
func JournalPath(outputFolder, outputName string) string {
	return path.Join(outputFolder, "Journal", outputName+".md")
}

// Report is a report file as read back.
type Report struct {
	Path        string    `json:"path"`
	Task        string    `json:"task"`
	TLDR        string    `json:"tldr"`
	Content     string    `json:"content"`
	Updated     time.Time `json:"updated"`
	GeneratedBy string    `json:"generatedBy"`
	Template    string    `json:"template"`
	Wake        int       `json:"wake"`
	Language    string    `json:"language,omitempty"`
	// FailedRun is the latest wake whose model published no usable
	// report, 0 when the report is that wake's own; FailedWhy says why.
	FailedRun int64  `json:"failedRun,omitempty"`
	FailedWhy string `json:"failedWhy,omitempty"`

	fingerprint edit.Fingerprint
}

// readReport reads a report file; ok is false when there is none.
func readReport(root Reader, p string) (Report, bool, error) {
	snap, err := root.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Report{Path: p}, false, nil
	}
	if err != nil {
		return Report{}, false, err
	}
	r := ParseReport(p, snap.Content)
	r.fingerprint = snap.Fingerprint
	return r, true, nil
}

// ParseReport reads a report from its text (the file, or an editor's
// buffer of it).
func ParseReport(p string, content []byte) Report {
	n := note.Parse(p, content, note.Options{})
	r := Report{Path: p, Content: strings.TrimSpace(string(content[n.BodyOffset:]))}
	if fm := n.Frontmatter; fm != nil {
		r.TLDR = fm.String("tldr")
		r.GeneratedBy = fm.String("generated_by")
		r.Template = fm.String("template")
		r.Language = fm.String("language")
		r.FailedWhy = fm.String(keyFailedWhy)
		if v, ok := fm.Get(keyFailedRun); ok {
			if n, ok := v.(int); ok {
				r.FailedRun = int64(n)
			}
		}
		r.Task = strings.TrimSuffix(strings.TrimPrefix(fm.String("task"), "[["), "]]")
		if v, ok := fm.Get("updated"); ok {
			switch v := v.(type) {
			case time.Time:
				r.Updated = v
			case string:
				r.Updated, _ = time.Parse(time.RFC3339, v)
			}
		}
		if v, ok := fm.Get("wake"); ok {
			r.Wake, _ = v.(int)
		}
	}
	if r.TLDR == "" {
		// SPEC §3.3: a report without tldr shows its first paragraph.
		r.TLDR = firstParagraph(r.Content)
	}
	return r
}

func firstParagraph(s string) string {
	for _, p := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "#") {
			return note.OneLine(p)
		}
	}
	return ""
}

// renderReport renders a report file (SPEC §3.3). language, when known,
// is the task's: margin keeps it here, not in the task note.
func renderReport(taskPath, agent, template string, updated time.Time, wake int, tldr, generatedBy, language, content string) []byte {
	fields := []edit.Field{{Key: "margin", Value: "report"}, {Key: "task", Value: edit.Quoted(note.Wikilink(taskPath))}, {Key: "agent", Value: agent},
		{Key: "template", Value: edit.Quoted(template)}, {Key: "updated", Value: updated}, {Key: "wake", Value: wake},
		{Key: "tldr", Value: edit.Quoted(note.OneLine(tldr))}, {Key: "generated_by", Value: edit.Quoted(generatedBy)}}
	if language != "" {
		fields = append(fields, edit.Field{Key: "language", Value: edit.Quoted(language)})
	}
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(fields...))
	b.WriteString(strings.TrimSpace(untask(content)))
	b.WriteString("\n")
	return []byte(b.String())
}

// untask rewrites the checkbox items of a report as plain list items: a
// report quotes the task's checklist, and a checkbox there is a second
// copy of the task that the Tasks plugin lists again, without its dates.
// An open item gets ☐, a done one ☑, any other status its brackets
// escaped. The items are the ones note finds, so code is left as written.
func untask(content string) string {
	// The report's text is the body under margin's frontmatter, so a ---
	// at its top is no header: parse it after a line break.
	src := "\n" + content
	var b strings.Builder
	last := 0
	for _, it := range note.Parse("report.md", []byte(src), note.Options{}).Checklist {
		box := it.Offset + strings.IndexByte(it.Raw, '[') // the first [ on an item's line is its box
		_, size := utf8.DecodeRuneInString(src[box+1:])
		mark := `\[` + src[box+1:box+1+size] + `\]`
		switch it.State {
		case ' ':
			mark = "☐"
		case 'x':
			mark = "☑"
		}
		b.WriteString(src[last:box] + mark)
		last = box + 1 + size + 1
	}
	b.WriteString(src[last:])
	return b.String()[1:]
}

// journalLine is one journal entry (SPEC §3.3).
func journalLine(at time.Time, text string) string {
	return fmt.Sprintf("- %s — %s", at.Format("2006-01-02 15:04"), note.OneLine(text))
}

// ReadJournal returns the journal's entry lines, oldest first.
func ReadJournal(root Reader, p string) ([]string, error) {
	snap, err := root.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(snap.Content), "\n") {
		if strings.HasPrefix(l, "- ") {
			lines = append(lines, strings.TrimRight(l, "\r"))
		}
	}
	return lines, nil
}

// journalHas reports whether every text is in the journal as an entry's
// text: how a re-run tells whether a crashed attempt's append landed.
func journalHas(root Reader, p string, texts []string) (bool, error) {
	lines, err := ReadJournal(root, p)
	if err != nil {
		return false, err
	}
	have := map[string]bool{}
	for _, l := range lines {
		if _, text, ok := strings.Cut(l, " — "); ok {
			have[text] = true
		}
	}
	for _, t := range texts {
		if !have[t] {
			return false, nil
		}
	}
	return len(texts) > 0, nil
}

// appendJournal appends lines to the journal, creating it when needed,
// through the editor when the journal is open there (ed may be nil). It
// only ever adds at the end, so an edit the person made is kept: appended
// to a version they saved meanwhile (edit.Root.Change).
func appendJournal(ctx context.Context, root Files, ed edit.Editor, p, taskPath, agent string, lines []string) error {
	header := edit.RenderFrontmatter(edit.Field{Key: "margin", Value: "journal"}, edit.Field{Key: "task", Value: edit.Quoted(note.Wikilink(taskPath))},
		edit.Field{Key: "agent", Value: agent}) + "# Journal: " + stem(taskPath) + "\n\n"
	_, err := root.Change(ctx, ed, p, func(cur edit.Current) ([]byte, error) {
		content := string(cur.Content)
		if content == "" {
			content = header
		} else if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		return []byte(content + strings.Join(lines, "\n") + "\n"), nil
	})
	if err != nil {
		return fmt.Errorf("appending to the journal: %w", err)
	}
	return nil
}

// offlineReport is the report margin writes without a model (SPEC §1.4):
// the task's structure, nothing inferred.
func offlineReport(t *note.Task, checklist []note.ChecklistItem, entries []index.EntryMeta, why string) (tldr, content string) {
	summary, body := taskStructure(t, checklist, entries)
	return "Offline summary (no model reachable): " + summary + ".",
		fmt.Sprintf("> [!warning] Offline report\n> No model was reachable, so this report lists the task's structure only. %s\n\n", note.OneLine(why)) + body
}

// taskStructure is what a report without a model says: a one-line summary
// of the checklist and fields, and the body listing them with the open
// items and the recent linked entries.
func taskStructure(t *note.Task, checklist []note.ChecklistItem, entries []index.EntryMeta) (summary, body string) {
	done, open, total := 0, []string{}, 0
	for _, it := range checklist {
		switch it.State {
		case '-':
			continue // cancelled items are not work left or done
		case 'x', 'X':
			done++
		default:
			open = append(open, it.Text)
		}
		total++
	}
	var facts []string
	field := func(name, v string) {
		if v != "" {
			facts = append(facts, name+" "+v)
		}
	}
	field("status", t.Status)
	field("priority", t.Priority)
	field("due", t.Due)
	field("scheduled", t.Scheduled)
	if t.Estimate > 0 {
		field("estimate", note.FormatMinutes(t.Estimate))
	}
	summary = fmt.Sprintf("%d of %d checklist items done", done, total)
	if len(facts) > 0 {
		summary += "; " + strings.Join(facts, ", ")
	}

	var b strings.Builder
	b.WriteString("## Status\n\n")
	if len(facts) == 0 {
		b.WriteString("- no status, priority or dates set\n")
	}
	for _, f := range facts {
		name, v, _ := strings.Cut(f, " ")
		fmt.Fprintf(&b, "- **%s**: %s\n", name, v)
	}
	fmt.Fprintf(&b, "\n## Checklist progress\n\n%d of %d items done.\n", done, total)
	if len(open) > 0 {
		b.WriteString("\n## Open items\n\n")
		for _, o := range open {
			fmt.Fprintf(&b, "- ☐ %s\n", o)
		}
	}
	if len(entries) > 0 {
		b.WriteString("\n## Recent linked entries\n\n")
		recent := entries[max(0, len(entries)-5):]
		for i := len(recent) - 1; i >= 0; i-- {
			e := recent[i]
			fmt.Fprintf(&b, "- [[%s#%s|%s %s]] %s\n", strings.TrimSuffix(e.Path, path.Ext(e.Path)), e.Heading, e.Date, e.Time, firstLine(e.Text))
		}
	}
	return summary, b.String()
}

// brokenReport is the report on a task whose frontmatter does not parse:
// the agent cannot trust any field, so it says what is wrong instead.
func brokenReport(taskPath, problem string) (tldr, content string) {
	tldr = "The task's frontmatter does not parse, so the agent cannot read it: " + note.OneLine(problem)
	content = fmt.Sprintf("## The task note cannot be read\n\nThe YAML frontmatter of %s does not parse:\n\n```\n%s\n```\n\n"+
		"Fix the frontmatter (between the two `---` lines) and save; the agent wakes again on the next change.\n",
		note.Wikilink(taskPath), strings.TrimSpace(problem))
	return tldr, content
}

// ReadReport reads the report of agent a from the vault's files, whose
// output folder is outputFolder.
func ReadReport(files Reader, outputFolder string, a Agent) (Report, error) {
	p := ReportPath(outputFolder, a.OutputName)
	rep, ok, err := readReport(files, p)
	if err != nil {
		return rep, fmt.Errorf("reading the report on %s: %w", a.Task, err)
	}
	if !ok {
		return rep, fmt.Errorf("no report on %s yet: %w", a.Task, vault.ErrNotFound)
	}
	if rep.Task == "" {
		rep.Task = a.Task
	}
	return rep, nil
}
