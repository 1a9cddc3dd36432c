package index

import (
	"fmt"
	"strings"
	"time"
)

// MaxLimit is the most hits a query from outside may ask for: every front
// door (margin search, vault/search, search_notes) takes the same, high
// enough for an editor's list or a script, low enough that one reply
// stays a reply and not a dump of the vault.
const MaxLimit = 1000

// A QueryError is a query that Validate turned away. Field is the Query
// field as its front doors spell it (query, mode, from, to, limit), so
// each can name it in its own terms: an RPC's param, a tool's argument,
// a flag.
type QueryError struct {
	Field  string
	Reason string // a phrase that follows the field: "must be …, got …"
}

func (e *QueryError) Error() string { return e.Field + " " + e.Reason }

// Validate checks a query as a person or a client wrote it: something to
// search for or to narrow by, a mode index knows, from and to as days
// (YYYY-MM-DD) and in order, and a limit of at most MaxLimit (0 is the
// front door's default). Find checks only what it needs to run.
func (q Query) Validate() error {
	if strings.TrimSpace(q.Text) == "" && q.From == "" && q.To == "" && q.Glob == "" && len(q.Tags) == 0 && q.Fields.isZero() {
		return &QueryError{"query", "is required unless from, to, glob or tags narrow the search"}
	}
	if _, err := parseMode(q.Mode); err != nil {
		return &QueryError{"mode", fmt.Sprintf("must be auto, all, any or phrase, got %q", q.Mode)}
	}
	for _, d := range []struct{ field, v string }{{"from", q.From}, {"to", q.To}} {
		if d.v != "" && !isDay(d.v) {
			return &QueryError{d.field, fmt.Sprintf("must be a date YYYY-MM-DD, got %q", d.v)}
		}
	}
	if q.From != "" && q.To != "" && q.From > q.To {
		return &QueryError{"from", fmt.Sprintf("must not be after to (%s), got %s", q.To, q.From)}
	}
	if q.Limit < 0 || q.Limit > MaxLimit {
		return &QueryError{"limit", fmt.Sprintf("must be between 1 and %d, got %d", MaxLimit, q.Limit)}
	}
	return nil
}

// parseMode is mode as Find runs it: case-insensitive, empty as auto.
func parseMode(mode Mode) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(string(mode)))); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeAll, ModeAny, ModePhrase:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want auto, all, any or phrase)", mode)
}

// isDay reports whether s is a day of the calendar written YYYY-MM-DD.
func isDay(s string) bool {
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}
