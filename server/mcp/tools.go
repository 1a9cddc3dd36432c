package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/related"
	"github.com/margin-md/margin/vault/retrieve"
)

// The tools' arguments and results (SPEC §10). Their JSON schemas are
// generated from these types; closed sets are enums. A search and an
// answer are the editor protocol's own (server/protocol, through
// server/wire), as they are the same shape; the rest are MCP's, as they
// are not: snake_case names, and what a model needs of a report or a
// change set (who proposed it and the file to read) rather than the
// editor's fields.
type (
	SearchArgs struct {
		Query string   `json:"query" jsonschema:"words to find; \"quoted words\" are a phrase, word* a prefix, key:value a property, tag:name a tag"`
		Mode  string   `json:"mode,omitempty" jsonschema:"auto (default): every word of keywords; for a question, the notes holding most of its words (stop words need not match); all: every word in the note; any: one of them; phrase: the words in order"`
		From  string   `json:"from,omitempty" jsonschema:"YYYY-MM-DD: only daily notes from this day"`
		To    string   `json:"to,omitempty" jsonschema:"YYYY-MM-DD: only daily notes up to this day"`
		Glob  string   `json:"glob,omitempty" jsonschema:"vault path glob: * and ? stay within a folder, ** crosses folders"`
		Tags  []string `json:"tags,omitempty" jsonschema:"every tag must be on the note"`
		Limit int      `json:"limit,omitempty" jsonschema:"at most this many hits (default 20)"`

		Outputs bool `json:"outputs,omitempty" jsonschema:"true: also search margin's own outputs (reports, journals, change sets), left out by default"`
	}
	ReadArgs struct {
		Path    string `json:"path" jsonschema:"the note's path relative to the vault, e.g. Tasks/Renew passport.md"`
		Heading string `json:"heading,omitempty" jsonschema:"only the section under this heading"`
	}
	RelatedArgs struct {
		Path  string `json:"path" jsonschema:"the note's path relative to the vault, e.g. Notes/Sleep.md"`
		Limit int    `json:"limit,omitempty" jsonschema:"at most this many notes (default 10)"`
	}
	RelatedResult struct {
		Notes []related.Note `json:"notes"`
		// Reason says why there are none, when that is not for want of
		// other notes: no embedding model, nothing embedded yet.
		Reason string `json:"reason,omitempty"`
	}
	ReadResult struct {
		Path        string         `json:"path"`
		Heading     string         `json:"heading,omitempty"`
		Frontmatter map[string]any `json:"frontmatter,omitempty"`
		Content     string         `json:"content"`
	}
	TasksArgs struct {
		Status    string `json:"status,omitempty" jsonschema:"only tasks with this status"`
		DueBefore string `json:"due_before,omitempty" jsonschema:"YYYY-MM-DD: only tasks due before this day"`
		Tag       string `json:"tag,omitempty" jsonschema:"only tasks with this label or tag"`
	}
	TaskItem struct {
		Path      string   `json:"path"`
		Title     string   `json:"title"`
		Status    string   `json:"status,omitempty"`
		Priority  string   `json:"priority,omitempty"`
		Due       string   `json:"due,omitempty"`
		Scheduled string   `json:"scheduled,omitempty"`
		Estimate  int      `json:"estimate_minutes,omitempty"`
		Labels    []string `json:"labels,omitempty"`
		TLDR      string   `json:"tldr,omitempty"`
	}
	TasksResult struct {
		Tasks []TaskItem `json:"tasks"`
	}
	ReportArgs struct {
		Task string `json:"task" jsonschema:"the task note's path or name"`
	}
	ReportResult struct {
		Task        string    `json:"task"`
		Path        string    `json:"path"`
		TLDR        string    `json:"tldr"`
		Content     string    `json:"content"`
		Updated     time.Time `json:"updated,omitzero"`
		GeneratedBy string    `json:"generated_by"`
	}
	ReviewArgs struct {
		Name string `json:"name" jsonschema:"the review's name: its definition is Margin/Reviews/<name>.md"`
		Date string `json:"date,omitempty" jsonschema:"YYYY-MM-DD: that day's review (default the latest)"`
	}
	ReviewResult struct {
		Name        string    `json:"name"`
		Path        string    `json:"path"`
		Date        string    `json:"date"`
		PeriodFrom  time.Time `json:"period_from,omitzero" jsonschema:"absent for a review's first run, which read its whole scope"`
		PeriodTo    time.Time `json:"period_to"`
		GeneratedBy string    `json:"generated_by"`
		Template    string    `json:"template"`
		Content     string    `json:"content"`
	}
	AskArgs struct {
		Question  string            `json:"question" jsonschema:"the question about the notes"`
		SessionID string            `json:"session_id,omitempty" jsonschema:"to answer a clarifying question: the session id it came with"`
		Answers   map[string]string `json:"answers,omitempty" jsonschema:"to answer a clarifying question: question id to answer"`
	}
	LogArgs struct {
		Text string `json:"text" jsonschema:"what to log, as the person would write it"`
		Time string `json:"time,omitempty" jsonschema:"when: RFC 3339 or YYYY-MM-DDTHH:MM (default now)"`
	}
	LogResult struct {
		Type    string           `json:"type"`
		Path    string           `json:"path,omitempty"`
		Heading string           `json:"heading,omitempty"`
		Parsed  map[string]any   `json:"parsed,omitempty"`
		Answer  *protocol.Answer `json:"answer,omitempty"`
	}
	EditArgs struct {
		Path    string `json:"path" jsonschema:"the note's path relative to the vault (.md)"`
		Kind    string `json:"kind" jsonschema:"create a new note, append to its end, or replace old_text in it"`
		Text    string `json:"text" jsonschema:"the new text"`
		OldText string `json:"old_text,omitempty" jsonschema:"replace only: the text to replace, exactly as in the note; it must occur once"`
		Reason  string `json:"reason" jsonschema:"why, in one line: the person reads it before deciding"`
	}
	TaskChangeArgs struct {
		Task   string `json:"task" jsonschema:"the task note's path or name"`
		Field  string `json:"field"`
		Value  string `json:"value" jsonschema:"the new value; labels: comma-separated, added to the task's"`
		Reason string `json:"reason" jsonschema:"why, in one line: the person reads it before deciding"`
	}
	ProposalResult struct {
		ChangeSet string `json:"change_set"`
		File      string `json:"file" jsonschema:"the change set file in the vault, where the person sees the diff"`
		Item      string `json:"item"`
		Summary   string `json:"summary"`
		Status    string `json:"status"`
		Note      string `json:"note"`
	}
	ChangesArgs struct {
		Status string `json:"status,omitempty" jsonschema:"open (default: pending and partially resolved) or one status, or all"`
	}
	ChangesResult struct {
		ChangeSets []ChangeSet `json:"change_sets"`
	}
	ChangeSet struct {
		ID string `json:"id"`
		// ProposedBy is the task agent's id, or mcp:<client name>.
		ProposedBy string       `json:"proposed_by"`
		Task       string       `json:"task" jsonschema:"the note the changes apply to"`
		File       string       `json:"file"`
		Status     string       `json:"status"`
		Created    time.Time    `json:"created"`
		Expires    time.Time    `json:"expires"`
		Items      []ChangeItem `json:"items"`
	}
	ChangeItem struct {
		ID      string         `json:"id"`
		Tool    string         `json:"tool"`
		Args    map[string]any `json:"args"`
		Summary string         `json:"summary"`
		Status  string         `json:"status"`
		Reason  string         `json:"reason,omitempty" jsonschema:"the person's reason for a rejection"`
		Detail  string         `json:"detail,omitempty" jsonschema:"why margin did not apply a confirmed item"`
	}
)

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// schema is the input schema of T with enums set on the named properties.
func schema[T any](enums map[string][]any) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err) // the types above
	}
	for k, e := range enums {
		s.Properties[k].Enum = e
	}
	return s
}

