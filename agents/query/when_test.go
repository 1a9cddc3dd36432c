package query_test

import (
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
)

// One table for the three front doors that take a log entry's time.
func TestParseWhen(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time // zero when in is refused
	}{
		{"2026-11-21T07:30:00Z", time.Date(2026, 11, 21, 7, 30, 0, 0, time.UTC)},
		{"2026-11-21T07:30:00+02:00", time.Date(2026, 11, 21, 5, 30, 0, 0, time.UTC)},
		{"2026-11-21T07:30", time.Date(2026, 11, 21, 7, 30, 0, 0, time.Local)},
		{"2026-11-21", time.Time{}},
		{"07:30", time.Time{}},
		{"yesterday", time.Time{}},
		{"2026-11-21 07:30", time.Time{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := query.ParseWhen(tc.in)
			switch {
			case tc.want.IsZero() && err == nil:
				t.Fatalf("ParseWhen(%q) = %v, want an error", tc.in, got)
			case !tc.want.IsZero() && (err != nil || !got.Equal(tc.want)):
				t.Fatalf("ParseWhen(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}
