package vaultgen

import (
	"fmt"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

type entryKind uint8

const (
	kindSleep entryKind = iota
	kindTraining
	kindWork
	kindFood
	kindMood
	kindReading
	kindCardio
	kindJournal
)

// fillers are the kinds drawn for a day's remaining entries, food and
// journal twice as likely as the rest.
var fillers = []entryKind{kindFood, kindFood, kindMood, kindJournal, kindJournal, kindReading, kindCardio}

func (p *plan) renderDaily(w *writer, i int, st *Stats) {
	day := p.days[i]
	wd := day.Weekday()
	weekday := wd >= time.Monday && wd <= time.Friday
	sleep := math.Round(min(10, max(3.5, 7.1+w.r.NormFloat64()*1.0))*12) / 12 // 5-minute steps

	if w.chance(0.7) {
		w.line("---")
		w.line("tags: [daily]")
		if w.chance(0.3) {
			w.line("sleep_hours: " + strconv.FormatFloat(math.Round(sleep*10)/10, 'f', -1, 64))
			w.line("mood: " + strconv.Itoa(w.between(3, 9)))
		}
		w.line("---")
		if w.chance(0.8) {
			w.line("# " + day.Format("Monday, January 2"))
			w.line("")
		}
	}
	if w.chance(0.35) {
		w.paragraph(journalPatterns, 50)
		w.line("")
	}

	lift := -1
	switch wd {
	case time.Monday:
		lift = 0
	case time.Wednesday:
		lift = 1
	case time.Friday:
		lift = 2
	}
	if lift >= 0 && !w.chance(0.85) {
		lift = -1
	}

	n := w.between(2, 6)
	var kinds []entryKind
	if w.chance(0.85) {
		kinds = append(kinds, kindSleep)
	}
	var rest []entryKind
	if lift >= 0 {
		rest = append(rest, kindTraining)
	}
	if weekday && len(p.active[i]) > 0 {
		rest = append(rest, kindWork)
		if w.chance(0.4) {
			rest = append(rest, kindWork)
		}
	}
	for len(kinds)+len(rest) < n {
		rest = append(rest, fillers[w.intn(len(fillers))])
	}
	w.r.Shuffle(len(rest), func(a, b int) { rest[a], rest[b] = rest[b], rest[a] })
	kinds = append(kinds, rest...)

	// Distinct times between 06:00 and 22:30, ascending.
	times := make([]int, 0, len(kinds))
	for len(times) < len(kinds) {
		t := 6*60 + w.intn(16*60+30)
		t -= t % 5
		if !slices.Contains(times, t) {
			times = append(times, t)
		}
	}
	slices.Sort(times)

	target := w.between(450, 2600)
	perEntry := target / len(kinds)
	var correction string
	for k, kind := range kinds {
		start := w.len()
		w.line("## " + clock(times[k]))
		st.Entries++
		switch kind {
		case kindSleep:
			p.writeSleep(w, sleep)
		case kindTraining:
			correction = p.writeTraining(w, i, lift, sleep, st)
		case kindWork:
			p.writeWork(w, i, st)
		case kindFood:
			writeFood(w, times[k])
		case kindMood:
			w.str("Mood " + w.pick(moods) + ", energy ")
			w.num(w.between(2, 9))
			w.str("/10.")
			if w.chance(0.2) {
				w.str(" " + w.pick(emojis))
			}
			w.str("\n")
		case kindReading:
			p.writeReading(w, st)
		case kindCardio:
			w.str(title(w.pick(conditioning)) + ", ")
			w.num(w.between(20, 75))
			w.line(" min. #cardio")
		case kindJournal:
			w.paragraph(journalPatterns, 60)
		}
		if w.chance(0.02) {
			w.line(w.pick(foreignLines))
		}
		if rest := perEntry - (w.len() - start); rest > 0 && kind != kindSleep {
			w.prose(journalPatterns, rest)
		}
		w.line("")
	}
	if correction != "" {
		st.Entries++
		st.Corrections++
		w.line("## " + clock(min(times[len(times)-1]+w.between(15, 80), 23*60+59)) + " [correction]")
		w.line(correction)
		w.line("")
	}
	trimTrailingBlank(w)
}

func clock(min int) string { return fmt.Sprintf("%02d:%02d", min/60, min%60) }

func hoursMinutes(h float64) string {
	m := int(math.Round(h * 60))
	if m%60 == 0 {
		return strconv.Itoa(m/60) + "h"
	}
	return fmt.Sprintf("%dh%02d", m/60, m%60)
}

func (p *plan) writeSleep(w *writer, h float64) {
	q := w.pick([]string{"ok", "decent", "meh", "fine", "ok-ish"})
	switch {
	case h < 6:
		q = w.pick([]string{"bad", "broken", "restless", "awful"})
	case h >= 7.5:
		q = w.pick([]string{"good", "great", "solid", "good"})
	}
	switch w.intn(4) {
	case 0:
		w.line("Slept " + hoursMinutes(h) + ", " + q + ". #sleep")
	case 1:
		w.line("Sleep: " + strconv.FormatFloat(math.Round(h*10)/10, 'f', -1, 64) + "h (" + q + ")")
	case 2:
		w.line(hoursMinutes(h) + " of sleep, " + q + ".")
	default:
		w.str("Slept " + hoursMinutes(h) + ", woke up ")
		w.str(w.pick([]string{"once", "twice", "at 4 for no reason", "before the alarm"}))
		w.line(". Quality " + q + ".")
	}
}

// writeTraining logs the day's lifts and returns the text of a correction
// entry when it deliberately mistyped a weight.
func (p *plan) writeTraining(w *writer, day, lift int, sleep float64, st *Stats) string {
	// Weights climb 5 lbs every second week through a 12-week block; each
	// block starts 10 lbs above the last until, two years in, it plateaus.
	weeks := int(p.days[day].Sub(p.days[0]).Hours() / 24 / 7)
	step := 5 * ((weeks % 12) / 2)
	block := 10 * min(weeks/12, 8)
	var correction string
	for k, ex := range lifts[lift] {
		if k > 0 {
			w.str(", ")
		}
		label := ex.short
		if k == 0 {
			label = title(label)
		}
		if ex.base == 0 {
			w.str(label + " 3x")
			w.num(w.between(5, 10))
			continue
		}
		weight := ex.base + step + block
		reps := "3x5"
		if k == 2 {
			reps = "3x10"
		}
		typed := strconv.Itoa(weight)
		if k == 0 && w.chance(0.03) {
			typed = mistype(typed)
			correction = title(ex.name) + " today was " + strconv.Itoa(weight) + ", not " + typed + ". Typo."
		}
		w.str(label + " " + reps + " @ " + typed)
	}
	w.str(". ")
	if sleep < 5.5 {
		w.str(title(w.pick(heavyFeel)) + ", probably the sleep.")
	} else {
		w.str(title(w.pick(liftFeel)) + ".")
	}
	w.str(" #training")
	if len(p.training) > 0 && w.chance(0.15) {
		o := p.others[p.training[w.intn(len(p.training))]]
		st.Links++
		w.str(" " + wikilink(o.title, "", ""))
	}
	w.str("\n")
	return correction
}

// mistype swaps the last two digits of a weight, or drops the last one when
// swapping changes nothing (a weight like 225 becomes 252, 255 becomes 25).
func mistype(s string) string {
	b := []byte(s)
	n := len(b)
	if n >= 2 && b[n-1] != b[n-2] {
		b[n-1], b[n-2] = b[n-2], b[n-1]
		return string(b)
	}
	return s[:n-1]
}

func writeFood(w *writer, at int) {
	switch {
	case at < 10*60:
		w.line("Breakfast: " + w.pick(breakfasts) + ".")
	case at < 15*60:
		w.str("Lunch: " + w.pick(meals) + ".")
		if w.chance(0.3) {
			w.str(" Snack later: " + w.pick(snacks) + ".")
		}
		w.str("\n")
	case at < 17*60:
		w.line("Snack: " + w.pick(snacks) + ".")
	default:
		w.str("Dinner: " + w.pick(meals) + ". Protein for the day ~")
		w.num(w.between(9, 19) * 10)
		w.line(" g. #food")
	}
}

func (p *plan) writeWork(w *writer, day int, st *Stats) {
	active := p.active[day]
	ti := int(active[w.intn(len(active))])
	// Prefer the quarter's big project when it is running.
	if w.chance(0.6) {
		for _, a := range active {
			if p.tasks[a].hot {
				ti = int(a)
				break
			}
		}
	}
	st.Linked++
	st.Links++
	link := p.taskLink(w, ti, dailyFolder)
	switch w.intn(3) {
	case 0:
		w.str(link + ": ")
	case 1:
		w.str("Worked on " + link + ". ")
	default:
		w.str("Back on " + link + " after standup. ")
	}
	w.sentence(workPatterns)
	if w.chance(0.3) {
		w.str(" #work")
	}
	w.str("\n")
}

func (p *plan) writeReading(w *writer, st *Stats) {
	if len(p.others) == 0 {
		w.paragraph(journalPatterns, 60)
		return
	}
	o := p.others[w.intn(len(p.others))]
	st.Links++
	switch w.intn(3) {
	case 0:
		w.str("Read more of " + p.otherLink(w, o, dailyFolder) + ". ")
	case 1:
		w.str("Added to " + p.otherLink(w, o, dailyFolder) + ". ")
	default:
		w.str("Reread " + p.otherLink(w, o, dailyFolder) + ", still holds up. ")
	}
	w.paragraph(journalPatterns, 30)
}

// taskLink links task ti in one of the forms people write: by name, with an
// alias or heading, by path, by one of the task's aliases, or as a markdown
// link relative to the folder the link is written in.
func (p *plan) taskLink(w *writer, ti int, from string) string {
	t := p.tasks[ti]
	switch x := w.intn(100); {
	case x < 60:
		return wikilink(t.title, "", "")
	case x < 75:
		return wikilink(t.title, "", w.pick([]string{"this", "the task", strings.ToLower(t.title)}))
	case x < 80:
		return wikilink(t.title, "Checklist", "")
	case x < 87:
		return wikilink(strings.TrimSuffix(t.path, ".md"), "", "")
	case x < 93 && len(t.aliases) > 0:
		return wikilink(t.aliases[0], "", "")
	default:
		return markdownLink(strings.ToLower(t.title), from, t.path)
	}
}

func (p *plan) otherLink(w *writer, o otherPlan, from string) string {
	switch x := w.intn(100); {
	case x < 70:
		return wikilink(o.title, "", "")
	case x < 80 && len(o.aliases) > 0:
		return wikilink(o.aliases[0], "", "")
	case x < 88:
		return wikilink(o.title, "", strings.ToLower(o.title))
	default:
		return markdownLink(o.title, from, o.path)
	}
}

func wikilink(target, heading, alias string) string {
	s := "[[" + target
	if heading != "" {
		s += "#" + heading
	}
	if alias != "" {
		s += "|" + alias
	}
	return s + "]]"
}

// markdownLink writes [text](rel) with rel relative to the folder from, spaces
// encoded as %20 the way Obsidian writes them.
func markdownLink(text, from, to string) string {
	fromParts := strings.Split(from, "/")
	toParts := strings.Split(to, "/")
	k := 0
	for k < len(fromParts) && k < len(toParts)-1 && fromParts[k] == toParts[k] {
		k++
	}
	rel := strings.Repeat("../", len(fromParts)-k) + strings.Join(toParts[k:], "/")
	return "[" + text + "](" + strings.ReplaceAll(rel, " ", "%20") + ")"
}

func (p *plan) renderTask(w *writer, i int, st *Stats) {
	t := p.tasks[i]
	due := p.days[t.last].AddDate(0, 0, w.between(0, 14)).Format(dateLayout)
	scheduled := p.days[t.first].Format(dateLayout)
	tags := []string{w.pick([]string{"work", "personal", "health", "home", "admin", "training"})}
	if w.chance(0.4) {
		tags = append(tags, strings.ReplaceAll(w.noun(), " ", "-"))
	}

	w.line("---")
	switch style := w.intn(20); {
	case style < 12:
		w.line("type: task")
		w.line("status: " + t.status)
		w.line("priority: P" + strconv.Itoa(w.between(0, 3)))
		w.line("due: " + due)
		if w.chance(0.5) {
			w.line("scheduled: " + scheduled)
		}
		if w.chance(0.7) {
			w.line("estimate: " + w.pick(estimates))
		}
		w.line("tags: [" + strings.Join(tags, ", ") + "]")
	case style < 17:
		w.line("tags: [task, " + strings.Join(tags, ", ") + "]")
		w.line("status: " + t.status)
		w.line("priority: " + w.pick([]string{"high", "medium", "low"}))
		w.line("due: " + due)
	case style < 19:
		// TaskNotes-style and hand-rolled keys from an older setup.
		w.line("Title: " + yamlString(t.title))
		w.line("Status: " + map[string]string{
			"open": "Todo", "in-progress": "In Progress", "blocked": "Blocked", "done": "Done", "cancelled": "Cancelled",
		}[t.status])
		w.line("timeEstimate: " + strconv.Itoa(w.between(1, 16)*15))
		w.line("labels:")
		for _, tag := range tags {
			w.line("  - " + tag)
		}
		w.line(w.pick([]string{"client: Acme", "project: " + rareTerm(w.intn(900)), "context: \"@computer\""}))
	default:
		w.line("status: " + t.status)
		w.line("due: " + due)
	}
	if len(t.aliases) > 0 {
		w.line("aliases:")
		for _, a := range t.aliases {
			w.line("  - " + yamlString(a))
		}
	}
	w.line("---")

	if w.chance(0.3) {
		w.line("# " + t.title)
		w.line("")
	}
	target := w.between(600, 3200)
	w.prose(journalPatterns, 100+target/4)
	if len(p.people) > 0 && w.chance(0.6) {
		o := p.others[p.people[w.intn(len(p.people))]]
		st.Links++
		w.str("Owner on the other side: " + p.otherLink(w, o, path.Dir(t.path)) + ".")
		if w.chance(0.15) {
			w.str(" " + w.pick(emojis))
		}
		w.str("\n")
	}
	if w.chance(0.03) {
		w.line(w.pick(foreignLines))
	}
	w.line("")

	w.line("## Checklist")
	var ids []string
	for range w.between(3, 10) {
		p.writeChecklistItem(w, t, &ids)
	}

	if w.len() < target {
		w.line("")
		w.line("## Notes")
		for k := 0; k < 8 && w.len() < target; k++ {
			d := w.between(t.first, t.last)
			st.Links++
			w.str("- " + wikilink(p.days[d].Format(dateLayout), "", "") + " ")
			w.sentence(workPatterns)
			w.str("\n")
		}
	}
}

func (p *plan) writeChecklistItem(w *writer, t taskPlan, ids *[]string) {
	var state byte
	switch t.status {
	case "done":
		state = "xxxxxx-"[w.intn(7)]
	case "cancelled":
		state = "x--"[w.intn(3)]
	default:
		state = "xxx     //"[w.intn(10)]
	}
	w.str("- [" + string(state) + "] " + w.pick(checklistVerbs) + " the " + w.noun())
	date := func() string { return p.days[w.between(t.first, t.last)].Format(dateLayout) }
	switch state {
	case 'x':
		if w.chance(0.7) {
			w.str(" ✅ " + date())
		}
	case '-':
		if w.chance(0.5) {
			w.str(" ❌ " + date())
		}
	default:
		if w.chance(0.3) {
			w.str(" 📅 " + date())
		}
		if w.chance(0.15) {
			w.str(" ⏳ " + date())
		}
		if w.chance(0.15) {
			w.str(" " + w.pick([]string{"🔺", "⏫", "🔼", "🔽", "⏬"}))
		}
		if len(*ids) > 0 && w.chance(0.3) {
			w.str(" ⛔ " + (*ids)[w.intn(len(*ids))])
		}
		if w.chance(0.15) {
			id := strconv.FormatUint(w.r.Uint64()&0xffffff, 36)
			*ids = append(*ids, id)
			w.str(" 🆔 " + id)
		}
		if w.chance(0.08) {
			w.str(" [due:: " + date() + "]")
		}
	}
	w.str("\n")
}

func (p *plan) renderOther(w *writer, i int, st *Stats) {
	o := p.others[i]
	a := referenceAreas[o.area]
	dir := path.Dir(o.path)
	if o.broken {
		writeBrokenFrontmatter(w, o)
	} else if w.chance(0.7) {
		w.line("---")
		area := strings.ToLower(path.Base(a.folder))
		w.line("tags: [" + strings.ReplaceAll(area, " ", "-") + ", " + strings.ReplaceAll(w.noun(), " ", "-") + "]")
		if len(o.aliases) > 0 {
			w.line("aliases:")
			for _, al := range o.aliases {
				w.line("  - " + yamlString(al))
			}
		}
		w.line("created: " + p.days[w.intn(len(p.days))].Format(dateLayout))
		switch area {
		case "books":
			w.line("author: " + yamlString(w.pick(firstNames)+" "+w.pick(lastNames)))
			w.line("rating: " + strconv.Itoa(w.between(1, 5)))
		case "people":
			w.line("role: " + yamlString(w.pick([]string{"manager", "friend", "cousin", "coach", "colleague", "neighbour", "physio"})))
		}
		if w.chance(0.1) {
			w.line("source: \"https://example.com/" + strings.ToLower(w.rareName()) + "?ref=notes\"")
		}
		w.line("---")
	}
	if w.chance(0.5) {
		w.line("# " + o.title)
		w.line("")
	}

	// Sizes skew small: most notes are a few paragraphs, a few run long.
	u := w.r.Float64()
	target := 500 + int(3500*u*u)
	w.prose(journalPatterns, 150)
	for w.len() < target {
		w.line("")
		switch w.intn(4) {
		case 0:
			w.line("## " + title(w.noun()))
			w.line("")
			w.prose(journalPatterns, 200)
		case 1:
			for range w.between(2, 5) {
				w.str("- ")
				p.writeOtherLink(w, dir, st)
				w.str(" ")
				w.sentence(journalPatterns)
				w.str("\n")
			}
		case 2:
			w.paragraph(journalPatterns, 80)
			if w.chance(0.3) {
				w.line("#" + strings.ReplaceAll(w.noun(), " ", "-"))
			}
		default:
			w.str("Related: ")
			p.writeOtherLink(w, dir, st)
			w.str(", ")
			p.writeOtherLink(w, dir, st)
			w.str(".\n")
		}
	}
	if len(p.attachments) > 0 && w.chance(0.05) {
		st.Links++
		w.line("")
		w.line("![[" + path.Base(p.attachments[w.intn(len(p.attachments))]) + "]]")
	}
}

// writeOtherLink links another note from a reference note: mostly other
// reference notes, sometimes a task or a day, now and then a note that does
// not exist yet, as Obsidian users leave them.
func (p *plan) writeOtherLink(w *writer, from string, st *Stats) {
	st.Links++
	switch x := w.intn(100); {
	case x < 65 && len(p.others) > 0:
		w.str(p.otherLink(w, p.others[w.intn(len(p.others))], from))
	case x < 80 && len(p.tasks) > 0:
		w.str(p.taskLink(w, w.intn(len(p.tasks)), from))
	case x < 95:
		d := p.days[w.intn(len(p.days))].Format(dateLayout)
		w.str(wikilink(d, "", ""))
	default:
		st.Links--
		w.str(wikilink("Someday "+w.noun(), "", ""))
	}
}

// writeBrokenFrontmatter writes one of the mistakes people make by hand in
// YAML: an unclosed flow list, a stray indented key, an unterminated quote,
// a tab for indentation. Each is rejected by a YAML parser.
func writeBrokenFrontmatter(w *writer, o otherPlan) {
	w.line("---")
	switch w.intn(4) {
	case 0:
		w.line("title: " + o.title)
		w.line("tags: [inbox, " + w.noun())
	case 1:
		w.line("title: " + o.title)
		w.line("  status: draft")
	case 2:
		w.line("title: \"" + o.title)
		w.line("tags: [inbox]")
	default:
		w.line("title: " + o.title)
		w.line("tags:")
		w.line("\t- inbox")
	}
	w.line("created: " + time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, w.intn(2000)).Format(dateLayout))
	w.line("---")
}

func trimTrailingBlank(w *writer) {
	s := strings.TrimRight(w.b.String(), "\n") + "\n"
	w.b.Reset()
	w.b.WriteString(s)
}

// yamlString returns s as a YAML scalar, double-quoted when a plain scalar
// would mean something else (a number, a date, a boolean, a comment, a flow
// collection) or would not parse.
func yamlString(s string) string {
	if s == "" || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@` 0123456789") ||
		strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") ||
		strings.ContainsAny(s, "\t\n\"\\") {
		return strconv.Quote(s)
	}
	switch strings.ToLower(s) {
	case "yes", "no", "true", "false", "on", "off", "null", "~", "y", "n":
		return strconv.Quote(s)
	}
	return s
}