// enum is a closed set the agents own, as a schema's enum.
func enum(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

func readOnly(name, title, desc string) *sdk.Tool {
	return &sdk.Tool{Name: name, Title: title, Description: desc, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}}
}

func writing(name, title, desc string) *sdk.Tool {
	return &sdk.Tool{Name: name, Title: title, Description: desc, Annotations: &sdk.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)}}
}

func (s *Server) addTools() {
	t := readOnly("search_notes", "Search notes", "Search the vault's notes by words or a question in plain words, dates, path glob and tags; the best matches first, each with its path, heading, line and snippet. Mode hybrid (or semantic) also finds notes by meaning, in any language, when the notes have been embedded; otherwise it searches by words and says why.")
	t.InputSchema = schema[SearchArgs](map[string][]any{"mode": {"auto", "all", "any", "phrase", "semantic", "hybrid"}})
	add(s, t, s.searchNotes)

	add(s, readOnly("read_note", "Read a note", "Read a note of the vault, or one section of it, with its frontmatter as structured content."), s.readNote)

	add(s, readOnly("related_notes", "Related notes", "The notes nearest a note by meaning that it neither links to nor is linked from: links the person may be missing. Each with the path, heading and line of its nearest section and a score (cosine similarity). Empty, with the reason, before the notes are embedded."), s.relatedNotes)

	t = readOnly("list_tasks", "List tasks", "List the vault's task notes with their fields and the TLDR of their agent's report.")
	t.InputSchema = schema[TasksArgs](map[string][]any{"status": enum(changes.TaskStatuses())})
	add(s, t, s.listTasks)

	add(s, readOnly("get_report", "Get a task's report", "The report margin's agent keeps on a task, and its TLDR."), s.getReport)

	add(s, readOnly("get_review", "Get a scheduled review", "A scheduled review margin wrote into the vault (daily, weekly, …): its note, with a TLDR and [[path#heading]] citations."), s.getReview)

	// ask writes nothing: Question answers whatever the router takes the
	// input for, logs nothing and leaves the global context alone.
	t = readOnly("ask", "Ask the notes", "Ask a question about the notes: an answer with citations [[path#heading]]. A clarifying question comes back with a session id and options; call ask again with session_id and answers. Without a model the answer is retrieval only, marked degraded. To log something, use log_entry.")
	add(s, t, s.ask)

	add(s, writing("log_entry", "Log an entry", "Append an entry to the daily note of its day (a `## HH:MM` section), as the person would log it."), s.logEntry)

	t = writing("propose_edit", "Propose an edit", "Propose creating a note, appending to one, or replacing text in one. Nothing is written: the edit goes into a change set the person reads as a diff and approves or rejects.")
	t.InputSchema = schema[EditArgs](map[string][]any{"kind": {"create", "append", "replace"}})
	add(s, t, s.proposeEdit)

	t = writing("propose_task_change", "Propose a task change", "Propose a new value for one field of a task note. Nothing is written: the change goes into a change set the person approves or rejects.")
	t.InputSchema = schema[TaskChangeArgs](map[string][]any{"field": enum(changes.TaskFields())})
	add(s, t, s.proposeTaskChange)

	t = readOnly("list_changes", "List change sets", "List change sets (margin's agents' and AI applications' proposals) and the status of each item.")
	t.InputSchema = schema[ChangesArgs](map[string][]any{"status": {"open", "pending", "partially-resolved", "resolved", "expired", "superseded", "all"}})
	add(s, t, s.listChanges)
}

