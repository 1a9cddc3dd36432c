package query

import (
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/note"
)

// dailyTemplater is a daily template in the shape Templater users write:
// properties and navigation links computed from the note's title.
const dailyTemplater = `---
date: <% tp.date.now("YYYY-MM-DD") %>
week: <% tp.date.now("gggg-[W]ww") %>
month: "<% tp.date.now('YYYY-MM') %>"
created: <% tp.file.creation_date() %>
mood: <% await tp.system.suggester(["good", "bad"], ["good", "bad"]) %>
tags: [daily]
---
<%* const weather = await tp.web.daily_quote() -%>
<< [[<% tp.date.now("YYYY-MM-DD", -1, tp.file.title, "YYYY-MM-DD") %>|↶ Previous Day]] | [[<% tp.date.now("YYYY-MM-DD", 1, tp.file.title, "YYYY-MM-DD") %>|Next Day ↷]] >>
# <%- tp.file.title -%>, <% tp.date.now("dddd") %>
Week [[<% tp.date.now("gggg-[W]ww", "P1W") %>|next]] · yesterday <% tp.date.yesterday() %> · tomorrow <% tp.date.tomorrow("MMM D") %>
Quote: <% tp.web.daily_quote() %>
Written <% tp.date.now("HH:mm") %>.
Week of [[<% tp.date.weekday("YYYY-MM-DD", 0) %>]] to [[<% tp.date.weekday("YYYY-MM-DD", 6, tp.file.title, "YYYY-MM-DD") %>]]
[[<% moment(tp.file.title, "YYYY-MM-DD").subtract(1, 'd').format("YYYY-MM-DD") %>]] · [[<% moment(tp.file.title,'YYYY-MM-DD').add(1,"days").format('YYYY-MM-DD') %>]] · <% moment(tp.file.title).add(1, "month").subtract(1, "weeks").format("dddd D MMMM") %> · <% moment().format("YYYY") %>
`

func TestRenderTemplater(t *testing.T) {
	// The note of 2026-11-23 created a day later, with --time.
	at := time.Date(2026, 11, 23, 18, 30, 0, 0, time.Local)
	created := time.Date(2026, 11, 24, 9, 5, 0, 0, time.Local)
	n := newNote{at: at, created: created, title: "2026-11-23", locale: note.English}
	want := `---
date: 2026-11-23
week: 2026-W48
month: "2026-11"
created: 2026-11-24 09:05
tags: [daily]
---
<< [[2026-11-22|↶ Previous Day]] | [[2026-11-24|Next Day ↷]] >>
# 2026-11-23, Monday
Week [[2026-W49|next]] · yesterday 2026-11-22 · tomorrow Nov 24
Written 18:30.
Week of [[2026-11-22]] to [[2026-11-28]]
[[2026-11-22]] · [[2026-11-24]] · Wednesday 16 December · 2026
`
	if got := renderTemplater(dailyTemplater, n); got != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
}

// In a vault whose notes are named in Korean, the template's names are
// Korean too, as Obsidian's moment writes them; a format with a time and
// a name margin can only write in English is left out, not written in
// the wrong language.
func TestRenderTemplaterInTheVaultsLanguage(t *testing.T) {
	ko, _ := note.LookupLocale("ko")
	n := newNote{at: time.Date(2026, 11, 23, 18, 30, 0, 0, time.Local), title: "2026-11-23", locale: ko}
	src := "month: <% tp.date.now(\"YYYY/MMM\") %>\nday: <% tp.date.now(\"dddd\", 0, tp.file.title) %>\nat: <% tp.date.now(\"dddd HH:mm\") %>\n"
	want := "month: 2026/11월\nday: 월요일\n"
	if got := renderTemplater(src, n); got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

// Expressions margin cannot evaluate, whatever their shape, take their
// line with them.
func TestRenderTemplaterLeavesOutWhatItCannotKnow(t *testing.T) {
	n := newNote{at: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), title: "Notes", locale: note.English}
	for _, expr := range []string{
		`tp.date.now("YYYY-MM-DD", -1, tp.file.title, "YYYY-MM-DD")`, // the title is not a date
		`tp.date.now("YYYY-MM-DD", offset)`,
		`tp.date.now("YYYY-MM-DD", "P1H")`,
		`tp.date.now("YYYY-MM-DD", 1, "2026-01-01", "YYYY-MM-DD HH:mm")`,
		`tp.date.now("YYYY-MM-DD" + x)`,
		`tp.date.now("\"")`,
		"tp.date.now(`${x}`)",
		`tp.date.weekday("YYYY-MM-DD")`,
		`tp.date.weekday("YYYY-MM-DD", "1")`,
		`tp.frontmatter.date`,
		`tp.date.now("LL")`,
		`tp.file.creation_date("YYYY", 1)`,
		`moment(tp.file.title, "YYYY-MM-DD").format("YYYY")`, // the title is not a date
		`moment("2026-11-23").add(1, "h").format("YYYY-MM-DD")`,
		`moment("2026-11-23").add(1).format("YYYY-MM-DD")`,
		`moment("2026-11-23").add().format("YYYY-MM-DD")`,
		`moment("2026-11-23").add({days: 1}).format("YYYY-MM-DD")`,
		`moment("2026-11-23").startOf("week").format("YYYY-MM-DD")`,
		`moment("2026-11-23").format()`,
		`moment("2026-11-23").format("YYYY").toUpperCase()`,
		`moment("2026-11-23")`,
		`moment("2026-11-23", "YYYY-MM-DD", "en")`,
		`moment("2026-11-23"`,
		`moment("2026-11-23").format("YYYY"`,
		`moment(")").format("YYYY")`,
	} {
		src := "keep\nbroken: <% " + expr + " %>\nkeep too\n"
		if got := renderTemplater(src, n); got != "keep\nkeep too\n" {
			t.Errorf("%s: rendered %q", expr, got)
		}
	}
}

// tp.date.weekday counts from the first day of the locale's week: Sunday
// in English, Monday in German.
func TestRenderTemplaterWeekdayFollowsTheLocale(t *testing.T) {
	de, _ := note.LookupLocale("de")
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC) // a Wednesday
	for loc, want := range map[*note.Locale]string{note.English: "2026-11-22\n", de: "2026-11-23\n"} {
		n := newNote{at: at, title: "x", locale: loc}
		if got := renderTemplater(`<% tp.date.weekday("YYYY-MM-DD", 0) %>`+"\n", n); got != want {
			t.Errorf("%s: first day of the week %q, want %q", loc.Name, got, want)
		}
	}
}

// FuzzRenderTemplater: whatever a template holds, rendering it neither
// panics nor leaves margin's marks of left-out commands in the note.
func FuzzRenderTemplater(f *testing.F) {
	f.Add(dailyTemplater)
	f.Add(`<% moment(tp.file.title, "YYYY-MM-DD").subtract(1, 'd').format("YYYY-MM-DD") %>`)
	f.Add("<% moment(\")\", `(`).add(-1, \"w\").format('[W]ww') %>\n<%* x %> y")
	n := newNote{at: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), title: "2026-11-23", locale: note.English}
	f.Fuzz(func(t *testing.T, src string) {
		if out := renderTemplater(src, n); strings.Contains(out, codeMark) || strings.Contains(out, unknownRun) {
			t.Fatalf("renderTemplater(%q) = %q", src, out)
		}
	})
}
