package note

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DailyFormat says where daily notes live and how they are named.
type DailyFormat struct {
	Folder string // vault-relative folder, "" for the vault root
	Layout string // Go time layout of the path below Folder, without ".md"; '/' makes sub-folders
}

// DefaultDailyFormat is SPEC §3.1's default: Daily/YYYY-MM-DD.md.
func DefaultDailyFormat() DailyFormat {
	return DailyFormat{Folder: "Daily", Layout: time.DateOnly}
}

// Date returns the day (YYYY-MM-DD) of the daily note at the vault path p,
// or false when p is not a daily note. Like Obsidian's strict moment parse,
// the name must format back to itself (up to case), so a wrong weekday or a
// missing leading zero is not a daily note.
func (d DailyFormat) Date(p string) (string, bool) {
	if d.Layout == "" || len(p) < 3 || !strings.EqualFold(p[len(p)-3:], ".md") {
		return "", false
	}
	name := p[:len(p)-3]
	if folder := strings.Trim(d.Folder, "/"); folder != "" {
		if !inFolder(name, folder) {
			return "", false
		}
		name = name[len(folder)+1:]
	}
	t, err := time.Parse(d.Layout, name)
	if err != nil || !strings.EqualFold(t.Format(d.Layout), name) {
		return "", false
	}
	return t.Format(time.DateOnly), true
}

// Path is the vault path of the daily note for day.
func (d DailyFormat) Path(day time.Time) string {
	name := day.Format(d.Layout) + ".md"
	if folder := strings.Trim(d.Folder, "/"); folder != "" {
		return folder + "/" + name
	}
	return name
}

// ParseObsidianDailyNotes reads `.obsidian/daily-notes.json`. Absent fields
// come back empty (an empty file too); the defaults are the caller's. The
// folder is returned without leading or trailing slashes.
func ParseObsidianDailyNotes(data []byte) (folder, format string, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "", "", nil
	}
	var cfg struct {
		Folder string `json:"folder"`
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", fmt.Errorf("parsing daily-notes.json: %w", err)
	}
	return strings.Trim(strings.TrimSpace(cfg.Folder), "/"), strings.TrimSpace(cfg.Format), nil
}

// momentPiece is a moment.js format token (tok) or literal text (lit).
type momentPiece struct{ tok, lit string }

// momentLayouts are the moment.js tokens a daily-note name can use.
var momentLayouts = map[string]string{
	"YYYY": "2006", "YY": "06",
	"MMMM": "January", "MMM": "Jan", "MM": "01", "M": "1",
	"DD": "02", "D": "2",
	"dddd": "Monday", "ddd": "Mon",
}

// momentLetters are the letters moment.js reads as tokens; other letters are
// literal text.
const momentLetters = "AaDdEeGgHhkLlMmNQSsWwXxYyZz"

