package note

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// taskOf reads the task fields of a task note's frontmatter; tags are its
// frontmatter tags.
func taskOf(fm *Frontmatter, title string, tags []string) *Task {
	t := &Task{
		Title:    title,
		Status:   normalStatus(fm.String("status")),
		Language: strings.TrimSpace(fm.String("language")),
	}
	if v, ok := fm.Get("priority"); ok {
		t.Priority = normalPriority(v)
	}
	if v, ok := fm.Get("due"); ok {
		t.Due = dateValue(v)
	}
	if v, ok := fm.Get("scheduled"); ok {
		t.Scheduled = dateValue(v)
	}
	if v, ok := fm.Get("estimate"); ok {
		t.Estimate = estimateMinutes(v)
	}
	if v, ok := fm.Get("timeEstimate"); ok && t.Estimate == 0 {
		t.Estimate = estimateMinutes(v)
	}
	for _, l := range slices.Concat(tags, fm.Strings("labels")) {
		l = strings.TrimLeft(l, "#")
		if l == "" || strings.EqualFold(l, "task") || containsFold(t.Labels, l) {
			continue
		}
		t.Labels = append(t.Labels, l)
	}
	return t
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// normalStatus lower-cases a status and spells the common variants the way
// SPEC §3.1 does ("In Progress" and "in_progress" are "in-progress",
// "canceled" is "cancelled"); other values are kept.
func normalStatus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = statusSpelling.Replace(s)
	if s == "canceled" {
		return "cancelled"
	}
	return s
}

var statusSpelling = strings.NewReplacer(" ", "-", "_", "-")

// normalPriority maps P0–P3 in any case, 0–3, and the words of Obsidian
// Tasks and TaskNotes onto P0–P3; anything else is kept as written.
func normalPriority(v any) string {
	if n, ok := v.(int); ok && n >= 0 && n <= 3 {
		return "P" + strconv.Itoa(n)
	}
	s := strings.TrimSpace(scalarString(v))
	switch strings.ToLower(s) {
	case "p0", "highest":
		return "P0"
	case "p1", "high":
		return "P1"
	case "p2", "medium", "normal":
		return "P2"
	case "p3", "low":
		return "P3"
	}
	return s
}

// dateValue turns a YAML date, a date string, a timestamp ("2026-11-25T09:00")
// or an Obsidian link to a daily note ("[[2026-11-25]]") into YYYY-MM-DD.
// Anything else gives "".
func dateValue(v any) string {
	switch v := v.(type) {
	case time.Time:
		return v.Format(time.DateOnly)
	case string:
		s := strings.TrimSpace(v)
		if inner, ok := strings.CutPrefix(s, "[["); ok {
			s, _, _ = strings.Cut(strings.TrimSuffix(inner, "]]"), "|")
		}
		if len(s) < 10 || !isDate(s[:10]) || len(s) > 10 && s[10] != 'T' && s[10] != ' ' {
			return ""
		}
		if _, err := time.Parse(time.DateOnly, s[:10]); err != nil {
			return ""
		}
		return s[:10]
	}
	return ""
}

// estimateMinutes reads an estimate: a number of minutes (TaskNotes'
// timeEstimate, or a bare `90`) or a duration such as `90m`, `2h`, `1.5h`,
// `1h30m`, `1h 30m`, `1d` or `1w`. A day is a working day of 8 hours and a
// week 5 of them. Anything unreadable is 0.
func estimateMinutes(v any) int {
	switch v := v.(type) {
	case int:
		return max(v, 0)
	case int64:
		return int(max(v, 0))
	case uint64:
		return int(min(v, math.MaxInt32))
	case float64:
		return int(math.Round(max(v, 0)))
	case string:
		return durationMinutes(v)
	}
	return 0
}

// FormatMinutes writes an estimate in minutes as a person would (2h,
// 1h30m, 45m), in a form estimateMinutes reads back.
func FormatMinutes(m int) string {
	switch {
	case m%60 == 0:
		return fmt.Sprintf("%dh", m/60)
	case m > 60:
		return fmt.Sprintf("%dh%dm", m/60, m%60)
	}
	return fmt.Sprintf("%dm", m)
}

func durationMinutes(s string) int {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0
	}
	total := 0.0
	for parts := 0; s != ""; parts++ {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0
		}
		s = strings.TrimLeft(s[i:], " ")
		j := 0
		for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		unit := s[:j]
		s = strings.TrimLeft(s[j:], " ,")
		switch unit {
		case "":
			if parts > 0 || s != "" {
				return 0 // a bare number is minutes only on its own
			}
			total += n
		case "m", "min", "mins", "minute", "minutes":
			total += n
		case "h", "hr", "hrs", "hour", "hours":
			total += n * 60
		case "d", "day", "days":
			total += n * 8 * 60
		case "w", "wk", "week", "weeks":
			total += n * 5 * 8 * 60
		default:
			return 0
		}
	}
	if total > math.MaxInt32 {
		return 0
	}
	return int(math.Round(total))
}