func (s *Server) searchNotes(ctx context.Context, _ *sdk.CallToolRequest, a SearchArgs) (*sdk.CallToolResult, protocol.SearchResult, error) {
	q := index.Query{Text: a.Query, Mode: index.Mode(a.Mode), From: a.From, To: a.To, Glob: a.Glob, Tags: a.Tags, Limit: a.Limit, Outputs: a.Outputs}
	if err := retrieve.Validate(q); err != nil {
		return nil, protocol.SearchResult{}, err // a QueryError names the argument
	}
	if q.Limit == 0 {
		q.Limit = searchLimit
	}
	if err := s.fresh(ctx); err != nil {
		return nil, protocol.SearchResult{}, err
	}
	var found retrieve.Result
	var err error
	if s.ws.Retrieve != nil {
		found, err = s.ws.Retrieve.Find(ctx, q)
	} else {
		found.Mode = q.Mode
		found.Result, err = s.ws.Vault.Index().Find(ctx, q)
	}
	if err != nil {
		return nil, protocol.SearchResult{}, err
	}
	if found.Hits == nil {
		found.Hits = []index.Hit{}
	}
	r := wire.SearchResult(found)
	text := hitsText(r)
	if r.Fallback != "" {
		text = "Searched by words (" + r.Fallback + ").\n" + text
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, r, nil
}

func (s *Server) relatedNotes(ctx context.Context, _ *sdk.CallToolRequest, a RelatedArgs) (*sdk.CallToolResult, RelatedResult, error) {
	if a.Limit < 0 {
		return nil, RelatedResult{}, errors.New("limit: must not be negative")
	}
	if a.Limit == 0 {
		a.Limit = relatedLimit
	}
	p, err := s.notePath(a.Path)
	if err != nil {
		return nil, RelatedResult{}, err
	}
	if err := s.fresh(ctx); err != nil {
		return nil, RelatedResult{}, err
	}
	r, err := s.ws.Related(ctx, p, a.Limit)
	if errors.Is(err, index.ErrNotFound) {
		return nil, RelatedResult{}, fmt.Errorf("no note at %s", p)
	}
	if err != nil {
		return nil, RelatedResult{}, err
	}
	res := RelatedResult{Notes: r.Notes, Reason: r.Why}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: relatedText(p, res)}}}, res, nil
}