// MomentToGoLayout converts a moment.js date format, as Obsidian's daily-notes
// settings hold it, to a Go time layout. It takes YYYY, YY, MMMM, MMM, MM, M,
// DD, D, dddd, ddd, literal text in [brackets] and '/' for sub-folders; other
// tokens (ordinals such as Do, weeks, times) are an error. Go layouts cannot
// escape text, so literal text that Go would read as a layout element
// ("[Q1]", "[Mon]") is an error too.
func MomentToGoLayout(moment string) (string, error) {
	if moment == "" {
		return "", errors.New("empty moment format")
	}
	var pieces []momentPiece
	for i := 0; i < len(moment); {
		c := moment[i]
		switch {
		case c == '[':
			j := strings.IndexByte(moment[i+1:], ']')
			if j < 0 {
				return "", fmt.Errorf("moment format %q: unclosed [", moment)
			}
			pieces = append(pieces, momentPiece{lit: moment[i+1 : i+1+j]})
			i += j + 2
		case c == '\\' && i+1 < len(moment):
			pieces = append(pieces, momentPiece{lit: moment[i+1 : i+2]})
			i += 2
		case strings.IndexByte(momentLetters, c) >= 0:
			j := i
			for j < len(moment) && moment[j] == c {
				j++
			}
			tok := moment[i:j]
			if _, ok := momentLayouts[tok]; !ok || j < len(moment) && moment[j] == 'o' {
				if j < len(moment) && moment[j] == 'o' {
					tok += "o"
				}
				return "", fmt.Errorf("moment format %q: token %s is not supported", moment, tok)
			}
			pieces = append(pieces, momentPiece{tok: tok})
			i = j
		default:
			pieces = append(pieces, momentPiece{lit: moment[i : i+1]})
			i++
		}
	}
	var b strings.Builder
	for _, p := range pieces {
		if p.tok != "" {
			b.WriteString(momentLayouts[p.tok])
		} else {
			b.WriteString(p.lit)
		}
	}
	layout := b.String()
	// Two days that differ in every field catch literal text Go would read.
	for _, day := range []time.Time{
		time.Date(2026, time.November, 22, 0, 0, 0, 0, time.UTC),
		time.Date(2009, time.July, 5, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := day.Format(layout), renderMoment(pieces, day); got != want {
			return "", fmt.Errorf("moment format %q: its literal text cannot be written as a Go layout (%q formats as %q, not %q)", moment, layout, got, want)
		}
	}
	return layout, nil
}

// renderMoment formats day as moment.js would, for the supported tokens.
func renderMoment(pieces []momentPiece, day time.Time) string {
	var b strings.Builder
	for _, p := range pieces {
		switch p.tok {
		case "":
			b.WriteString(p.lit)
		case "YYYY":
			fmt.Fprintf(&b, "%04d", day.Year())
		case "YY":
			fmt.Fprintf(&b, "%02d", day.Year()%100)
		case "MMMM":
			b.WriteString(day.Month().String())
		case "MMM":
			b.WriteString(day.Month().String()[:3])
		case "MM":
			fmt.Fprintf(&b, "%02d", int(day.Month()))
		case "M":
			b.WriteString(strconv.Itoa(int(day.Month())))
		case "DD":
			fmt.Fprintf(&b, "%02d", day.Day())
		case "D":
			b.WriteString(strconv.Itoa(day.Day()))
		case "dddd":
			b.WriteString(day.Weekday().String())
		case "ddd":
			b.WriteString(day.Weekday().String()[:3])
		}
	}
	return b.String()
}

// entries finds the `## HH:MM` sections of a daily note. An entry runs to
// the next heading of level 1 or 2; a deeper heading is part of it.
func (p *scratch) entries() {
	n := p.n
	for i, h := range n.Headings {
		if h.Level != 2 {
			continue
		}
		raw := p.heads[i].raw
		hm, correction, ok := entryTime(raw)
		if !ok {
			continue
		}
		end := len(p.s)
		for _, next := range n.Headings[i+1:] {
			if next.Level <= 2 {
				end = next.Offset
				break
			}
		}
		body := min(p.heads[i].body, end)
		n.Entries = append(n.Entries, Entry{
			Time:       hm,
			Correction: correction,
			Heading:    raw,
			Line:       h.Line,
			Start:      h.Offset,
			End:        end,
			Text:       strings.TrimSpace(p.s[body:end]),
			Links:      linksIn(n.Links, h.Offset, end),
		})
	}
}

// entryTime reads "HH:MM" or "H:MM" at the start of an entry heading,
// optionally followed by text; "[correction]" right after the time marks a
// correction.
func entryTime(raw string) (hm string, correction, ok bool) {
	i := 0
	for i < len(raw) && i < 2 && raw[i] >= '0' && raw[i] <= '9' {
		i++
	}
	if i == 0 || len(raw) < i+3 || raw[i] != ':' || !isDigit(raw[i+1]) || !isDigit(raw[i+2]) {
		return "", false, false
	}
	hour, _ := strconv.Atoi(raw[:i])
	minute, _ := strconv.Atoi(raw[i+1 : i+3])
	rest := raw[i+3:]
	if hour > 23 || minute > 59 || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false, false
	}
	hm = raw[:i+3]
	if i == 1 {
		hm = "0" + hm
	}
	rest = strings.TrimSpace(rest)
	const mark = "[correction]"
	correction = len(rest) >= len(mark) && strings.EqualFold(rest[:len(mark)], mark)
	return hm, correction, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// linksIn is the part of the offset-sorted links that starts in [start,end),
// capped so that appending to it cannot overwrite the links after it.
func linksIn(links []Link, start, end int) []Link {
	i, _ := slices.BinarySearchFunc(links, start, func(l Link, off int) int { return l.Offset - off })
	j := i
	for j < len(links) && links[j].Offset < end {
		j++
	}
	if i == j {
		return nil
	}
	return links[i:j:j]
}
