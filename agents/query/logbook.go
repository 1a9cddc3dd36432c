package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// The log side of the flow: PARSE extracts per-domain data, STORE appends
// the raw text to the daily note and keeps the data by (note, entry).

func (e *Engine) stepParse(ctx context.Context, s *Session) (State, string, error) {
	var recent []Entry
	if s.Type == InputCorrection {
		var err error
		if recent, err = e.recentEntries(ctx, s.At); err != nil {
			return "", "", err
		}
	}
	p, err := e.parse(ctx, s, s.active(), s.logText(), recent)
	if err != nil {
		return "", "", err
	}
	s.Parsed = &p
	s.Significant = p.Significant
	return StateStore, fmt.Sprintf("parsed %d domain(s)", len(p.DomainData)), nil
}

func (e *Engine) stepStore(ctx context.Context, s *Session) (State, string, error) {
	correction := s.Type == InputCorrection
	if err := e.appendLog(ctx, s); err != nil {
		return "", "", err
	}
	a := s.Appended
	path, heading, key := a.Path, a.Heading, a.Key
	s.Logged = &Logged{Path: path, Heading: heading, Note: a.Note}
	if s.Parsed == nil {
		s.Logged.Note = joinNotes(a.Note, "stored unparsed: "+s.Degraded)
	} else {
		data, uncertain := checkParsed(*s.Parsed, s.active().Schemas, s.logText())
		s.Logged.Parsed, s.Logged.Uncertain = data, uncertain
		if err := e.saveParsed(ctx, path, key, s.logText(), data, uncertain, ""); err != nil {
			return "", "", err
		}
		if correction {
			if err := e.applyCorrection(ctx, s, path+"#"+key); err != nil {
				return "", "", err
			}
		}
	}
	// The new entry is evidence for the question that came with it, before
	// the watcher has indexed it.
	s.addEntries([]Entry{{Path: path, Heading: heading, Date: s.Today, Correction: correction, Text: s.logText(), Parsed: s.Logged.Parsed}})
	why := "appended to " + path + " as ## " + heading
	switch {
	case s.Degraded != "" && s.Type == InputBoth:
		return StateDegraded, why + " (unparsed); now the question, without a model", nil
	case s.Degraded != "":
		return StateComplete, why + " (unparsed)", nil
	case s.Type == InputBoth:
		return StateBuildContext, why + "; now the question", nil
	}
	return StateObserve, why, nil
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Appended is a log entry as it was appended to its daily note.
type Appended struct {
	Path    string `json:"path"`
	Heading string `json:"heading"`
	// Key is the entry's name in the parsed-data table (see appendEntry).
	Key string `json:"key"`
	// Note says what the user should know about the write, e.g. that the
	// daily template could not be used.
	Note string `json:"note,omitempty"`
}

// logFirst runs a log the user asked for with their words already in the
// daily note, before any model is asked about them.
func (e *Engine) logFirst(ctx context.Context, s *Session, progress Progress) (Result, error) {
	if err := e.appendLog(ctx, s); err != nil {
		return Result{}, err
	}
	res, err := e.finish(ctx, s, progress)
	if err != nil {
		return res, fmt.Errorf("%w (the text is logged in %s under ## %s, unparsed)", err, s.Appended.Path, s.Appended.Heading)
	}
	return res, nil
}

// appendLogged appends the text of an input the Router found logs
// something, before the Parser is asked about it.
func (e *Engine) appendLogged(ctx context.Context, s *Session) error {
	if s.Type == InputQuery {
		return nil
	}
	return e.appendLog(ctx, s)
}

// appendLog appends the session's raw log text to its daily note, once:
// the parser's data is stored afterwards, so a model call that is slow,
// fails or is cancelled never loses what the user wrote. A log appended
// before the Router said it is a correction gets the correction heading
// now, if the entry still reads as margin wrote it.
func (e *Engine) appendLog(ctx context.Context, s *Session) error {
	ctx = s.cause(ctx, "log", roleRouter) // the Router's model, when it has taken the input for a log already
	correction := s.Type == InputCorrection
	if a := s.Appended; a != nil {
		if correction && !strings.HasSuffix(a.Heading, correctionMark) {
			return e.markCorrection(ctx, s)
		}
		return nil
	}
	path, heading, key, note, err := e.appendEntry(ctx, s.At, s.logText(), correction)
	if err != nil {
		return err
	}
	s.Appended = &Appended{Path: path, Heading: heading, Key: key, Note: note}
	return nil
}

const correctionMark = " [correction]"

// markCorrection turns the heading of the entry appendLog wrote into a
// correction heading. An entry the user has changed meanwhile is left as
// it is, with a note: their edit matters more than the heading.
func (e *Engine) markCorrection(ctx context.Context, s *Session) error {
	a := s.Appended
	heading := a.Heading + correctionMark
	var key string
	var marked bool
	first, _, _ := strings.Cut(strings.TrimSpace(s.logText()), "\n")
	first = strings.TrimSpace(first)
	// editNote may run this again on a newer text: what it finds is found anew.
	err := e.editNote(ctx, a.Path, func(cur []byte, exists bool) ([]byte, error) {
		key, marked = heading, false
		if !exists {
			return nil, nil
		}
		eol := "\n"
		if bytes.Contains(cur, []byte("\r\n")) {
			eol = "\r\n"
		}
		// The last entry with this heading is the one appendLog wrote, if
		// its heading line is still as written and the line after it
		// still starts the user's text.
		entries := entriesHeaded(cur, a.Heading)
		if len(entries) == 0 {
			return nil, nil
		}
		i := entries[len(entries)-1].Offset
		end := i + len("## "+a.Heading)
		if !bytes.HasPrefix(cur[i:], []byte("## "+a.Heading+eol)) || !bytes.HasPrefix(cur[end+len(eol):], []byte(first)) {
			return nil, nil
		}
		if n := len(entriesHeaded(cur[:i], heading)); n > 0 {
			key = fmt.Sprintf("%s (%d)", heading, n+1)
		}
		marked = true
		out := append([]byte(nil), cur[:i]...)
		out = append(out, "## "+heading...)
		return append(out, cur[end:]...), nil
	})
	if err != nil {
		return fmt.Errorf("marking the entry in %s a correction: %w", a.Path, err)
	}
	if !marked {
		a.Note = joinNotes(a.Note, "the entry changed before it could be marked a correction, so it keeps its heading")
		return nil
	}
	a.Heading, a.Key = heading, key
	return nil
}

// checkParsed keeps the Parser honest: a domain that was not asked for is
// dropped, data that does not match its domain's log_schema is dropped, and
// any number the text does not contain is removed as invented. Everything
// removed is listed as uncertain, with what the Parser itself was unsure of.
func checkParsed(p ParsedEntry, schemas map[string]json.RawMessage, raw string) (map[string]any, []string) {
	data := map[string]any{}
	// A field named "ok" tells the person nothing.
	uncertain := slices.DeleteFunc(slices.Clone(p.UncertainFields), emptyOfContent)
	numbers := numbersIn(raw)
	for _, dd := range p.DomainData {
		name := dd.Domain
		schema, ok := schemaFor(schemas, name)
		if !ok || len(dd.Data) == 0 {
			continue
		}
		clean := map[string]any{}
		for k, v := range dd.Data {
			if invented(v, numbers) {
				uncertain = append(uncertain, name+"."+k+" (not in the text)")
				continue
			}
			clean[k] = v
		}
		if err := validate(schema, clean); err != nil {
			uncertain = append(uncertain, name+" (does not match the domain's log_schema: "+err.Error()+")")
			continue
		}
		if len(clean) > 0 {
			data[name] = clean
		}
	}
	return data, uncertain
}

func schemaFor(schemas map[string]json.RawMessage, name string) (json.RawMessage, bool) {
	for k, v := range schemas {
		if strings.EqualFold(k, strings.TrimSpace(name)) {
			return v, true
		}
	}
	return nil, false
}

func validate(schema json.RawMessage, data map[string]any) error {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	// Round-trip so the instance has JSON's types (float64, []any).
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return err
	}
	return r.Validate(inst)
}

var numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)

func numbersIn(s string) map[float64]bool {
	out := map[float64]bool{}
	for _, m := range numberRE.FindAllString(s, -1) {
		var f float64
		if _, err := fmt.Sscan(m, &f); err == nil {
			out[f] = true
		}
	}
	return out
}

// invented reports a number (anywhere in v) that the raw text does not
// contain. Words can be normalised by the vocabulary, numbers cannot.
func invented(v any, numbers map[float64]bool) bool {
	switch x := v.(type) {
	case float64:
		return !numbers[x]
	case []any:
		return slices.ContainsFunc(x, func(y any) bool { return invented(y, numbers) })
	case map[string]any:
		for _, y := range x {
			if invented(y, numbers) {
				return true
			}
		}
	}
	return false
}

// appendEntry appends text to the daily note of at as `## HH:MM` (or
// `## HH:MM [correction]`), creating the note from the vault's daily
// template when it does not exist; through the editor when the note is
// open there (see editNote). key is the entry's name in the parsed-data
// table: the heading, numbered when the note already has an entry with
// that heading.
func (e *Engine) appendEntry(ctx context.Context, at time.Time, text string, correction bool) (path, heading, key, note string, err error) {
	path = e.dailyNote(at)
	heading = at.Format("15:04")
	if correction {
		heading += " [correction]"
	}
	// editNote may run this again on a newer text: what it finds is found anew.
	err = e.editNote(ctx, path, func(base []byte, exists bool) ([]byte, error) {
		fromTemplate := false
		note = ""
		if !exists {
			base, note = e.newDailyNote(at)
			fromTemplate = len(base) > 0
			if r := e.v.Rules; !r.DailySettings {
				// margin's default, not the vault's: say where it went,
				// so a new folder of daily notes is no surprise.
				note = joinNotes(note, fmt.Sprintf("a new daily note in %s, where vault.daily_folder and vault.daily_format put daily notes: %s", dailyFolder(r.Daily.Folder), strings.TrimPrefix(r.DailySource, "config: ")))
			}
		}
		key = heading
		n := len(entriesHeaded(base, heading))
		if fromTemplate && n > 0 {
			// The template's own `## {{time}}` entry was just rendered with
			// this very time: the text goes under it, as if the user had
			// opened the new note and typed, rather than into a second
			// entry with the same heading.
			return edit.AppendUnderSection(base, "## "+heading, text)
		}
		if n > 0 {
			key = fmt.Sprintf("%s (%d)", heading, n+1)
		}
		return edit.AppendSection(base, "## "+heading, text)
	})
	if err != nil {
		return "", "", "", "", fmt.Errorf("appending to %s: %w", path, err)
	}
	return path, heading, key, note, nil
}