// relatedLimit is related_notes' number of notes when the call names none.
const relatedLimit = 10

// relatedText is related notes as a model reads them.
func relatedText(path string, r RelatedResult) string {
	if len(r.Notes) == 0 {
		if r.Reason != "" {
			return "No related notes: " + r.Reason + "."
		}
		return "No other note is near " + path + " by meaning that it does not already link to or from."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Notes near %s by meaning, not linked to or from it, the nearest first:\n", path)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "\n%s:%d", n.Path, n.Line)
		if n.Heading != "" {
			b.WriteString(" # " + n.Heading)
		}
		fmt.Fprintf(&b, " (%.2f)", n.Score)
	}
	return b.String()
}

// searchLimit is search_notes' number of hits when the call names none.
const searchLimit = 20

// hitsText is a search's result as the text a model reads: the count, then
// each hit's place and snippet, without the JSON keys and escapes of the
// structured content (20 hits on the 10k bench vault: 3.4–4.4 kB against
// 5.0–6.0 kB).
func hitsText(r protocol.SearchResult) string {
	var b strings.Builder
	switch {
	case r.Total == 0:
		return "No note matches."
	case r.Truncated:
		fmt.Fprintf(&b, "%d notes match; the best %d (a higher limit shows more):\n", r.Total, len(r.Hits))
	default:
		fmt.Fprintf(&b, "%d notes match, the best first:\n", r.Total)
	}
	for _, h := range r.Hits {
		fmt.Fprintf(&b, "\n%s:%d", h.Path, h.Line)
		if h.Heading != "" {
			b.WriteString(" # " + h.Heading)
		}
		if h.Snippet != "" {
			b.WriteString("\n  " + strings.ReplaceAll(h.Snippet, "\n", " "))
		}
	}
	return b.String()
}

// notePath is a path a client names, relative to the vault (SPEC §10:
// `..` and absolute paths are refused by edit.Clean, symlinks that leave
// the vault by the root every read goes through).
func (s *Server) notePath(p string) (string, error) {
	rel, err := edit.Clean(p)
	if err != nil {
		return "", err
	}
	for part := range strings.SplitSeq(rel, "/") {
		if part == s.ws.Vault.Options().StateDir || part == ".git" {
			return "", fmt.Errorf("%s is margin's or git's bookkeeping, not a note", rel)
		}
	}
	return rel, nil
}

