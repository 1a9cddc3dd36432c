package query

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// result turns a finished (or waiting) session into what the client sees.
func (e *Engine) result(s *Session) Result {
	r := Result{
		SessionID:   s.ID,
		Type:        s.Type,
		Citations:   []Citation{},
		Gaps:        []string{},
		Questions:   []Question{},
		Logged:      s.Logged,
		Truncated:   s.Truncated,
		KeywordOnly: s.KeywordOnly,
		Transitions: s.Transitions,
	}
	switch {
	case s.State == StateWaitUser:
		r.Status = StatusClarification
		r.Answer = s.Explanation
		r.Questions = s.Questions
		return r
	case s.Degraded != "" && (s.Type == InputQuery || s.Type == InputBoth):
		r.Status = StatusDegraded
		r.Answer, r.Citations = degradedAnswer(s)
		r.Confidence = "none"
		if s.Cut != "" {
			r.Gaps = append(r.Gaps, s.Cut)
		}
		return r
	case s.Degraded != "" && s.Logged != nil:
		r.Status = StatusLogged
		r.Answer = fmt.Sprintf("Logged to %s as ## %s, unparsed: %s.", s.Logged.Path, s.Logged.Heading, s.Degraded) + appendNote(s)
		return r
	case s.Draft == nil:
		r.Status = StatusLogged
		if s.Logged != nil {
			r.Answer = fmt.Sprintf("Logged to %s as ## %s.", s.Logged.Path, s.Logged.Heading) + appendNote(s)
		}
		return r
	}
	r.Answer, r.Citations = validateCitations(s.Draft.Response, s.Draft.EvidenceCited, s.Entries)
	r.Answer, r.Citations = withOffline(s, r.Answer, r.Citations)
	r.Confidence = confidence(string(s.Draft.Confidence))
	r.Status = StatusAnswered
	if s.Partial {
		r.Status = StatusPartial
		r.Gaps = append(r.Gaps, s.openGaps()...)
		if r.Confidence == "high" {
			r.Confidence = "medium"
		}
	}
	if s.Cut != "" {
		r.Gaps = append(r.Gaps, s.Cut)
	}
	for _, g := range s.Draft.GapsDisclosed {
		if g = strings.TrimSpace(g); g != "" && !containsFold(r.Gaps, g) {
			r.Gaps = append(r.Gaps, g)
		}
	}
	if s.NoData || s.EmptyDraft {
		r.Confidence = "low"
	}
	return r
}

// appendNote is what the write of a log said (a new daily note, where it
// went and why), as a sentence after the answer.
func appendNote(s *Session) string {
	if s.Appended == nil || s.Appended.Note == "" {
		return ""
	}
	n := s.Appended.Note
	return " " + strings.ToUpper(n[:1]) + n[1:] + "."
}

func confidence(c string) string {
	switch c = strings.ToLower(strings.TrimSpace(c)); c {
	case "high", "medium", "low":
		return c
	}
	return "low"
}

var linkRE = regexp.MustCompile(`\[\[([^\[\]]+)\]\]`)

// validateCitations keeps the citations that point at an entry the flow
// actually retrieved and removes every other [[link]] from the answer: a
// model can invent a plausible-looking entry, and a citation must never
// send the user to something that does not say what the answer claims.
// Citations come in the order the answer uses them, then the rest of the
// cited evidence.
func validateCitations(answer string, cited []string, entries []Entry) (string, []Citation) {
	var out []Citation
	seen := map[string]bool{}
	add := func(en Entry) {
		if !seen[en.key()] {
			seen[en.key()] = true
			out = append(out, Citation{Path: en.Path, Heading: en.Heading, Line: en.Line, Link: en.Link()})
		}
	}
	find := func(link string) (Entry, bool) {
		for _, en := range entries {
			if sameLink(en, link) {
				return en, true
			}
		}
		return Entry{}, false
	}
	text := linkRE.ReplaceAllStringFunc(answer, func(m string) string {
		if en, ok := find(m); ok {
			add(en)
			return en.Link()
		}
		return ""
	})
	for _, c := range cited {
		if en, ok := find(c); ok {
			add(en)
		}
	}
	return tidy(text), out
}

var spaceBeforePunct = regexp.MustCompile(`[ \t]+([,.;:)])`)
var doubleSpace = regexp.MustCompile(`[ \t]{2,}`)

// tidy closes the gaps a removed link leaves.
func tidy(s string) string {
	s = strings.ReplaceAll(s, "()", "")
	s = spaceBeforePunct.ReplaceAllString(s, "$1")
	return strings.TrimSpace(doubleSpace.ReplaceAllString(s, " "))
}