// dailyNote is the path of at's daily note: the first of its names
// (the format's, then the older formats') that exists, else the format's,
// where a new one goes. A note named in an older format is the day's
// note: a second one beside it would split the day.
func (e *Engine) dailyNote(at time.Time) string {
	paths := e.v.Daily.DailyFormat().Paths(at)
	if len(paths) > 1 {
		for _, p := range paths {
			if _, err := e.v.Files.ReadFile(p); !errors.Is(err, fs.ErrNotExist) {
				return p
			}
		}
	}
	return paths[0]
}

// entriesHeaded are the entries of a daily note headed exactly heading,
// as note's outline finds them: a `## HH:MM` line in a code block is text,
// not an entry.
func entriesHeaded(src []byte, heading string) []note.Section {
	var out []note.Section
	for _, s := range note.ParseOutline(src).Sections {
		if s.Level == 2 && s.Raw == heading {
			out = append(out, s)
		}
	}
	return out
}

func dailyFolder(folder string) string {
	if folder == "" {
		return "the vault root"
	}
	return folder + "/"
}

// newDailyNote is the content of a new daily note: the vault's daily
// template rendered as Obsidian would, or nothing. A template margin
// cannot read (missing, outside the vault, a broken settings file) does
// not stop the log: the note is made without it, and note says why.
func (e *Engine) newDailyNote(at time.Time) (content []byte, note string) {
	tpl, err := e.v.Daily.DailyTemplate()
	if err == nil && tpl != "" {
		var src []byte
		if src, err = e.v.Files.ReadFile(tpl); err == nil {
			title := strings.TrimSuffix(e.v.Daily.DailyFormat().Path(at), ".md")
			if i := strings.LastIndex(title, "/"); i >= 0 {
				title = title[i+1:]
			}
			n := newNote{at: at, created: e.opts.Now(), title: title, locale: e.v.Daily.DailyFormat().Format.Locale()}
			return []byte(renderTemplate(renderTemplater(string(src), n), at, title)), ""
		}
	}
	if err == nil {
		return nil, ""
	}
	e.log.Warn("the daily template cannot be used; the daily note is made without it", "template", tpl, "err", err)
	return nil, "the daily note was made without its template: " + err.Error()
}

