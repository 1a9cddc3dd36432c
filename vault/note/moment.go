package note

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Moment is a compiled moment.js date format, as Obsidian's daily-notes
// settings hold it: the tokens of SPEC §3.1 (YYYY YY gggg GGGG Q M MM MMM
// MMMM D DD Do DDD DDDD d dd ddd dddd w ww W WW, and the ordinal "o" after
// any number), literal text in [brackets] or after a backslash, and any
// other character as written ('/' makes sub-folders). Names, ordinals and
// the weeks of w and gggg are its locale's (English unless In says
// otherwise: Sunday first, week 1 holds January 1); W and GGGG are ISO
// weeks. The zero Moment formats nothing and parses nothing.
type Moment struct {
	src    string
	pieces []momentPiece
	loc    *Locale // nil: English
}

// momentPiece is a token (tok) or literal text (lit).
type momentPiece struct{ tok, lit string }

// momentTokens are the tokens a date-only format can use; "o" may follow
// the numeric ones.
var momentTokens = map[string]bool{
	"YYYY": true, "YY": true, "gggg": true, "GGGG": true, "Q": true,
	"M": true, "MM": true, "MMM": true, "MMMM": true,
	"D": true, "DD": true, "DDD": true, "DDDD": true,
	"d": true, "dd": true, "ddd": true, "dddd": true,
	"w": true, "ww": true, "W": true, "WW": true,
}

// ordinals are the numeric tokens "o" may follow.
var ordinals = map[string]bool{"Q": true, "M": true, "D": true, "DDD": true, "d": true, "w": true, "W": true}

// momentLetters are the letters moment.js reads as tokens; other letters are
// literal text.
const momentLetters = "AaDdEeGgHhkLlMmNQSsWwXxYyZz"

// ParseMoment compiles a moment.js format. A token margin does not read (a
// time, a timezone, a locale format such as LL) is an error that names it.
func ParseMoment(format string) (Moment, error) {
	if strings.TrimSpace(format) == "" {
		return Moment{}, errors.New("empty moment format")
	}
	m := Moment{src: format}
	lit := func(s string) {
		if n := len(m.pieces); n > 0 && m.pieces[n-1].tok == "" {
			m.pieces[n-1].lit += s
			return
		}
		m.pieces = append(m.pieces, momentPiece{lit: s})
	}
	for i := 0; i < len(format); {
		c := format[i]
		switch {
		case c == '[':
			j := strings.IndexByte(format[i+1:], ']')
			if j < 0 {
				return Moment{}, fmt.Errorf("moment format %q: unclosed [", format)
			}
			lit(format[i+1 : i+1+j])
			i += j + 2
		case c == '\\' && i+1 < len(format):
			lit(format[i+1 : i+2])
			i += 2
		case strings.IndexByte(momentLetters, c) >= 0:
			j := i
			for j < len(format) && format[j] == c {
				j++
			}
			tok := format[i:j]
			if j < len(format) && format[j] == 'o' {
				if !ordinals[tok] {
					return Moment{}, fmt.Errorf("moment format %q: token %so is not supported", format, tok)
				}
				tok += "o"
				j++
			} else if !momentTokens[tok] {
				return Moment{}, fmt.Errorf("moment format %q: token %s is not supported (margin reads dates, not times)", format, tok)
			}
			m.pieces = append(m.pieces, momentPiece{tok: tok})
			i = j
		default:
			lit(format[i : i+1])
			i++
		}
	}
	return m, nil
}

// MustMoment is ParseMoment for formats known to be good.
func MustMoment(format string) Moment {
	m, err := ParseMoment(format)
	if err != nil {
		panic(err)
	}
	return m
}

// String is the format as written.
func (m Moment) String() string { return m.src }

// In is m writing and reading dates in the locale l.
func (m Moment) In(l *Locale) Moment {
	m.loc = l
	return m
}

// Locale is the locale m writes dates in.
func (m Moment) Locale() *Locale {
	if m.loc == nil {
		return English
	}
	return m.loc
}

