package query

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// newNote is what Templater knows about the note it is creating.
type newNote struct {
	at      time.Time    // the moment the note is for: tp.date's "now"
	created time.Time    // when margin creates the file
	title   string       // the file name without ".md"
	locale  *note.Locale // nil: English
}

func (n newNote) lang() *note.Locale {
	if n.locale == nil {
		return note.English
	}
	return n.locale
}

var (
	// templaterTagRE is one Templater command: `<% … %>` outputs an
	// expression, `<%* … %>` runs code; `-` and `_` control whitespace.
	templaterTagRE = regexp.MustCompile(`<%([*]?)[-_]?([\s\S]*?)[-_]?%>`)
	// templaterCallRE is a call of a tp function margin evaluates.
	templaterCallRE = regexp.MustCompile(`^tp\.(date\.now|date\.weekday|date\.yesterday|date\.tomorrow|file\.creation_date)\s*\(([\s\S]*)\)$`)
	// isoDays is an ISO 8601 duration of whole days, weeks, months or
	// years, as Templater's offsets are written ("P-1D", "P1W").
	isoDays = regexp.MustCompile(`^(-?)P(-?\d+)([YMWD])$`)
	// bracketed is a moment format's literal text.
	bracketed = regexp.MustCompile(`\[[^\]]*\]`)
)

// Sentinels mark where a command was, until whole lines are judged.
const (
	codeMark   = "\x00code\x00"
	unknownRun = "\x00unknown\x00"
)

// renderTemplater evaluates the Templater commands margin can without
// running JavaScript (SPEC §3.1): tp.file.title, tp.file.creation_date,
// tp.date.now with its format, offset and reference date, tp.date.weekday,
// tp.date.yesterday / tomorrow, and moment(…) moved by add and subtract
// and written by format. The rest is code margin does not run: a
// line that holds a command margin cannot evaluate is left out whole, so
// the note has no empty property and no link to nowhere, and says nothing
// false; a line of code alone goes with its line.
func renderTemplater(src string, n newNote) string {
	if !strings.Contains(src, "<%") {
		return src
	}
	out := templaterTagRE.ReplaceAllStringFunc(src, func(tag string) string {
		m := templaterTagRE.FindStringSubmatch(tag)
		if m[1] == "*" {
			return codeMark
		}
		v, ok := n.eval(m[2])
		if !ok {
			return unknownRun
		}
		return v
	})
	lines := strings.SplitAfter(out, "\n")
	var b strings.Builder
	for _, line := range lines {
		if strings.Contains(line, unknownRun) {
			continue
		}
		if strings.Contains(line, codeMark) {
			line = strings.ReplaceAll(line, codeMark, "")
			if strings.TrimSpace(line) == "" {
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// eval is the value of one output command, or false when margin cannot
// know it.
func (n newNote) eval(expr string) (string, bool) {
	expr = strings.TrimSuffix(strings.TrimSpace(expr), ";")
	expr = strings.TrimSpace(expr)
	if expr == "tp.file.title" {
		return n.title, true
	}
	if chain, ok := strings.CutPrefix(expr, "moment("); ok {
		return n.evalMoment(chain)
	}
	m := templaterCallRE.FindStringSubmatch(expr)
	if m == nil {
		return "", false
	}
	args, ok := n.args(m[2])
	if !ok {
		return "", false
	}
	str := func(i int, def string) (string, bool) {
		if i >= len(args) {
			return def, true
		}
		s, ok := args[i].(string)
		return s, ok
	}
	switch m[1] {
	case "file.creation_date":
		format, ok := str(0, "YYYY-MM-DD HH:mm")
		if !ok || len(args) > 1 {
			return "", false
		}
		return n.format(format, n.created)
	case "date.yesterday", "date.tomorrow":
		format, ok := str(0, "YYYY-MM-DD")
		if !ok || len(args) > 1 {
			return "", false
		}
		days := map[string]int{"date.yesterday": -1, "date.tomorrow": 1}[m[1]]
		return n.format(format, n.at.AddDate(0, 0, days))
	}
	// tp.date.now(format, offset, reference, reference_format) and
	// tp.date.weekday(format, weekday, reference, reference_format)
	format, ok := str(0, "YYYY-MM-DD")
	if !ok || len(args) > 4 || m[1] == "date.weekday" && len(args) < 2 {
		return "", false
	}
	day := n.at
	if len(args) > 2 {
		if day, ok = n.dayOf(args, 2); !ok {
			return "", false
		}
	}
	switch {
	case m[1] == "date.weekday":
		// moment's weekday(k): day k of the locale's week, 0 its first.
		k, isInt := args[1].(int)
		if !isInt {
			return "", false
		}
		first := int(n.lang().FirstWeekday())
		day = day.AddDate(0, 0, -((int(day.Weekday())-first+7)%7)+k)
	case len(args) > 1:
		if day, ok = offset(day, args[1]); !ok {
			return "", false
		}
	}
	return n.format(format, day)
}

// evalMoment is the value of moment(…) and the calls chained to it,
// chain being the text after "moment(": its arguments (none for the
// moment the note is for, or a date and its format, the title's most
// often), any number of add(k, unit) and subtract(k, unit), and a last
// format(f). Templater's daily templates write the days around a note's
// so: moment(tp.file.title, "YYYY-MM-DD").subtract(1, "d").format(…).
func (n newNote) evalMoment(chain string) (string, bool) {
	call, chain, ok := cutCall(chain)
	if !ok {
		return "", false
	}
	args, ok := n.args(call)
	if !ok || len(args) > 2 {
		return "", false
	}
	day := n.at
	if len(args) > 0 {
		if day, ok = n.dayOf(args, 0); !ok {
			return "", false
		}
	}
	for {
		name, rest, ok := strings.Cut(chain, "(")
		if !ok {
			return "", false // no format: moment's own string, not a date a person writes
		}
		if call, chain, ok = cutCall(rest); !ok {
			return "", false
		}
		args, ok := n.args(call)
		if !ok {
			return "", false
		}
		switch strings.TrimSpace(name) {
		case ".add", ".subtract":
			if len(args) != 2 {
				return "", false
			}
			k, isInt := args[0].(int)
			unit, isUnit := args[1].(string)
			if !isInt || !isUnit {
				return "", false
			}
			if name == ".subtract" {
				k = -k
			}
			if day, ok = addUnits(day, k, unit); !ok {
				return "", false
			}
		case ".format":
			if len(args) != 1 || strings.TrimSpace(chain) != "" {
				return "", false
			}
			format, isString := args[0].(string)
			if !isString {
				return "", false
			}
			return n.format(format, day)
		default:
			return "", false
		}
	}
}

// dayOf reads a reference date as Templater and moment take it: args[i],
// in the format args[i+1] (YYYY-MM-DD without one), in the vault's
// language.
func (n newNote) dayOf(args []any, i int) (time.Time, bool) {
	ref, isRef := args[i].(string)
	format, isFormat := "YYYY-MM-DD", true
	if i+1 < len(args) {
		format, isFormat = args[i+1].(string)
	}
	m, err := note.ParseMoment(format)
	if !isRef || !isFormat || err != nil {
		return time.Time{}, false
	}
	return m.In(n.lang()).Parse(ref)
}

// cutCall cuts a call's arguments, up to its closing parenthesis, from
// the text after its opening one; quoted text may hold parentheses.
func cutCall(s string) (args, rest string, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			end := strings.IndexByte(s[i+1:], c)
			if end < 0 {
				return "", "", false
			}
			i += end + 1
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return s[:i], s[i+1:], true
			}
			depth--
		}
	}
	return "", "", false
}

// addUnits moves day by k of moment's unit: years, months, weeks or days,
// by their names or their keys (y, M, w, d).
func addUnits(day time.Time, k int, unit string) (time.Time, bool) {
	switch strings.TrimSuffix(unit, "s") {
	case "y", "year":
		return day.AddDate(k, 0, 0), true
	case "M", "month":
		return day.AddDate(0, k, 0), true
	case "w", "week":
		return day.AddDate(0, 0, 7*k), true
	case "d", "day":
		return day.AddDate(0, 0, k), true
	}
	return day, false
}

// args reads a call's arguments: string literals, whole numbers and
// tp.file.title. Anything else (a variable, an expression) is false.
func (n newNote) args(s string) ([]any, bool) {
	var out []any
	s = strings.TrimSpace(s)
	for s != "" {
		var arg any
		switch q := s[0]; {
		case q == '"' || q == '\'' || q == '`':
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return nil, false
			}
			lit := s[1 : 1+end]
			if strings.Contains(lit, `\`) || q == '`' && strings.Contains(lit, "${") {
				return nil, false
			}
			arg, s = lit, s[end+2:]
		case strings.HasPrefix(s, "tp.file.title"):
			arg, s = n.title, s[len("tp.file.title"):]
		default:
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			v, err := strconv.Atoi(strings.TrimSpace(s[:end]))
			if err != nil {
				return nil, false
			}
			arg, s = v, s[end:]
		}
		out = append(out, arg)
		s = strings.TrimSpace(s)
		if s == "" {
			break
		}
		if s[0] != ',' {
			return nil, false
		}
		s = strings.TrimSpace(s[1:])
	}
	return out, true
}