func (s *Server) readNote(ctx context.Context, _ *sdk.CallToolRequest, a ReadArgs) (*sdk.CallToolResult, ReadResult, error) {
	p, err := s.notePath(a.Path)
	if err != nil {
		return nil, ReadResult{}, err
	}
	snap, err := s.ws.Vault.Root().Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ReadResult{}, fmt.Errorf("no note at %s", p)
	}
	if err != nil {
		return nil, ReadResult{}, err
	}
	if limit := s.ws.Vault.Options().MaxFileSize; int64(len(snap.Content)) > limit {
		return nil, ReadResult{}, fmt.Errorf("%s is %d bytes, more than margin reads of a note (vault.max_file_size, %d)", p, len(snap.Content), limit)
	}
	if !utf8.Valid(snap.Content) {
		return nil, ReadResult{}, fmt.Errorf("%s is not a text note (not UTF-8)", p)
	}
	n := note.Parse(p, snap.Content, s.ws.Vault.ParseOptions())
	res := ReadResult{Path: p, Content: string(snap.Content)}
	if n.Frontmatter != nil {
		res.Frontmatter = map[string]any{}
		for _, f := range n.Frontmatter.Fields {
			res.Frontmatter[f.Key] = f.Value
		}
	}
	if a.Heading != "" {
		want := strings.TrimSpace(strings.TrimLeft(a.Heading, "# "))
		secs := note.ParseOutline(snap.Content).Sections
		i := slices.IndexFunc(secs, func(sec note.Section) bool {
			return strings.EqualFold(sec.Text, want) || strings.EqualFold(sec.Raw, want)
		})
		if i < 0 {
			return nil, ReadResult{}, fmt.Errorf("%s has no heading %q", p, a.Heading)
		}
		res.Heading, res.Content = secs[i].Raw, string(snap.Content[secs[i].Offset:secs[i].End])
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Content}}}, res, nil
}

func (s *Server) listTasks(ctx context.Context, _ *sdk.CallToolRequest, a TasksArgs) (*sdk.CallToolResult, TasksResult, error) {
	if a.DueBefore != "" && !isoDate.MatchString(a.DueBefore) {
		return nil, TasksResult{}, fmt.Errorf("due_before %q is not a date written YYYY-MM-DD", a.DueBefore)
	}
	if err := s.fresh(ctx); err != nil {
		return nil, TasksResult{}, err
	}
	ts, err := s.ws.Vault.Index().Tasks(ctx)
	if err != nil {
		return nil, TasksResult{}, err
	}
	tag := strings.TrimPrefix(a.Tag, "#")
	out := TasksResult{Tasks: []TaskItem{}}
	for _, t := range ts {
		switch {
		case a.Status != "" && t.Status != a.Status,
			a.DueBefore != "" && (t.Due == "" || t.Due >= a.DueBefore),
			tag != "" && !slices.ContainsFunc(t.Labels, func(l string) bool { return strings.EqualFold(strings.TrimPrefix(l, "#"), tag) }):
			continue
		}
		it := TaskItem{Path: t.Path, Title: t.Title, Status: t.Status, Priority: t.Priority, Due: t.Due, Scheduled: t.Scheduled, Estimate: t.Estimate, Labels: t.Labels}
		if rep, err := s.report(ctx, t.Path); err == nil {
			it.TLDR = rep.TLDR
		}
		out.Tasks = append(out.Tasks, it)
	}
	return nil, out, nil
}

// report reads the report of the agent of the task at p.
func (s *Server) report(ctx context.Context, p string) (task.Report, error) {
	a, err := s.tasks.AgentForTask(ctx, p)
	if err != nil {
		return task.Report{}, err
	}
	return task.ReadReport(s.ws.Vault.Root(), s.ws.Vault.Options().OutputFolder, a)
}