// Localized reports whether m writes anything its locale decides: a name,
// an ordinal or a locale week.
func (m Moment) Localized() bool {
	for _, p := range m.pieces {
		switch {
		case strings.HasSuffix(p.tok, "o"), strings.HasPrefix(p.tok, "MMM"), strings.HasPrefix(p.tok, "dd"),
			p.tok == "w", p.tok == "ww", p.tok == "gggg":
			return true
		}
	}
	return false
}

// WithoutWeekday is m with its weekday names and numbers left out, with
// the separator before each: the format a person often named daily notes
// in before adding the weekday ("YYYY-MM-DD" under "YYYY-MM-DD-dddd").
// It is false when m writes no weekday, or when the rest would not name a
// day of a year.
func (m Moment) WithoutWeekday() (Moment, bool) {
	out := Moment{loc: m.loc}
	var src strings.Builder
	dropped, year, month, day := false, false, false, false
	// A weekday that starts a name ("dddd, MMMM D YYYY") takes the
	// separator after it; any other takes the one before it.
	first := true
	for _, p := range m.pieces {
		tok, _ := strings.CutSuffix(p.tok, "o")
		switch tok {
		case "":
			if first && dropped {
				p.lit = strings.TrimLeft(p.lit, " -_.,")
			}
			if p.lit != "" {
				out.pieces = append(out.pieces, p)
			}
			first = strings.HasSuffix(p.lit, "/") || first && p.lit == ""
			continue
		case "d", "dd", "ddd", "dddd":
			dropped = true
			if n := len(out.pieces); !first && n > 0 && out.pieces[n-1].tok == "" {
				out.pieces[n-1].lit = strings.TrimRight(out.pieces[n-1].lit, " -_.,")
				if out.pieces[n-1].lit == "" {
					out.pieces = out.pieces[:n-1]
				}
			}
			continue
		case "YYYY":
			year = true
		case "M", "MM", "MMM", "MMMM":
			month = true
		case "D", "DD":
			day = true
		case "DDDD", "DDD":
			month, day = true, true
		}
		out.pieces = append(out.pieces, p)
		first = false
	}
	if !dropped || !year || !month || !day {
		return Moment{}, false
	}
	for _, p := range out.pieces {
		src.WriteString(p.tok)
		for _, c := range p.lit {
			if strings.ContainsRune(momentLetters+"[\\", c) {
				src.WriteByte('\\')
			}
			src.WriteRune(c)
		}
	}
	out.src = src.String()
	return out, true
}

// IsZero reports whether m is the zero Moment.
func (m Moment) IsZero() bool { return len(m.pieces) == 0 }

// Format writes day as moment.js would.
func (m Moment) Format(day time.Time) string {
	loc := m.Locale()
	var b strings.Builder
	for _, p := range m.pieces {
		if p.tok == "" {
			b.WriteString(p.lit)
			continue
		}
		tok, ord := strings.CutSuffix(p.tok, "o")
		switch tok {
		case "YYYY":
			writePadded(&b, day.Year(), 4)
		case "YY":
			writePadded(&b, day.Year()%100, 2)
		case "gggg":
			y, _ := loc.week(day)
			writePadded(&b, y, 4)
		case "GGGG":
			y, _ := day.ISOWeek()
			writePadded(&b, y, 4)
		case "MMMM", "MMM":
			b.WriteString(loc.names(tok, m.src)[day.Month()-1])
		case "dddd", "ddd", "dd":
			b.WriteString(loc.names(tok, m.src)[day.Weekday()])
		default:
			n, width := number(loc, tok, day)
			writePadded(&b, n, width)
			if ord {
				b.WriteString(loc.ordinal(n, tok))
			}
		}
	}
	return b.String()
}

