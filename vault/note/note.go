// Package note parses one markdown note of an Obsidian-style vault into what
// margin needs from it: frontmatter, headings, daily entries, task fields,
// checklist items, tags and links, each with its byte offset and line.
//
// It also owns the vault rules that follow from names alone: which paths are
// daily notes (DailyFormat, from Obsidian's moment.js format) and how a link
// target resolves to a note (LinkKey).
//
// It is the one place margin reads markdown: the writer, the template,
// domain and context files and the retriever find headers with
// FrontmatterBlock or DecodeFrontmatter and sections with ParseOutline, so
// they see a note exactly as the index does.
//
// It is pure: it does no I/O, keeps no state between calls and knows nothing
// of the index, the watcher or the writer. Offsets are byte offsets into the
// whole file (frontmatter included) and lines are 1-based lines of the whole
// file, ended as in LSP by "\n", "\r\n" or "\r", so an editor or the writer
// can act on them directly.
package note

// Kind says what role a note plays in the vault.
type Kind string

const (
	KindNote   Kind = "note"   // any other markdown note
	KindDaily  Kind = "daily"  // a daily log: its path matches the daily-notes folder and format
	KindTask   Kind = "task"   // type: task, a task tag, or a file under a task folder
	KindMargin Kind = "margin" // a file margin writes itself (frontmatter `margin: <kind>`, or under its output folder)
	// KindTemplate is a note in Obsidian's or Templater's templates folder:
	// searchable, never a task, a daily note or an agent's source.
	KindTemplate Kind = "template"
)

// Note is one parsed markdown file.
type Note struct {
	Path  string // vault-relative, forward slashes, e.g. "Tasks/Ship v2.md"
	Kind  Kind
	Title string // frontmatter title, else the file stem

	// Frontmatter is nil when the note has none. When its YAML is broken,
	// FrontmatterError says why, Frontmatter holds the keys that could be
	// read on their own (see salvageFrontmatter), if any, and the body
	// still parses.
	Frontmatter      *Frontmatter
	FrontmatterError string
	BodyOffset       int // byte offset of the first byte after the frontmatter block
	BodyLine         int // 1-based line of that byte

	// Plain says why the body was kept as plain text, without headings,
	// entries, checklist, inline tags or links: its markup would cost more
	// time or memory to parse than a note may (see budget). "" when parsed.
	Plain string

	Headings  []Heading
	Entries   []Entry // daily notes only: the `## HH:MM` sections
	Date      string  // daily notes only: the day, YYYY-MM-DD
	Task      *Task   // task notes only
	Checklist []ChecklistItem
	Tags      []string // frontmatter tags and inline #tags, without '#', de-duplicated case-insensitively, first spelling kept
	Aliases   []string
	Links     []Link

	// MarginKind is the value of the `margin:` frontmatter key on files margin
	// wrote (report, journal, changeset, template, domain, context, evolution).
	MarginKind string
}

// Frontmatter is the decoded YAML header, keys in document order. Lookups are
// case-insensitive; unknown keys are kept so nothing is lost on a round trip.
type Frontmatter struct {
	Fields []Field
}

// Field is one top-level frontmatter key with its decoded YAML value
// (nil, string, bool, int, float64, time.Time, []any or map[string]any).
type Field struct {
	Key   string // as written
	Value any
	Line  int // of the key: in the file, once Parse has the field; in the YAML text before
}

// Heading is an ATX or setext heading.
type Heading struct {
	Level  int
	Text   string // inline text, markup stripped
	Line   int
	Offset int // byte offset of the start of the heading's (first) line
	Body   int // byte offset after the heading's last line (its underline, for a setext heading)
}

// Entry is one `## HH:MM` section of a daily note, from its heading to the
// next heading of level 1 or 2 (or the end of the file).
type Entry struct {
	Time       string // "HH:MM" (a `## 9:05` heading gives "09:05")
	Correction bool   // heading was `## HH:MM [correction]`
	Heading    string // heading text as written, e.g. "07:30 [correction]"
	Line       int    // line of the heading
	Start, End int    // byte range of the whole section, heading included
	Text       string // the section body, heading excluded, trimmed
	Links      []Link // links inside this entry (also present in Note.Links)
}

// Task holds the task fields of a task note, normalised. Raw spellings stay in
// the frontmatter.
type Task struct {
	Title     string
	Status    string   // lower-cased, ' ' and '_' as '-', "canceled" as "cancelled"; open, in-progress, blocked, done, cancelled or a custom value; "" when unset
	Priority  string   // P0..P3 (also p1, 0..3, highest→P0, high→P1, medium/normal→P2, low→P3); custom values kept as written
	Due       string   // YYYY-MM-DD or "" (YAML dates, date strings, timestamps and [[YYYY-MM-DD]] are read)
	Scheduled string   // YYYY-MM-DD or ""
	Estimate  int      // minutes; 0 when unset (`90m`, `2h`, `1.5h`, `1h30m`, `1d`=8h, `1w`=5d, bare minutes, TaskNotes `timeEstimate`)
	Labels    []string // frontmatter tags and labels, minus the `task` tag itself
	Language  string
}

// ChecklistItem is a `- [ ] text` line with its Obsidian Tasks emoji fields
// and Dataview inline fields.
type ChecklistItem struct {
	Line   int
	Offset int    // byte offset of the line start
	End    int    // byte offset of the line end (before the newline)
	State  rune   // ' ' open, 'x' done ('X' too), '-' cancelled, '/' in progress; other characters kept as written
	Text   string // the item text without Tasks, Dataview and block-id fields, trimmed
	Raw    string // the whole line as written

	Due, Scheduled, Start, Done, Cancelled string   // YYYY-MM-DD from 📅 ⏳ 🛫 ✅ ❌ (or Dataview due, scheduled, start, completion, cancelled)
	Priority                               string   // highest|high|medium|low|lowest from 🔺⏫🔼🔽⏬ (or Dataview priority)
	ID                                     string   // 🆔 (or Dataview id)
	DependsOn                              []string // ⛔ id,id (or Dataview dependsOn)

	// Fields holds the Dataview `[key:: value]` and `(key:: value)` fields,
	// keys lower-cased, and the Tasks fields that have no field of their own:
	// created (➕), repeat (🔁) and oncompletion (🏁). Nil when there are none.
	Fields map[string]string

	// BlockID is the Obsidian block id ending the line (`^c1`), without the
	// caret; change-set files use it to name their items.
	BlockID string
}

// Link is a wikilink `[[target#heading|alias]]`, `[[target#^block]]` (or
// embed `![[…]]`) or a markdown link `[text](target)`, `![alt](target)` to a
// note or file in the vault. External URLs are not links.
type Link struct {
	Target   string // as written (markdown links %-decoded), without heading, block or alias; "" links the note itself
	Heading  string
	Block    string
	Alias    string // wikilink alias or markdown link text as written
	Markdown bool
	Embed    bool
	Offset   int // byte range of the whole link syntax
	End      int
	Line     int
}