// offset moves day by Templater's offset: days as a number, or an ISO
// 8601 duration string.
func offset(day time.Time, by any) (time.Time, bool) {
	switch v := by.(type) {
	case int:
		return day.AddDate(0, 0, v), true
	case string:
		m := isoDays.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(v)))
		if m == nil {
			return day, false
		}
		k, _ := strconv.Atoi(m[2])
		if m[1] == "-" {
			k = -k
		}
		switch m[3] {
		case "Y":
			return day.AddDate(k, 0, 0), true
		case "M":
			return day.AddDate(0, k, 0), true
		case "W":
			return day.AddDate(0, 0, 7*k), true
		}
		return day.AddDate(0, 0, k), true
	}
	return day, false
}

// format writes t in a moment.js format in the vault's language. A date
// format goes through note.Moment, which knows every date token in every
// locale; one with a time goes through formatMoment, which writes names
// only in English and so is refused for another language's names.
func (n newNote) format(format string, t time.Time) (string, bool) {
	if m, err := note.ParseMoment(format); err == nil {
		return m.In(n.lang()).Format(t), true
	}
	if n.lang() != note.English && namesIn(format) {
		return "", false
	}
	return formatMoment(format, t)
}

// namesIn reports whether a moment format writes a month or weekday name.
func namesIn(format string) bool {
	unbracketed := bracketed.ReplaceAllString(format, "")
	return strings.Contains(unbracketed, "MMM") || strings.Contains(unbracketed, "ddd")
}