// writePadded writes n zero-padded to width digits. Names in the daily
// folder are each formatted back once when read, so this stays off fmt.
func writePadded(b *strings.Builder, n, width int) {
	var buf [20]byte
	digits := strconv.AppendInt(buf[:0], int64(n), 10)
	for i := len(digits); i < width; i++ {
		b.WriteByte('0')
	}
	b.Write(digits)
}

// number is the value of a numeric token for day and its zero-padded width.
func number(loc *Locale, tok string, day time.Time) (n, width int) {
	switch tok {
	case "Q":
		return (int(day.Month())-1)/3 + 1, 1
	case "M":
		return int(day.Month()), 1
	case "MM":
		return int(day.Month()), 2
	case "D":
		return day.Day(), 1
	case "DD":
		return day.Day(), 2
	case "DDD":
		return day.YearDay(), 1
	case "DDDD":
		return day.YearDay(), 3
	case "d":
		return int(day.Weekday()), 1
	case "w", "ww":
		_, w := loc.week(day)
		return w, len(tok)
	case "W", "WW":
		_, w := day.ISOWeek()
		return w, len(tok)
	}
	return 0, 0
}

func ordinalSuffix(n int) string {
	if n%100 >= 11 && n%100 <= 13 {
		return "th"
	}
	switch n % 10 {
	case 1:
		return "st"
	case 2:
		return "nd"
	case 3:
		return "rd"
	}
	return "th"
}

// week is moment's locale week of day: weeks start on l.dow, and week 1
// holds January 7+dow-doy, so a week's year is the year of its day
// doy-dow after its first (English: Saturday; ISO: Thursday).
func (l *Locale) week(day time.Time) (year, week int) {
	anchor := day.AddDate(0, 0, -((int(day.Weekday())-l.dow+7)%7)+l.doy-l.dow)
	return anchor.Year(), (anchor.YearDay()-1)/7 + 1
}

// firstWeek is the first day of week 1 of the locale week-year y.
func (l *Locale) firstWeek(y int) time.Time {
	// The week whose anchor day (see week) is among January 1–7.
	start := time.Date(y, time.January, 1-(l.doy-l.dow), 0, 0, 0, 0, time.UTC)
	return start.AddDate(0, 0, (l.dow-int(start.Weekday())+7)%7)
}

// Parse reads s as a date in this format. Like Obsidian's strict moment
// parse, s must format back to itself (up to case): a wrong weekday, a
// missing leading zero or a 30 February is not a date. Fields the format
// lacks take their first value (a month format gives the 1st, a week
// format the week's first day).
func (m Moment) Parse(s string) (time.Time, bool) {
	if m.IsZero() {
		return time.Time{}, false
	}
	f := fields{loc: m.Locale(), src: m.src, year: -1, weekYear: -1, isoYear: -1, quarter: -1, month: -1, day: -1, yearDay: -1, weekday: -1, week: -1, isoWeek: -1}
	rest := s
	for _, p := range m.pieces {
		if p.tok == "" {
			if len(rest) < len(p.lit) || !strings.EqualFold(rest[:len(p.lit)], p.lit) {
				return time.Time{}, false
			}
			rest = rest[len(p.lit):]
			continue
		}
		var ok bool
		if rest, ok = f.read(p.tok, rest); !ok {
			return time.Time{}, false
		}
	}
	if rest != "" {
		return time.Time{}, false
	}
	day, ok := f.date()
	if !ok || !strings.EqualFold(m.Format(day), s) {
		return time.Time{}, false
	}
	return day, true
}

// fields are what a parse read, in the locale loc of the format src; -1
// is unset.
type fields struct {
	loc                                                                           *Locale
	src                                                                           string
	year, weekYear, isoYear, quarter, month, day, yearDay, weekday, week, isoWeek int
}

