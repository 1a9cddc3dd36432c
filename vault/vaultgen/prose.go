package vaultgen

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// slot is a placeholder in a sentence pattern.
type slot uint8

const (
	slotNone    slot = iota
	slotNoun         // {noun}: Zipf over topicNouns
	slotAdj          // {adj}
	slotPerson       // {person}: a first name
	slotRare         // {rare}: a made-up name from the long tail
	slotTicket       // {ticket}: an issue key such as INV-2291
	slotWeekday      // {weekday}
	slotMood         // {mood}
	slotMeal         // {meal}
	slotTime         // {tod}: a time of day
)

var slotNames = map[string]slot{
	"noun": slotNoun, "adj": slotAdj, "person": slotPerson, "rare": slotRare, "ticket": slotTicket,
	"weekday": slotWeekday, "mood": slotMood, "meal": slotMeal, "tod": slotTime,
}

// segment is a literal followed by an optional slot.
type segment struct {
	lit  string
	slot slot
}

type pattern []segment

// compile splits "Talked to {person} about {noun}." into segments. It panics
// on an unknown slot: the patterns are constants of this package.
func compile(src string) pattern {
	var p pattern
	for {
		i := strings.IndexByte(src, '{')
		if i < 0 {
			return append(p, segment{lit: src})
		}
		j := strings.IndexByte(src[i:], '}') + i
		s, ok := slotNames[src[i+1:j]]
		if !ok {
			panic("vaultgen: unknown slot in pattern " + src)
		}
		p = append(p, segment{lit: src[:i], slot: s})
		src = src[j+1:]
	}
}

func compileAll(srcs []string) []pattern {
	ps := make([]pattern, len(srcs))
	for i, s := range srcs {
		ps[i] = compile(s)
	}
	return ps
}

// journalPatterns are free-form sentences for entries, task context and
// reference notes.
var journalPatterns = compileAll([]string{
	"Spent the {tod} on the {noun}, slower than expected.",
	"Talked to {person} about the {noun}, {adj} conversation.",
	"Reminder: the {noun} thing needs a decision before {weekday}.",
	"Read a bit about {noun}; the part on {rare} was new to me.",
	"Not sure the {noun} is worth it. Will revisit.",
	"{person} mentioned {rare} again, should look it up.",
	"Small win: the {noun} finally works.",
	"Kept thinking about {noun} and {noun} on the walk home.",
	"Ticket {ticket} is about the {noun}, not the {noun}.",
	"Idea: a {adj} {noun} for the {noun}.",
	"Felt {mood} most of the {tod}.",
	"Too much {noun}, not enough {noun}.",
	"Need to ask {person} whether the {noun} blocks the {noun}.",
	"The {adj} {noun} problem again.",
	"Listened to a podcast on {noun}, mostly {adj}.",
	"{weekday} plan: {noun}, then {noun}, then nothing.",
	"Tried {rare} for the {noun}, {adj} results.",
	"Question for later: why is the {noun} so {adj}?",
	"Wrote down three things about the {noun}. None of them are new.",
	"{person} thinks the {noun} is {adj}. I half agree.",
	"Cleaned up the {noun} notes, deleted half of them.",
	"Got distracted by {noun} for an hour, again.",
	"Honestly the {noun} is fine, I'm just {mood}.",
	"Looked at {ticket} with {person}, it's the {noun} after all.",
	"Want to try a {adj} approach to {noun} next week.",
	"Short day. {noun} in the {tod}, {noun} after.",
})

// workPatterns follow a task link in a work entry.
var workPatterns = compileAll([]string{
	"{person} reviewed it, mostly about the {noun}.",
	"Stuck on the {noun}. Pinged {person}.",
	"Moved the {noun} part to tomorrow.",
	"Progress: {noun} done, {noun} next.",
	"Found the bug, it was the {noun} all along.",
	"Estimate was {adj}, this is bigger than it looked.",
	"Paired with {person} for an hour, good session.",
	"Blocked on {ticket} until {weekday}.",
	"Wrote the {noun} section, needs a second pass.",
	"Demoed it to {person}, {adj} feedback.",
	"Split off the {noun} into its own PR.",
	"Need numbers on the {noun} before deciding.",
})

var timesOfDay = []string{"morning", "afternoon", "evening", "whole day", "first hour", "lunch break"}

// writer fills patterns from one note's random source.
type writer struct {
	r     *rand.Rand
	nouns *rand.Zipf
	rare  *rand.Zipf
	b     strings.Builder
}

func newWriter(seed uint64, stream uint64) *writer {
	r := rand.New(rand.NewPCG(seed, stream))
	return &writer{
		r:     r,
		nouns: rand.NewZipf(r, 1.1, 2, uint64(len(topicNouns)-1)),
		// 27,000 made-up names; s=1.3 keeps most of them to a note or two.
		rare: rand.NewZipf(r, 1.3, 4, uint64(len(rareSyllables)*len(rareSyllables)*len(rareSyllables)-1)),
	}
}

func (w *writer) intn(n int) int          { return w.r.IntN(n) }
func (w *writer) chance(p float64) bool   { return w.r.Float64() < p }
func (w *writer) pick(xs []string) string { return xs[w.r.IntN(len(xs))] }
func (w *writer) between(lo, hi int) int  { return lo + w.r.IntN(hi-lo+1) }
func (w *writer) noun() string            { return topicNouns[w.nouns.Uint64()] }
func (w *writer) rareName() string        { return rareTerm(int(w.rare.Uint64())) }
func (w *writer) str(s string)            { w.b.WriteString(s) }
func (w *writer) num(n int)               { w.b.WriteString(strconv.Itoa(n)) }
func (w *writer) line(s string)           { w.b.WriteString(s); w.b.WriteByte('\n') }
func (w *writer) fill(p pattern)          { w.fillTo(&w.b, p) }
func (w *writer) sentence(ps []pattern)   { w.fill(ps[w.r.IntN(len(ps))]) }
func (w *writer) len() int                { return w.b.Len() }
func (w *writer) bytes() []byte           { return []byte(w.b.String()) }
func (w *writer) fillTo(b *strings.Builder, p pattern) {
	for _, s := range p {
		b.WriteString(s.lit)
		switch s.slot {
		case slotNoun:
			b.WriteString(w.noun())
		case slotAdj:
			b.WriteString(w.pick(adjectives))
		case slotPerson:
			b.WriteString(w.pick(firstNames))
		case slotRare:
			b.WriteString(w.rareName())
		case slotTicket:
			b.WriteString(w.pick([]string{"INV", "OPS", "PLAT", "INFRA", "BUG"}))
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(100 + w.r.IntN(9900)))
		case slotWeekday:
			b.WriteString(w.pick(weekdays))
		case slotMood:
			b.WriteString(w.pick(moods))
		case slotMeal:
			b.WriteString(w.pick(meals))
		case slotTime:
			b.WriteString(w.pick(timesOfDay))
		}
	}
}

// paragraph writes sentences until the paragraph is at least min bytes long.
func (w *writer) paragraph(ps []pattern, min int) {
	start := w.b.Len()
	for {
		w.sentence(ps)
		if w.b.Len()-start >= min {
			break
		}
		w.b.WriteByte(' ')
	}
	w.b.WriteByte('\n')
}

// prose writes paragraphs of a few sentences each, separated by blank
// lines, until about total bytes are written.
func (w *writer) prose(ps []pattern, total int) {
	start := w.b.Len()
	for {
		w.paragraph(ps, w.between(120, 400))
		if w.b.Len()-start >= total {
			return
		}
		w.b.WriteByte('\n')
	}
}

// title capitalises the first letter of s.
func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
