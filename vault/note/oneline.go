package note

import "strings"

// OneLine is s as it can stand on one line of a note (a list item, a
// frontmatter value, a change set's summary), where a line break would
// end it: every run of white space, line breaks included, one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
