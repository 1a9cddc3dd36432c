package note

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// DailyFormat says where daily notes live and how they are named.
type DailyFormat struct {
	Folder string // vault-relative folder, "" for the vault root
	Format Moment // the path below Folder, without ".md"; '/' makes sub-folders
	// Older are formats the folder's earlier daily notes are named in
	// (Format without its weekday, say): those notes are daily notes too,
	// and new ones are named by Format.
	Older []Moment
}

// DefaultDailyFormat is SPEC §3.1's default: Daily/YYYY-MM-DD.md.
func DefaultDailyFormat() DailyFormat {
	return DailyFormat{Folder: "Daily", Format: MustMoment("YYYY-MM-DD")}
}

// Date returns the day (YYYY-MM-DD) of the daily note at the vault path p,
// or false when p is not a daily note. Like Obsidian's strict moment parse,
// the name must format back to itself (up to case), so a wrong weekday or a
// missing leading zero is not a daily note.
func (d DailyFormat) Date(p string) (string, bool) {
	if d.Format.IsZero() || len(p) < 3 || !strings.EqualFold(p[len(p)-3:], ".md") {
		return "", false
	}
	name := p[:len(p)-3]
	if folder := strings.Trim(d.Folder, "/"); folder != "" {
		if !inFolder(name, folder) {
			return "", false
		}
		name = name[len(folder)+1:]
	}
	if t, ok := d.Format.Parse(name); ok {
		return t.Format(time.DateOnly), true
	}
	for _, m := range d.Older {
		if t, ok := m.Parse(name); ok {
			return t.Format(time.DateOnly), true
		}
	}
	return "", false
}

// Path is the vault path of the daily note for day.
func (d DailyFormat) Path(day time.Time) string { return d.path(d.Format, day) }

// Paths are the vault paths the daily note for day may have: Path, then
// its names in the Older formats, which a day's note from before the
// format changed keeps.
func (d DailyFormat) Paths(day time.Time) []string {
	paths := []string{d.Path(day)}
	for _, m := range d.Older {
		paths = append(paths, d.path(m, day))
	}
	return paths
}

func (d DailyFormat) path(m Moment, day time.Time) string {
	name := m.Format(day) + ".md"
	if folder := strings.Trim(d.Folder, "/"); folder != "" {
		return folder + "/" + name
	}
	return name
}

// entries finds the `## HH:MM` sections of a daily note. An entry runs to
// the next heading of level 1 or 2; a deeper heading is part of it.
func (p *scratch) entries() {
	n := p.n
	for i, h := range n.Headings {
		if h.Level != 2 {
			continue
		}
		raw := p.raws[i]
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
		body := min(h.Body, end)
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
