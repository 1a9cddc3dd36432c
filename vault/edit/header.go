package edit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Field is one key of a frontmatter margin writes whole (a report, a
// change set, a template), in the order it is given.
//
// Value is a string, written plain when it is a bare word that every YAML
// reader takes back as the same string, or a day (YYYY-MM-DD), and quoted
// otherwise (a status, an id, a name); a Quoted string, always quoted; an integer; a time.Time, in
// RFC 3339; or any other value SetFrontmatter takes that fits on the line
// (an empty list is `[]`).
type Field struct {
	Key   string
	Value any
}

// Quoted is a string written double-quoted whatever it holds: text a
// person or a model wrote (a tldr, a link, a model's name) stays a string
// for every reader even when it reads "yes" or "2026-11-25".
type Quoted string

// RenderFrontmatter renders a frontmatter block, its fences included, with
// one line per field. The values are margin's own, chosen where it is
// written, so a value that does not fit on a line is a bug and panics.
func RenderFrontmatter(fields ...Field) string {
	var b strings.Builder
	b.WriteString("---\n")
	for _, f := range fields {
		b.WriteString(f.Key + ": " + inlineValue(f.Key, f.Value) + "\n")
	}
	b.WriteString("---\n")
	return b.String()
}

func inlineValue(key string, v any) string {
	switch v := v.(type) {
	case Quoted:
		return doubleQuote(string(v))
	case string:
		if dateRE.MatchString(v) || bareWord.MatchString(v) && !yaml11BoolRE.MatchString(v) && !strings.EqualFold(v, "null") {
			return v
		}
		return doubleQuote(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case time.Time:
		return v.Format(time.RFC3339)
	}
	r, err := render(v, nil)
	if err != nil || r.inline == "" {
		panic(fmt.Sprintf("frontmatter %s: %T does not fit on one line: %v", key, v, err))
	}
	return r.inline
}

// bareWord is a name that reads the same plain in YAML, bar the words
// that YAML 1.1 readers take for booleans or null.
var bareWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
