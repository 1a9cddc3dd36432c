package llm

import (
	"slices"
	"strings"
	"unicode"
)

// fillers are the words a small model fills a free field with when it has
// nothing to say.
var fillers = []string{"ok", "okay", "fine", "yes", "no", "none", "null", "nil", "n", "a", "na", "tbd", "todo", "nothing"}

// SaysNothing reports whether text has no word but fillers ("ok", "N/A"):
// a model's field that would replace something with nothing (issue 33).
func SaysNothing(text string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !slices.Contains(fillers, w) {
			return false
		}
	}
	return true
}