// noDataAnswer says plainly that nothing was found, and where margin looked.
func noDataAnswer(s *Session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I found nothing in your notes about this, so I can't answer %q from them.", s.Query)
	if len(s.Attempts) > 0 {
		b.WriteString(" I searched:")
		var listed []string
		for _, a := range s.Attempts {
			if !slices.Contains(listed, a.Summary) {
				listed = append(listed, a.Summary)
				fmt.Fprintf(&b, "\n- %s", a.Summary)
			}
		}
	}
	b.WriteString("\nIf you log it, I can answer next time.")
	return b.String()
}

// degradedAnswer is the offline answer: the best retrieval hits, cited,
// and a plain statement that no model read them.
func degradedAnswer(s *Session) (string, []Citation) {
	var b strings.Builder
	if s.Cut != "" {
		fmt.Fprintf(&b, "No answer: the model was too slow, and the question was %s. ", s.Cut)
	} else {
		fmt.Fprintf(&b, "No answer: %s, so no model read your notes. ", s.Degraded)
	}
	cites := []Citation{}
	list := func(es []Entry) {
		for _, en := range bestEntries(es, offlineShown) {
			fmt.Fprintf(&b, "\n- %s %s", en.Link(), quoteOf(en))
			cites = append(cites, Citation{Path: en.Path, Heading: en.Heading, Line: en.Line, Link: en.Link()})
		}
	}
	if len(s.Offline) == 0 {
		b.WriteString("A plain search of your notes for the question's words found nothing.")
	} else {
		fmt.Fprintf(&b, "A plain search of your notes for the question's words found %s", entriesFound(len(s.Offline)))
		list(s.Offline)
	}
	// What the model's plan had retrieved before it failed is kept: a
	// model only adds.
	var planned []Entry
	for _, en := range s.Entries {
		logged := s.Logged != nil && en.Path == s.Logged.Path && en.Heading == s.Logged.Heading
		if !logged && !slices.ContainsFunc(s.Offline, func(o Entry) bool { return o.key() == en.key() }) {
			planned = append(planned, en)
		}
	}
	if len(planned) > 0 {
		fmt.Fprintf(&b, "\nThe search the model planned found %s", entriesFound(len(planned)))
		list(planned)
	}
	return b.String(), cites
}

// entriesFound counts n entries for a degraded answer, before its list.
func entriesFound(n int) string {
	switch {
	case n == 1:
		return "1 entry:"
	case n > offlineShown:
		return fmt.Sprintf("%d entries; the best %d:", n, offlineShown)
	}
	return fmt.Sprintf("%d entries:", n)
}

// offlineShown is how many entries the offline answer lists and cites.
const offlineShown = 10

// bestEntries returns the n best-ranked entries, best first; entries of
// equal rank (all of them, when none was ranked by a search) the latest
// first.
func bestEntries(es []Entry, n int) []Entry {
	out := slices.Clone(es)
	slices.Reverse(out) // es is in date order
	slices.SortStableFunc(out, func(a, b Entry) int { return cmp.Compare(b.Rank, a.Rank) })
	return out[:min(n, len(out))]
}

// quoteOf is what a degraded answer shows of en: its text's first line
// of prose, else its properties on one line.
func quoteOf(en Entry) string {
	if q := firstLine(proseOf(en.Text)); q != "" {
		return q
	}
	return firstLine(strings.ReplaceAll(en.Properties, "\n", " · "))
}

// proseOf is text from its first line outside a code block: a section
// that opens with a Dataview query showed "```dataview" as its quote.
// Text that is all code is its code, without the fences.
func proseOf(text string) string {
	var code []string
	fenced := false
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			fenced = !fenced
		case fenced:
			code = append(code, line)
		case t != "":
			return strings.Join(lines[i:], "\n")
		}
	}
	return strings.Join(code, "\n")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	return s
}

// stepDegraded finishes without a model: a log input is still appended
// (raw), a question gets the retrieval hits of its own words.
func (e *Engine) stepDegraded(ctx context.Context, s *Session) (State, string, error) {
	logging := s.ForceLog || s.Type == InputLog || s.Type == InputCorrection || s.Type == InputBoth
	if logging && s.Logged == nil {
		if s.Type == "" {
			s.Type = InputLog
		}
		s.Parsed = nil
		return StateStore, "storing the raw text unparsed", nil
	}
	if s.Type == "" {
		s.Type = InputQuery
	}
	if s.Query == "" {
		s.Query = s.Input
	}
	// The offline answer is the plain search of the question, whatever a
	// model retrieved before it failed: the answer says so.
	if !s.OfflineSearched {
		if err := e.searchOffline(ctx, s); err != nil {
			return "", "", err
		}
	}
	s.Draft = nil
	return StateComplete, fmt.Sprintf("%d entries found without a model", len(s.Offline)), nil
}
