package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/margin-md/margin/vault/index"
)

// The deterministic floor under the query agents (SPEC §1.3, "a model only
// adds"): a plan's fields are checked before they are obeyed, a plan that
// finds nothing is relaxed and then replaced by the plain search of the
// question, and an answer cites at least what the offline answer cites.

// checkPlan drops what in the plan's instructions cannot be meant: a date
// that is not a calendar day, a range that ends before it starts, a glob
// that matches no note and a tag no note carries. Obeyed, each would only
// make the search find nothing. It says what it dropped.
func (e *Engine) checkPlan(ctx context.Context, p *Plan) ([]string, error) {
	var dropped []string
	drop := func(format string, args ...any) { dropped = append(dropped, fmt.Sprintf(format, args...)) }
	kept := p.RetrievalInstructions[:0]
	for _, in := range p.RetrievalInstructions {
		for _, d := range []*string{&in.From, &in.To} {
			*d = strings.TrimSpace(*d)
			if *d == "" {
				continue
			}
			if _, err := time.Parse(time.DateOnly, *d); err != nil {
				drop("date %q is not a day", *d)
				*d = ""
			}
		}
		if in.From != "" && in.To != "" && in.To < in.From {
			drop("range %s..%s ends before it starts", in.From, in.To)
			in.From, in.To = "", ""
		}
		if in.Glob = strings.TrimSpace(in.Glob); in.Glob != "" {
			ok, err := e.matchesAny(ctx, index.Query{Glob: in.Glob})
			if err != nil {
				return nil, err
			}
			if !ok {
				drop("glob %q matches no note", in.Glob)
				in.Glob = ""
			}
		}
		var tags []string
		for _, t := range in.Tags {
			if t = strings.TrimSpace(t); t == "" || slices.Contains(tags, t) {
				continue
			}
			ok, err := e.matchesAny(ctx, index.Query{Tags: []string{t}})
			if err != nil {
				return nil, err
			}
			if !ok {
				drop("tag %q is on no note", t)
				continue
			}
			tags = append(tags, t)
		}
		in.Tags = tags
		var words []string
		for _, k := range in.Keywords {
			if k = strings.TrimSpace(k); k != "" && !slices.ContainsFunc(words, func(w string) bool { return strings.EqualFold(w, k) }) {
				words = append(words, k)
			}
		}
		in.Keywords = words
		if strategy(in) == "none" {
			drop("an instruction (%s) was left with nothing to search for", strings.TrimSpace(in.Purpose))
			continue
		}
		kept = append(kept, in)
	}
	p.RetrievalInstructions = kept
	return dropped, nil
}

// matchesAny says whether any note passes q's filters. A glob the index
// cannot read matches nothing.
func (e *Engine) matchesAny(ctx context.Context, q index.Query) (bool, error) {
	q.Limit = 1
	hits, err := e.retriever.Index.Search(ctx, q)
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return false, nil
	}
	return slices.ContainsFunc(hits, func(h index.Hit) bool { return !e.retriever.excluded(h.Path) }), nil
}

// relaxation is a plan's instructions made wider, and how.
type relaxation struct {
	what string
	ins  []Instruction
}

// relaxations are the plan's instructions made wider step by step — without
// tags, then without a glob, then without dates — each step only when it
// changes something; an instruction left with nothing to search for is
// left out.
func relaxations(ins []Instruction) []relaxation {
	steps := []struct {
		what  string
		widen func(*Instruction) bool
	}{
		{"without tags", func(in *Instruction) bool { ch := len(in.Tags) > 0; in.Tags = nil; return ch }},
		{"without a glob", func(in *Instruction) bool { ch := in.Glob != ""; in.Glob = ""; return ch }},
		{"without dates", func(in *Instruction) bool { ch := in.From != "" || in.To != ""; in.From, in.To = "", ""; return ch }},
	}
	var out []relaxation
	cur := slices.Clone(ins)
	for _, st := range steps {
		changed := false
		next := make([]Instruction, 0, len(cur))
		for _, in := range cur {
			if st.widen(&in) {
				changed = true
			}
			if strategy(in) != "none" {
				next = append(next, in)
			}
		}
		cur = next
		if changed && len(cur) > 0 {
			out = append(out, relaxation{st.what, slices.Clone(cur)})
		}
	}
	return out
}

// searchOffline keeps in s.Offline what the plain search of the
// question's words finds: what the offline answer rests on and cites (see
// degradedAnswer), and so the least an online answer cites.
func (e *Engine) searchOffline(ctx context.Context, s *Session) error {
	r, err := e.retriever.Question(ctx, s.Query, s.active().Vocabulary, len(s.Attempts)+1)
	if err != nil {
		return fmt.Errorf("retrieving: %w", err)
	}
	s.Offline, s.OfflineSearched, s.KeywordOnly = r.Entries, true, r.KeywordOnly
	s.Truncated = s.Truncated || r.Truncated
	return nil
}

// withOffline makes sure an online answer cites at least what the offline
// answer cites: the offline citations it lacks are added, listed under the
// answer; an answer empty of content is replaced by them. It says when the
// evidence came from the plain search because the plan found nothing.
func withOffline(s *Session, answer string, cites []Citation) (string, []Citation) {
	best := bestEntries(s.Offline, offlineShown)
	var missing []Entry
	for _, en := range best {
		if !slices.ContainsFunc(cites, func(c Citation) bool { return c.Path == en.Path && c.Heading == en.Heading }) {
			missing = append(missing, en)
		}
	}
	var b strings.Builder
	switch {
	case s.EmptyDraft:
		fmt.Fprintf(&b, "The model's answer said nothing (%q), so this is what a plain search of your notes for the question's words found:", firstLine(s.Draft.Response))
		if len(best) == 0 {
			b.Reset()
			fmt.Fprintf(&b, "The model's answer said nothing (%q), and a plain search of your notes for the question's words found nothing.", firstLine(s.Draft.Response))
		}
		cites = nil
		missing = best
	default:
		b.WriteString(answer)
		if len(missing) > 0 {
			b.WriteString("\n\nA plain search of your notes for the question's words also found:")
		}
	}
	for _, en := range missing {
		fmt.Fprintf(&b, "\n- %s %s", en.Link(), quoteOf(en))
		cites = append(cites, Citation{Path: en.Path, Heading: en.Heading, Line: en.Line, Link: en.Link()})
	}
	if s.Fallback {
		b.WriteString("\n\nThe search the model planned came up empty, so this rests on a plain search of your notes for the question's words.")
	}
	if cites == nil {
		cites = []Citation{}
	}
	return b.String(), cites
}

// emptyOfContent says a model's answer says nothing: no word beyond filler
// ("ok", "yes", "n/a") once headings and markup are set aside, as small
// models write when they have lost the thread.
func emptyOfContent(answer string) bool {
	for line := range strings.SplitSeq(answer, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if !fillerWords[strings.ToLower(w)] {
				return false
			}
		}
	}
	return true
}

var fillerWords = map[string]bool{
	"ok": true, "okay": true, "yes": true, "no": true, "n": true, "a": true, "na": true,
	"none": true, "null": true, "nil": true, "todo": true, "tbd": true, "answer": true, "summary": true, "response": true,
}
