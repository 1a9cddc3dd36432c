package query

import "testing"

// A degraded answer quotes an entry's first line of prose: past a code
// block that opens it, the code itself when the entry is all code, its
// properties when it has no text.
func TestQuoteOf(t *testing.T) {
	for _, tc := range []struct {
		en   Entry
		want string
	}{
		{Entry{Text: "Bench 3x5 @ 195.\nFelt easy."}, "Bench 3x5 @ 195."},
		{Entry{Text: "\n```dataview\nTABLE summary FROM [[Elke]]\n```\n\nMet on Tuesday about the contract.\n"}, "Met on Tuesday about the contract."},
		{Entry{Text: "```dataview\nTABLE summary FROM [[Elke]]\nSORT date desc\n```\n"}, "TABLE summary FROM [[Elke]]"},
		{Entry{Text: "~~~\nmake demo\n~~~\nThen run the tests."}, "Then run the tests."},
		{Entry{Properties: "rating: 8\nwatched: 2026-11-02"}, "rating: 8 · watched: 2026-11-02"},
	} {
		if got := quoteOf(tc.en); got != tc.want {
			t.Errorf("quoteOf(%q) = %q, want %q", tc.en.Text, got, tc.want)
		}
	}
}