var templateVarRE = regexp.MustCompile(`\{\{\s*(date|time|title)(?::([^}]*))?\s*\}\}`)

// renderTemplate fills Obsidian's core template variables: {{date}},
// {{time}}, {{title}} and {{date:FORMAT}} / {{time:FORMAT}} in moment.js
// tokens. A format margin cannot read is left as written.
func renderTemplate(src string, at time.Time, title string) string {
	return templateVarRE.ReplaceAllStringFunc(src, func(m string) string {
		sub := templateVarRE.FindStringSubmatch(m)
		name, format := sub[1], strings.TrimSpace(sub[2])
		if name == "title" {
			return title
		}
		if format == "" {
			format = map[string]string{"date": "YYYY-MM-DD", "time": "HH:mm"}[name]
		}
		out, ok := formatMoment(format, at)
		if !ok {
			return m
		}
		return out
	})
}

// momentTokens are the moment.js tokens templates use, as Go layouts.
// note.Moment covers file names, which have no times; a template has
// {{time:HH:mm}}.
var momentTokens = map[string]string{
	"YYYY": "2006", "YY": "06", "MMMM": "January", "MMM": "Jan", "MM": "01", "M": "1",
	"DD": "02", "D": "2", "dddd": "Monday", "ddd": "Mon",
	"HH": "15", "hh": "03", "h": "3", "mm": "04", "m": "4", "ss": "05", "s": "5", "A": "PM", "a": "pm",
}

// momentLetters are the letters moment.js reads as tokens; other letters
// are literal text.
const momentLetters = "AaDdEeGgHhkLlMmNQSsWwXxYyZz"

// formatMoment formats at with a moment.js format: the tokens above,
// [bracketed] literal text, anything else as written. It is false for a
// format with a token it does not know, or an unclosed bracket.
func formatMoment(format string, at time.Time) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(format); {
		c := format[i]
		switch {
		case c == '[':
			j := strings.IndexByte(format[i+1:], ']')
			if j < 0 {
				return "", false
			}
			b.WriteString(format[i+1 : i+1+j])
			i += j + 2
		case c == 'H' && (i+1 >= len(format) || format[i+1] != 'H'):
			b.WriteString(strconv.Itoa(at.Hour()))
			i++
		case strings.IndexByte(momentLetters, c) >= 0:
			j := i
			for j < len(format) && format[j] == c {
				j++
			}
			layout, ok := momentTokens[format[i:j]]
			if !ok {
				return "", false
			}
			b.WriteString(at.Format(layout))
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), true
}

