package changes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/margin-md/margin/vault/note"
)

// What a person approves is the line margin renders from the tool and its
// arguments, and the value that reaches the task note is checked against
// its field's type twice: when the model proposes it (the model gets the
// error back and can correct itself) and again when it is applied, so an
// item that was stored before these checks, or edited in the database,
// never writes a value the note cannot hold.

// Bounds of the values a change may carry.
const (
	maxTitle     = 200 // runes: a title is a note's name, not a paragraph
	maxItem      = 500 // runes of a checklist line, which can carry Tasks fields
	maxLabel     = 100
	maxReason    = 200          // runes of the model's reason on a change set line
	maxEstimateM = 250 * 8 * 60 // a year of 8-hour working days, in minutes
)

// because renders a change set line: margin's own words for what the item
// does, then the model's words as its reason. The action comes first so
// the person reads what ticking the line does before anything the model
// wrote; the reason is bracketed, and its dashes are plain, so a ` — `
// on the line is only ever the person's own rejection reason. A reason
// that only repeats the action is left out.
func because(action, reason string) string {
	r := note.OneLine(reason)
	r = strings.NewReplacer("—", "-", "–", "-").Replace(r)
	if r == "" || strings.EqualFold(strings.TrimRight(r, "."), action) {
		return action
	}
	if utf8.RuneCountInString(r) > maxReason {
		r = string([]rune(r)[:maxReason-1]) + "…"
	}
	return action + " (because: " + r + ")"
}

// itemValues are the values a change item may carry, whichever its tool.
type itemValues struct {
	Title    *string  `json:"title"`
	Status   *string  `json:"status"`
	Estimate *string  `json:"estimate"`
	Due      *string  `json:"due_date"`
	Priority *string  `json:"priority"`
	Labels   []string `json:"labels"`
	Text     *string  `json:"text"`
	Path     *string  `json:"path"`
	Link     *string  `json:"link"`
}

// CheckValues refuses a change whose value its field cannot hold. tool is
// the item's tool (exploded: one checklist item per call); the error says
// what is wrong in words the model and the person both understand.
func CheckValues(tool string, args json.RawMessage) error {
	var v itemValues
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	t, ok := itemTool(tool)
	if !ok {
		return fmt.Errorf("unknown tool %q", tool)
	}
	return t.check(v)
}

func checkOneOf(what string, s *string, set []string) error {
	if s == nil || !slices.Contains(set, *s) {
		return fmt.Errorf("%s %q is not one of %s", what, deref(s), strings.Join(set, ", "))
	}
	return nil
}

func checkDue(v itemValues) error {
	if v.Due == nil || !dateRE.MatchString(*v.Due) {
		return fmt.Errorf("due date %q is not a date written YYYY-MM-DD", deref(v.Due))
	}
	if _, err := time.Parse(time.DateOnly, *v.Due); err != nil {
		return fmt.Errorf("due date %q is not a day of the calendar", *v.Due)
	}
	return nil
}

func checkEstimate(v itemValues) error {
	if !estimateRE.MatchString(deref(v.Estimate)) {
		return fmt.Errorf("estimate %q is not a duration such as 90m, 2h or 1d", deref(v.Estimate))
	}
	if n := estimateSpan(*v.Estimate); n < 1 || n > maxEstimateM {
		return fmt.Errorf("estimate %q is out of range: between 1m and 250d (a day is 8 hours)", *v.Estimate)
	}
	return nil
}

func checkLabels(v itemValues) error {
	if len(v.Labels) == 0 {
		return errors.New("no labels given")
	}
	for _, l := range v.Labels {
		if err := checkLine("a label", &l, maxLabel); err != nil {
			return err
		}
	}
	return nil
}

// checkLink refuses an add_link item whose note or link text could not
// be written as one wikilink to a note: the link must not close, split or
// alias the [[…]] it goes in.
func checkLink(v itemValues) error {
	if err := checkLine("the note's path", v.Path, maxTitle*2); err != nil {
		return err
	}
	if !strings.HasSuffix(strings.ToLower(*v.Path), ".md") {
		return fmt.Errorf("%q is not a note's path", *v.Path)
	}
	if err := checkLine("the link", v.Link, maxTitle*2); err != nil {
		return err
	}
	if strings.ContainsAny(*v.Link, "[]|#^") {
		return fmt.Errorf("the link %q has a character a wikilink cannot hold", *v.Link)
	}
	return nil
}

// checkLine refuses a value that is not one line of text: blank, longer
// than max runes, or with a line break or other control character (which
// would end the frontmatter line or the checklist line it is written to).
func checkLine(what string, s *string, max int) error {
	v := deref(s)
	switch {
	case strings.TrimSpace(v) == "":
		return fmt.Errorf("%s is blank", what)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s is not valid UTF-8", what)
	case strings.ContainsFunc(v, unicode.IsControl):
		return fmt.Errorf("%s %q must be one line, without line breaks or control characters", what, v)
	case utf8.RuneCountInString(v) > max:
		return fmt.Errorf("%s is longer than %d characters", what, max)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
