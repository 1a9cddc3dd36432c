package review

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is when a review runs, in the clock's local time: the times
// whose minute, hour, day of month, month and weekday are all in its sets,
// as cron reads five fields (a day of month and a weekday both restricted
// must both match, unlike cron's either-or: margin's forms never need it).
type Schedule struct {
	text                          string
	minute, hour, dom, month, dow set
}

type set uint64 // bit n: value n is in the set

func (s set) has(n int) bool { return s&(1<<n) != 0 }

var weekdays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// ParseSchedule reads a review's `schedule`: `daily HH:MM`, `weekly DAY
// HH:MM` (mon … sun) or five cron fields (minute hour day-of-month month
// weekday, each `*`, a number, a range a-b or a comma list of them).
func ParseSchedule(text string) (Schedule, error) {
	f := strings.Fields(strings.ToLower(text))
	bad := func(why string) (Schedule, error) {
		return Schedule{}, fmt.Errorf("schedule %q: %s (want `daily 07:00`, `weekly mon 08:00` or five cron fields)", text, why)
	}
	var cron []string
	switch {
	case len(f) == 2 && f[0] == "daily":
		h, m, ok := clock(f[1])
		if !ok {
			return bad("the time is not HH:MM")
		}
		cron = []string{m, h, "*", "*", "*"}
	case len(f) == 3 && f[0] == "weekly":
		d, ok := weekdays[f[1][:min(3, len(f[1]))]]
		if !ok {
			return bad("the day is not one of mon, tue, wed, thu, fri, sat, sun")
		}
		h, m, ok := clock(f[2])
		if !ok {
			return bad("the time is not HH:MM")
		}
		cron = []string{m, h, "*", "*", strconv.Itoa(d)}
	case len(f) == 5:
		cron = f
	default:
		return bad("unknown form")
	}
	s := Schedule{text: strings.Join(strings.Fields(text), " ")}
	for i, r := range []struct {
		into     *set
		lo, hi   int
		name     string
		sundayIs bool
	}{{&s.minute, 0, 59, "minute", false}, {&s.hour, 0, 23, "hour", false}, {&s.dom, 1, 31, "day of month", false},
		{&s.month, 1, 12, "month", false}, {&s.dow, 0, 7, "weekday", true}} {
		v, err := field(cron[i], r.lo, r.hi)
		if err != nil {
			return bad(fmt.Sprintf("%s: %v", r.name, err))
		}
		if r.sundayIs && v.has(7) {
			v |= 1 // cron's 7 is Sunday too
		}
		*r.into = v
	}
	return s, nil
}

func clock(hm string) (hour, minute string, ok bool) {
	t, err := time.Parse("15:04", hm)
	if err != nil {
		return "", "", false
	}
	return strconv.Itoa(t.Hour()), strconv.Itoa(t.Minute()), true
}

func field(f string, lo, hi int) (set, error) {
	var s set
	for part := range strings.SplitSeq(f, ",") {
		if part == "*" {
			for n := lo; n <= hi; n++ {
				s |= 1 << n
			}
			continue
		}
		a, b, isRange := strings.Cut(part, "-")
		from, err := strconv.Atoi(a)
		to := from
		if err == nil && isRange {
			to, err = strconv.Atoi(b)
		}
		if err != nil || from < lo || to > hi || from > to {
			return 0, fmt.Errorf("%q is not *, a number from %d to %d, or a range of them", part, lo, hi)
		}
		for n := from; n <= to; n++ {
			s |= 1 << n
		}
	}
	return s, nil
}

func (s Schedule) String() string { return s.text }

func (s Schedule) matchesDay(t time.Time) bool {
	return s.month.has(int(t.Month())) && s.dom.has(t.Day()) && s.dow.has(int(t.Weekday()))
}

// searchDays bounds a search for the next or previous time: five years
// covers any schedule the fields can write but one that never comes (a
// 31st of February), which is then reported as none.
const searchDays = 5 * 366

// Prev is the latest scheduled time at or before t, and false when there
// is none within five years.
func (s Schedule) Prev(t time.Time) (time.Time, bool) {
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	for range searchDays {
		if s.matchesDay(day) {
			for h := 23; h >= 0; h-- {
				for m := 59; m >= 0; m-- {
					at := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, t.Location())
					if s.hour.has(h) && s.minute.has(m) && !at.After(t) {
						return at, true
					}
				}
			}
		}
		day = day.AddDate(0, 0, -1)
	}
	return time.Time{}, false
}

// Next is the first scheduled time after t, and false when there is none
// within five years.
func (s Schedule) Next(t time.Time) (time.Time, bool) {
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	for range searchDays {
		if s.matchesDay(day) {
			for h := range 24 {
				for m := range 60 {
					at := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, t.Location())
					if s.hour.has(h) && s.minute.has(m) && at.After(t) {
						return at, true
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}, false
}
