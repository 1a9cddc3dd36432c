package query

import (
	"fmt"
	"time"
)

// ParseWhen reads the time a person or a client gives a log entry (margin
// log --time, log/append's time, log_entry's time): RFC 3339, or a local
// YYYY-MM-DDTHH:MM as a person types it.
func ParseWhen(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04", s, time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not RFC 3339 or YYYY-MM-DDTHH:MM", s)
	}
	return t, nil
}
