package note

import (
	"strings"
	"testing"
	"time"
)

// localeFormats are formats that write every locale-dependent token; each
// names one day, so a parse must give back that day.
var localeFormats = []string{
	"YYYY/MMM/YYYY-MM-DD",
	"YYYY/MMMM/YYYY-MM-DD dddd",
	"D MMMM YYYY, ddd",
	"Do MMM YYYY dd",
	"YYYY-MMM-DD",
	"gggg-[W]ww-d Mo DDDo",
	"gggg [W]wo dddd",
	"[В] dddd, D MMMM YYYY",
}

// TestLocaleRoundTrip formats every day of a year in each locale and
// format, and parses it back to the same day, in any case.
func TestLocaleRoundTrip(t *testing.T) {
	for _, loc := range Locales() {
		for _, format := range localeFormats {
			t.Run(loc.Name+"/"+format, func(t *testing.T) {
				m := MustMoment(format).In(loc)
				for day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC); day.Year() == 2025; day = day.AddDate(0, 0, 1) {
					s := m.Format(day)
					got, ok := m.Parse(s)
					if !ok || !got.Equal(day) {
						t.Fatalf("Parse(%q) = %s, %v; want %s", s, got.Format(time.DateOnly), ok, day.Format(time.DateOnly))
					}
					if up, ok := m.Parse(strings.ToUpper(s)); !ok || !up.Equal(day) {
						t.Fatalf("Parse(%q) = %s, %v; case must not matter", strings.ToUpper(s), up, ok)
					}
				}
			})
		}
	}
}

// TestLocaleNames pins what moment.js writes in each locale for one day,
// 2025-10-01, a Wednesday.
func TestLocaleNames(t *testing.T) {
	day := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ locale, format, want string }{
		{"ko", "YYYY/MMM/YYYY-MM-DD", "2025/10월/2025-10-01"},
		{"ko", "YYYY년 MMMM Do dddd", "2025년 10월 1일 수요일"},
		{"ko", "ddd dd", "수 수"},
		{"ja", "YYYY/MMM/YYYY-MM-DD", "2025/10月/2025-10-01"},
		{"ja", "MMMM Do dddd ddd", "10月 1日 水曜日 水"},
		{"zh-cn", "YYYY/MMM/MMMM dddd ddd dd", "2025/10月/十月 星期三 周三 三"},
		{"zh-cn", "Do Mo", "1日 10月"},
		{"de", "YYYY/MMM/MMMM dddd ddd dd Do", "2025/Okt./Oktober Mittwoch Mi. Mi 1."},
		{"de", "MMM", "Okt."},
		{"fr", "MMM MMMM dddd ddd dd Do", "oct. octobre mercredi mer. me 1er"},
		{"fr", "Mo wo", "10e 40e"},
		{"es", "MMM MMMM dddd ddd dd Do", "oct. octubre miércoles mié. mi 1º"},
		{"es", "YYYY-MMM-DD", "2025-oct-01"},
		{"ru", "MMMM YYYY", "октябрь 2025"},
		{"ru", "D MMMM YYYY", "1 октября 2025"},
		{"ru", "DD MMM", "01 окт."},
		{"ru", "dddd ddd dd Do", "среда ср ср 1-го"},
		{"ru", "[в] dddd", "в среду"},
		{"en", "MMM MMMM dddd ddd dd Do", "Oct October Wednesday Wed We 1st"},
		// Locale weeks: English weeks start on Sunday and week 1 holds
		// January 1; German and Russian ones are ISO weeks.
		{"en", "gggg-[W]ww", "2025-W40"},
		{"de", "gggg-[W]ww", "2025-W40"},
	} {
		loc, ok := LookupLocale(tt.locale)
		if !ok {
			t.Fatalf("no locale %q", tt.locale)
		}
		if got := MustMoment(tt.format).In(loc).Format(day); got != tt.want {
			t.Errorf("%s %q: Format = %q, want %q", tt.locale, tt.format, got, tt.want)
		}
	}
	// 2027-01-01, a Friday, is English week 1 of 2027 and ISO week 53 of
	// 2026.
	jan1 := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for locale, want := range map[string]string{"en": "2027-W01", "de": "2026-W53", "ko": "2027-W01", "zh-cn": "2026-W53"} {
		loc, _ := LookupLocale(locale)
		if got := MustMoment("gggg-[W]ww").In(loc).Format(jan1); got != want {
			t.Errorf("%s: week of 2027-01-01 = %q, want %q", locale, got, want)
		}
	}
}

// TestLocaleParseStrict: a name of another locale, or the other Russian
// form, is not a date.
func TestLocaleParseStrict(t *testing.T) {
	ko, _ := LookupLocale("ko")
	ru, _ := LookupLocale("ru")
	for _, tt := range []struct {
		m    Moment
		name string
	}{
		{MustMoment("YYYY/MMM/YYYY-MM-DD").In(ko), "2025/Oct/2025-10-01"},
		{MustMoment("YYYY/MMM/YYYY-MM-DD"), "2025/10월/2025-10-01"},
		{MustMoment("YYYY/MMM/YYYY-MM-DD").In(ko), "2025/11월/2025-10-01"},
		{MustMoment("D MMMM YYYY").In(ru), "1 октябрь 2025"},
		{MustMoment("MMMM YYYY").In(ru), "октября 2025"},
	} {
		if got, ok := tt.m.Parse(tt.name); ok {
			t.Errorf("%s %q: Parse(%q) = %s, want no date", tt.m.Locale().Name, tt.m, tt.name, got.Format(time.DateOnly))
		}
	}
}

func TestLookupLocale(t *testing.T) {
	for name, want := range map[string]string{"": "en", "EN": "en", "ko": "ko", "zh": "zh-cn", "zh_CN": "zh-cn", "RU": "ru"} {
		if l, ok := LookupLocale(name); !ok || l.Name != want {
			t.Errorf("LookupLocale(%q) = %v, %v; want %s", name, l, ok, want)
		}
	}
	if _, ok := LookupLocale("xx"); ok {
		t.Error("LookupLocale(xx) found a locale")
	}
}