func (s *Server) getReport(ctx context.Context, _ *sdk.CallToolRequest, a ReportArgs) (*sdk.CallToolResult, ReportResult, error) {
	p, err := s.taskPath(ctx, a.Task)
	if err != nil {
		return nil, ReportResult{}, err
	}
	rep, err := s.report(ctx, p)
	if errors.Is(err, task.ErrNotFound) {
		return nil, ReportResult{}, fmt.Errorf("no report on %s yet: the task has no agent (margin serve gives it one)", p)
	}
	if err != nil {
		return nil, ReportResult{}, err
	}
	res := ReportResult{Task: p, Path: rep.Path, TLDR: rep.TLDR, Content: rep.Content, Updated: rep.Updated, GeneratedBy: rep.GeneratedBy}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "TLDR: " + rep.TLDR + "\n\n" + rep.Content}}}, res, nil
}

func (s *Server) getReview(ctx context.Context, _ *sdk.CallToolRequest, a ReviewArgs) (*sdk.CallToolResult, ReviewResult, error) {
	n, err := s.ws.Reviews.Latest(ctx, a.Name, a.Date)
	if err != nil {
		return nil, ReviewResult{}, err
	}
	r := n.Run
	res := ReviewResult{Name: r.Name, Path: r.Note, Date: r.Date, PeriodFrom: r.From, PeriodTo: r.To, GeneratedBy: r.GeneratedBy, Template: r.Template, Content: n.Content}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: n.Content}}}, res, nil
}

// taskPath finds the task a client names by path or name.
func (s *Server) taskPath(ctx context.Context, name string) (string, error) {
	if strings.HasSuffix(name, ".md") {
		return s.notePath(name)
	}
	if err := s.fresh(ctx); err != nil {
		return "", err
	}
	return s.ws.Vault.FindTask(ctx, name)
}

func (s *Server) ask(ctx context.Context, _ *sdk.CallToolRequest, a AskArgs) (*sdk.CallToolResult, protocol.Answer, error) {
	if err := s.fresh(ctx); err != nil {
		return nil, protocol.Answer{}, err
	}
	var (
		res query.Result
		err error
	)
	if a.SessionID != "" {
		res, err = s.ws.Query.Reply(ctx, a.SessionID, a.Answers, false, nil)
	} else {
		res, err = s.ws.Query.Question(ctx, a.Question, nil)
	}
	if err != nil {
		return nil, protocol.Answer{}, err
	}
	res.Transitions = nil // the state machine's inner path: not the client's business
	answer := wire.Answer(res)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answerText(answer)}}}, answer, nil
}

// answerText is the query flow's result as a model reads it.
func answerText(r protocol.Answer) string {
	var b strings.Builder
	switch query.Status(r.Status) {
	case query.StatusClarification:
		fmt.Fprintf(&b, "margin needs a clarification (session_id %q). Ask the person, then call ask again with session_id and answers {question id: answer}:\n", r.SessionID)
		for _, q := range r.Questions {
			fmt.Fprintf(&b, "- %s: %s", q.ID, q.Question)
			if len(q.Options) > 0 {
				fmt.Fprintf(&b, " (options: %s)", strings.Join(q.Options, "; "))
			}
			b.WriteString("\n")
		}
		return b.String()
	case query.StatusDegraded:
		// Unreachable or unusable, the answer says which.
		b.WriteString("Degraded answer: no model's answer could be used, so this is retrieval only (the best-ranked notes), not an answer a model wrote.\n\n")
	case query.StatusPartial:
		b.WriteString("Partial answer: margin could not answer all of it.\n\n")
	}
	b.WriteString(r.Answer)
	if len(r.Citations) > 0 {
		b.WriteString("\n\nSources:\n")
		for _, c := range r.Citations {
			fmt.Fprintf(&b, "- %s\n", c.Link)
		}
	}
	if len(r.Gaps) > 0 {
		fmt.Fprintf(&b, "\nGaps: %s\n", strings.Join(r.Gaps, "; "))
	}
	if r.KeywordOnly != "" {
		fmt.Fprintf(&b, "\nNotes searched by keyword only: %s.\n", r.KeywordOnly)
	}
	return b.String()
}