// read consumes one token's text from s.
func (f *fields) read(tok, s string) (string, bool) {
	tok, ord := strings.CutSuffix(tok, "o")
	// The longest name that s starts with: one name may begin another
	// ("1월", "10월" do not, but a locale's names are not known here).
	name := func(names []string) (int, string, bool) {
		best := -1
		for i, t := range names {
			if len(s) >= len(t) && strings.EqualFold(s[:len(t)], t) && (best < 0 || len(t) > len(names[best])) {
				best = i
			}
		}
		if best < 0 {
			return 0, s, false
		}
		return best, s[len(names[best]):], true
	}
	var (
		v  int
		ok bool
	)
	switch tok {
	case "MMMM", "MMM":
		v, s, ok = name(f.loc.names(tok, f.src))
		f.month = v + 1
		return s, ok
	case "dddd", "ddd", "dd":
		v, s, ok = name(f.loc.names(tok, f.src))
		f.weekday = v
		return s, ok
	}
	maxDigits := 2
	switch tok {
	case "YYYY", "gggg", "GGGG":
		maxDigits = 4
	case "DDD", "DDDD":
		maxDigits = 3
	case "Q", "d":
		maxDigits = 1
	}
	n := 0
	for n < len(s) && n < maxDigits && isDigit(s[n]) {
		n++
	}
	if n == 0 {
		return s, false
	}
	v, _ = strconv.Atoi(s[:n])
	s = s[n:]
	if ord {
		suffix := f.loc.ordinal(v, tok)
		if len(s) < len(suffix) || !strings.EqualFold(s[:len(suffix)], suffix) {
			return s, false
		}
		s = s[len(suffix):]
	}
	switch tok {
	case "YYYY":
		f.year = v
	case "YY":
		// moment: 69–99 are the 1900s, 00–68 the 2000s.
		if v > 68 {
			f.year = 1900 + v
		} else {
			f.year = 2000 + v
		}
	case "gggg":
		f.weekYear = v
	case "GGGG":
		f.isoYear = v
	case "Q":
		f.quarter = v
	case "M", "MM":
		f.month = v
	case "D", "DD":
		f.day = v
	case "DDD", "DDDD":
		f.yearDay = v
	case "d":
		f.weekday = v
	case "w", "ww":
		f.week = v
	case "W", "WW":
		f.isoWeek = v
	}
	return s, true
}

// date builds the day the fields name, or false when they name none.
func (f *fields) date() (time.Time, bool) {
	year := func(alts ...int) int {
		for _, y := range alts {
			if y >= 0 {
				return y
			}
		}
		return -1
	}
	// A calendar day names the day whatever weeks the name also holds
	// (Parse checks they agree); weeks alone need their weekday.
	switch {
	case f.year >= 0 && f.month >= 0 && f.day >= 0:
		return time.Date(f.year, time.Month(f.month), f.day, 0, 0, 0, 0, time.UTC), true
	case f.isoWeek >= 0:
		y := year(f.isoYear, f.year, f.weekYear)
		if y < 0 {
			return time.Time{}, false
		}
		jan4 := time.Date(y, time.January, 4, 0, 0, 0, 0, time.UTC)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
		day := monday.AddDate(0, 0, 7*(f.isoWeek-1))
		if f.weekday >= 0 {
			day = day.AddDate(0, 0, (f.weekday+6)%7)
		}
		return day, true
	case f.week >= 0:
		y := year(f.weekYear, f.year, f.isoYear)
		if y < 0 {
			return time.Time{}, false
		}
		day := f.loc.firstWeek(y).AddDate(0, 0, 7*(f.week-1))
		if f.weekday >= 0 {
			day = day.AddDate(0, 0, (f.weekday-f.loc.dow+7)%7)
		}
		return day, true
	}
	y := year(f.year, f.weekYear, f.isoYear)
	if y < 0 {
		return time.Time{}, false
	}
	if f.yearDay >= 0 {
		return time.Date(y, time.January, f.yearDay, 0, 0, 0, 0, time.UTC), true
	}
	month := f.month
	if month < 0 && f.quarter >= 0 {
		month = (f.quarter-1)*3 + 1
	}
	return time.Date(y, time.Month(max(month, 1)), max(f.day, 1), 0, 0, 0, 0, time.UTC), true
}
