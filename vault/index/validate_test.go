package index_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/index"
)

// One table for the three front doors: each maps a QueryError's field to
// its own name for it, and none has rules of its own.
func TestQueryValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     index.Query
		field string // "" when the query is valid
		in    string // in the reason
	}{
		{"words", index.Query{Text: "bench press"}, "", ""},
		{"filters without words", index.Query{Glob: "Tasks/**"}, "", ""},
		{"task fields without words", index.Query{Fields: index.TaskFilter{Status: []string{"done"}}}, "", ""},
		{"a mode in capitals", index.Query{Text: "x", Mode: "Phrase"}, "", ""},
		{"the most hits", index.Query{Text: "x", Limit: index.MaxLimit}, "", ""},
		{"a one-day range", index.Query{From: "2026-11-09", To: "2026-11-09"}, "", ""},
		{"nothing to search", index.Query{Text: "  ", Limit: 5}, "query", "required"},
		{"an unknown mode", index.Query{Text: "x", Mode: "fuzzy"}, "mode", `got "fuzzy"`},
		{"from not a date", index.Query{Text: "x", From: "last week"}, "from", "YYYY-MM-DD"},
		{"to not a day", index.Query{Text: "x", To: "2026-02-30"}, "to", "YYYY-MM-DD"},
		{"from after to", index.Query{From: "2026-11-15", To: "2026-11-09"}, "from", "after to"},
		{"a negative limit", index.Query{Text: "x", Limit: -1}, "limit", "got -1"},
		{"a limit over the most", index.Query{Text: "x", Limit: index.MaxLimit + 1}, "limit", "between 1 and 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.q.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want valid", err)
				}
				return
			}
			var qe *index.QueryError
			if !errors.As(err, &qe) || qe.Field != tc.field || !strings.Contains(qe.Reason, tc.in) {
				t.Fatalf("Validate() = %v, want field %s with %q", err, tc.field, tc.in)
			}
		})
	}
}