func (s *Server) logEntry(ctx context.Context, _ *sdk.CallToolRequest, a LogArgs) (*sdk.CallToolResult, LogResult, error) {
	var at time.Time
	if a.Time != "" {
		t, err := query.ParseWhen(a.Time)
		if err != nil {
			return nil, LogResult{}, fmt.Errorf("time %w", err)
		}
		at = t
	}
	if err := s.fresh(ctx); err != nil { // the parser reads the day's entries before it
		return nil, LogResult{}, err
	}
	res, err := s.ws.Query.Log(ctx, a.Text, at, nil)
	if err != nil {
		return nil, LogResult{}, err
	}
	out := LogResult{Type: string(res.Type)}
	if l := res.Logged; l != nil {
		out.Path, out.Heading, out.Parsed = l.Path, l.Heading, l.Parsed
	}
	if res.Type == query.InputBoth {
		res.Transitions = nil
		out.Answer = new(wire.Answer(res))
	}
	return nil, out, nil
}

func (s *Server) proposeEdit(ctx context.Context, req *sdk.CallToolRequest, a EditArgs) (*sdk.CallToolResult, ProposalResult, error) {
	if _, err := s.notePath(a.Path); err != nil {
		return nil, ProposalResult{}, err
	}
	cs, err := s.ws.Changes.ProposeEdit(ctx, clientName(req.Session), changes.EditArgs(a))
	if err != nil {
		return nil, ProposalResult{}, err
	}
	return proposal(cs)
}

func (s *Server) proposeTaskChange(ctx context.Context, req *sdk.CallToolRequest, a TaskChangeArgs) (*sdk.CallToolResult, ProposalResult, error) {
	p, err := s.taskPath(ctx, a.Task)
	if err != nil {
		return nil, ProposalResult{}, err
	}
	cs, err := s.ws.Changes.ProposeTaskChange(ctx, clientName(req.Session), p, a.Field, a.Value, a.Reason)
	if err != nil {
		return nil, ProposalResult{}, err
	}
	return proposal(cs)
}

func proposal(cs changes.ChangeSet) (*sdk.CallToolResult, ProposalResult, error) {
	it := cs.Items[0]
	res := ProposalResult{ChangeSet: cs.ID, File: cs.Path, Item: it.ID, Summary: it.Summary, Status: it.Status,
		Note: fmt.Sprintf("Nothing has changed yet. The person approves it in %s, in their editor, or with `margin approve %s`; list_changes shows the decision.", cs.Path, cs.ID)}
	text := fmt.Sprintf("Proposed (change set %s, item %s): %s\n%s", cs.ID, it.ID, it.Summary, res.Note)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, res, nil
}

func (s *Server) listChanges(ctx context.Context, _ *sdk.CallToolRequest, a ChangesArgs) (*sdk.CallToolResult, ChangesResult, error) {
	status := a.Status
	if status == "open" {
		status = ""
	}
	sets, err := s.ws.Changes.ChangeSets(ctx, changes.ChangeSetFilter{Status: status})
	if err != nil {
		return nil, ChangesResult{}, err
	}
	out := ChangesResult{ChangeSets: []ChangeSet{}}
	for _, cs := range sets {
		c := ChangeSet{ID: cs.ID, ProposedBy: cs.Agent, Task: cs.Task, File: cs.Path, Status: cs.Status, Created: cs.Created, Expires: cs.Expires, Items: []ChangeItem{}}
		for _, it := range cs.Items {
			var args map[string]any
			json.Unmarshal(it.Args, &args) // stored from JSON objects
			c.Items = append(c.Items, ChangeItem{ID: it.ID, Tool: it.Tool, Args: args, Summary: it.Summary, Status: it.Status, Reason: it.Reason, Detail: it.Detail})
		}
		out.ChangeSets = append(out.ChangeSets, c)
	}
	return nil, out, nil
}