// recentEntries are the entries a correction most likely targets: the last
// twenty of the week up to at.
func (e *Engine) recentEntries(ctx context.Context, at time.Time) ([]Entry, error) {
	ems, err := e.v.Index.Entries(ctx, at.AddDate(0, 0, -7).Format(time.DateOnly), at.Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("reading recent entries: %w", err)
	}
	ems = ems[max(0, len(ems)-20):]
	out := make([]Entry, 0, len(ems))
	for _, em := range ems {
		out = append(out, Entry{Path: em.Path, Heading: em.Heading, Line: em.Line, Date: em.Date, Correction: em.Correction, Text: em.Text})
	}
	if err := e.attachParsed(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// applyCorrection updates the parsed data of the entry a correction
// targets. The target must be one of the recent entries the Parser was
// shown; a link it made up is not followed.
func (e *Engine) applyCorrection(ctx context.Context, s *Session, by string) error {
	target := strings.TrimSpace(s.Parsed.TargetEntry)
	recent, err := e.recentEntries(ctx, s.At)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recent, func(en Entry) bool { return sameLink(en, target) })
	if i < 0 {
		s.Logged.Note = "could not tell which entry this corrects; the correction is logged, no earlier data was changed"
		return nil
	}
	en := recent[i]
	s.Logged.Corrects = en.Link()
	// A delta may repeat values of the entry it corrects ("3x5" when only
	// the weight changed), so both texts count as its source.
	delta, uncertain := checkParsed(ParsedEntry{DomainData: s.Parsed.CorrectionDelta}, s.active().Schemas, s.logText()+"\n"+en.Text)
	s.Logged.Uncertain = append(s.Logged.Uncertain, uncertain...)
	for domain, d := range delta {
		merged := map[string]any{}
		if old, ok := en.Parsed[domain].(map[string]any); ok {
			for k, v := range old {
				merged[k] = v
			}
		}
		for k, v := range d.(map[string]any) {
			merged[k] = v
		}
		if err := e.saveParsed(ctx, en.Path, en.Heading, en.Text, map[string]any{domain: merged}, nil, by); err != nil {
			return err
		}
	}
	return nil
}

// sameLink matches a model's [[path#heading]] (with or without brackets
// and .md) against an entry.
func sameLink(en Entry, link string) bool {
	p, h, ok := parseLink(link)
	return ok && strings.EqualFold(p, strings.TrimSuffix(en.Path, ".md")) && strings.EqualFold(h, en.Heading)
}

func parseLink(link string) (path, heading string, ok bool) {
	l := strings.TrimSpace(link)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "]]"), "[[")
	if i := strings.Index(l, "|"); i >= 0 {
		l = l[:i]
	}
	path, heading, _ = strings.Cut(l, "#")
	path = strings.TrimSuffix(strings.TrimSpace(path), ".md")
	return path, strings.TrimSpace(heading), path != ""
}

func (e *Engine) saveParsed(ctx context.Context, notePath, entry, raw string, data map[string]any, uncertain []string, correctedBy string) error {
	now := e.opts.Now().UTC().Format(time.RFC3339)
	u, _ := json.Marshal(nonNil(uncertain))
	for domain, d := range data {
		b, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("storing parsed data of %s#%s: %w", notePath, entry, err)
		}
		_, err = e.store.db.ExecContext(ctx, `
			INSERT INTO query_parsed (note, entry, domain, data, uncertain, raw, corrected_by, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (note, entry, domain) DO UPDATE SET data = excluded.data, corrected_by = excluded.corrected_by, updated = excluded.updated,
				uncertain = CASE WHEN excluded.corrected_by = '' THEN excluded.uncertain ELSE uncertain END`,
			notePath, entry, domain, string(b), string(u), raw, correctedBy, now)
		if err != nil {
			return fmt.Errorf("storing parsed data of %s#%s: %w", notePath, entry, err)
		}
	}
	return nil
}

// ParsedData returns the stored data of one entry, by domain.
func (e *Engine) ParsedData(ctx context.Context, notePath, entry string) (map[string]any, error) {
	out := map[string]any{}
	rows, err := e.store.db.QueryContext(ctx, `SELECT domain, data FROM query_parsed WHERE note = ? AND entry = ?`, notePath, entry)
	if err != nil {
		return nil, fmt.Errorf("reading parsed data: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var domain, data string
		if err := rows.Scan(&domain, &data); err != nil {
			return nil, fmt.Errorf("reading parsed data: %w", err)
		}
		var v any
		if json.Unmarshal([]byte(data), &v) == nil {
			out[domain] = v
		}
	}
	return out, rows.Err()
}

// attachParsed gives retrieved entries the data stored for them.
func (e *Engine) attachParsed(ctx context.Context, entries []Entry) error {
	for i := range entries {
		if entries[i].Date == "" {
			continue
		}
		d, err := e.ParsedData(ctx, entries[i].Path, entries[i].Heading)
		if err != nil {
			return err
		}
		if len(d) > 0 {
			entries[i].Parsed = d
		}
	}
	return nil
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}
