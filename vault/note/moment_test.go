package note

import (
	"strings"
	"testing"
	"time"
)

// The formats real vaults use, with one day written in each.
var realFormats = []struct {
	format string
	day    string // 2026-11-22, a Sunday, in this format
	weekly bool   // names a week, not a day
}{
	{"YYYY-MM-DD", "2026-11-22", false},
	{"dddd, MMMM Do YYYY", "Sunday, November 22nd 2026", false},
	{"YYYY/MM-MMMM/YYYY-MM-DD-dddd", "2026/11-November/2026-11-22-Sunday", false},
	{"gggg-[W]ww", "2026-W48", true},
	{"DD.MM.YYYY", "22.11.2026", false},
	{"YYYYMMDD", "20261122", false},
	{"GGGG-[W]WW", "2026-W47", true},
	{"YY-M-D ddd", "26-11-22 Sun", false},
	{"[Q]Q YYYY DDDD dd", "Q4 2026 326 Su", false},
	{"YYYY [day] DDDo, d", "2026 day 326th, 0", false},
}

// TestMomentRoundTrip formats every day of a year in each format and
// parses it back: the same day for a daily format, the same week for a
// weekly one.
func TestMomentRoundTrip(t *testing.T) {
	for _, tt := range realFormats {
		t.Run(tt.format, func(t *testing.T) {
			m, err := ParseMoment(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Format(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)); got != tt.day {
				t.Errorf("Format(2026-11-22) = %q, want %q", got, tt.day)
			}
			for day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() == 2026; day = day.AddDate(0, 0, 1) {
				s := m.Format(day)
				got, ok := m.Parse(s)
				if !ok {
					t.Fatalf("Parse(%q) failed (from %s)", s, day.Format(time.DateOnly))
				}
				if !tt.weekly && !got.Equal(day) {
					t.Fatalf("Parse(%q) = %s, want %s", s, got.Format(time.DateOnly), day.Format(time.DateOnly))
				}
				if back := m.Format(got); back != s {
					t.Fatalf("Format(Parse(%q)) = %q", s, back)
				}
				if up, ok := m.Parse(strings.ToUpper(s)); !ok || !up.Equal(got) {
					t.Fatalf("Parse(%q) = %s, %v; case must not matter", strings.ToUpper(s), up, ok)
				}
			}
		})
	}
}

func TestMomentWeeks(t *testing.T) {
	tests := []struct{ format, day, want string }{
		// Week 1 of the English locale holds January 1: 2027-01-01 is a
		// Friday, so its week began on Sunday 2026-12-27 and is 2027's first.
		{"gggg-[W]ww", "2026-12-27", "2027-W01"},
		{"gggg-[W]ww", "2026-12-26", "2026-W52"},
		// ISO week 1 holds the first Thursday: 2027-01-01 is in 2026-W53.
		{"GGGG-[W]WW", "2027-01-01", "2026-W53"},
		{"GGGG-[W]WW", "2026-12-28", "2026-W53"},
		{"YYYY-MM-DD", "2026-11-22", "2026-11-22"},
	}
	for _, tt := range tests {
		day, _ := time.Parse(time.DateOnly, tt.day)
		if got := MustMoment(tt.format).Format(day); got != tt.want {
			t.Errorf("%s: Format(%s) = %q, want %q", tt.format, tt.day, got, tt.want)
		}
	}
	// A week parses to its first day: Sunday for w, Monday for W.
	for format, want := range map[string]string{"2027-W01": "2026-12-27"} {
		got, ok := MustMoment("gggg-[W]ww").Parse(format)
		if !ok || got.Format(time.DateOnly) != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", format, got, ok, want)
		}
	}
	if got, ok := MustMoment("GGGG-[W]WW").Parse("2026-W53"); !ok || got.Format(time.DateOnly) != "2026-12-28" {
		t.Errorf("Parse(2026-W53) = %s, %v; want the Monday 2026-12-28", got, ok)
	}
}

func TestMomentParseStrict(t *testing.T) {
	tests := []struct{ format, s string }{
		{"YYYY-MM-DD", "2026-02-30"},                         // no such day
		{"YYYY-MM-DD", "2026-1-02"},                          // MM is two digits
		{"dddd, MMMM Do YYYY", "Monday, November 22nd 2026"}, // a Sunday
		{"dddd, MMMM Do YYYY", "Sunday, November 22th 2026"}, // wrong ordinal
		{"YYYY-MM-DD", "2026-11-22 copy"},                    // text after the date
		{"[Daily] YYYY", "Weekly 2026"},                      // literal text differs
		{"gggg-[W]ww", "2026-W54"},                           // no such week
	}
	for _, tt := range tests {
		if got, ok := MustMoment(tt.format).Parse(tt.s); ok {
			t.Errorf("%s: Parse(%q) = %s, want no date", tt.format, tt.s, got.Format(time.DateOnly))
		}
	}
}

func TestParseMomentErrors(t *testing.T) {
	tests := []struct{ format, err string }{
		{"YYYY-MM-DD HH:mm", "token HH is not supported"},
		{"LL", "token LL is not supported"},
		{"YYYY-MM-DD [open", "unclosed ["},
		{"YYYYo", "token YYYYo is not supported"},
		{"", "empty moment format"},
	}
	for _, tt := range tests {
		_, err := ParseMoment(tt.format)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseMoment(%q) = %v, want an error containing %q", tt.format, err, tt.err)
		}
	}
	// Literal text may hold anything, Go layout words and letters included.
	m := MustMoment(`[Q1 Mon] YYYY \W`)
	if got := m.Format(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)); got != "Q1 Mon 2026 W" {
		t.Errorf("Format = %q", got)
	}
}

func TestMomentWithoutWeekday(t *testing.T) {
	for _, tt := range []struct{ format, want string }{
		{"YYYY/MM-MMMM/YYYY-MM-DD-dddd", "YYYY/MM-MMMM/YYYY-MM-DD"},
		{"YYYY-MM-DD ddd", "YYYY-MM-DD"},
		{"dddd, MMMM Do YYYY", "MMMM Do YYYY"},
		{"YYYY/[Week] WW/dddd DD.MM.YYYY", `YYYY/\W\e\e\k WW/DD.MM.YYYY`},
		{"YYYY-MM-DD", ""},      // no weekday to leave out
		{"GGGG-[W]WW-dddd", ""}, // a week and a weekday: without it, no day
		{"dddd YYYY-MM", ""},    // no day of the month
		{"YYYY-DDDD-dd", "YYYY-DDDD"},
	} {
		m, ok := MustMoment(tt.format).WithoutWeekday()
		if got := m.String(); got != tt.want || ok != (tt.want != "") {
			t.Errorf("%q without its weekday: %q, %v; want %q", tt.format, got, ok, tt.want)
			continue
		}
		if !ok {
			continue
		}
		day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
		if back, err := ParseMoment(m.String()); err != nil || back.Format(day) != m.Format(day) {
			t.Errorf("%q does not parse back to itself: %v", m.String(), err)
		}
		if got, ok := m.Parse(m.Format(day)); !ok || !got.Equal(day) {
			t.Errorf("%q reads its own %q as %v, %v", m.String(), m.Format(day), got, ok)
		}
	}
	german, _ := LookupLocale("de")
	if de, ok := MustMoment("YYYY/MM-MMMM/YYYY-MM-DD-dddd").In(german).WithoutWeekday(); !ok || de.Locale() != german || de.Format(time.Date(2023, 5, 11, 0, 0, 0, 0, time.UTC)) != "2023/05-Mai/2023-05-11" {
		t.Errorf("the German format without its weekday: %v %v", de, ok)
	}
}
