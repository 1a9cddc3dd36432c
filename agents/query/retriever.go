package query

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

// Retriever executes the Planner's instructions against the index. It
// makes no model call: the Planner already decided what to look for, and
// the index answers date ranges, globs, tags and keywords (with the domain
// vocabulary as synonyms) in milliseconds.
type Retriever struct {
	// Index answers the searches, and gives a keyword hit in a non-daily
	// note its whole section (as the index stored it) rather than a
	// snippet.
	Index Index
	// Exclude are folders whose notes are never evidence: margin's own
	// output folder (the global context is given to the agents
	// separately) and the templates folders.
	Exclude    []string
	MaxEntries int
	// Meaning, unless nil, searches a question by its meaning and its
	// words fused (hybrid) before the searches of its words: the notes it
	// finds come first. Without vectors or a model it finds nothing more
	// than the searches of words do, and Question's KeywordOnly says why.
	Meaning *retrieve.Retriever
}

// Attempt records one executed instruction (seed 003 RetrievalAttempt).
type Attempt struct {
	Attempt     int         `json:"attempt"`
	Strategy    string      `json:"strategy"`
	Instruction Instruction `json:"instruction"`
	Found       int         `json:"found"`
	Summary     string      `json:"summary"`
	Err         string      `json:"error,omitempty"`
}

// Retrieval is what a round of instructions found.
type Retrieval struct {
	Entries  []Entry
	Attempts []Attempt
	// Total counts distinct entries found before the cap.
	Total     int
	Truncated bool
	Warnings  []string
	// KeywordOnly says why the question was searched by its words alone
	// when Meaning would have searched it by meaning too (no embedding
	// model, no vectors yet, the model unavailable): the answer says so.
	KeywordOnly string
}

var isoDay = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// Retrieve runs the instructions concurrently (the Planner asks for
// several kinds of evidence at once), merges what they found without
// duplicates, keeps at most MaxEntries in date order and says so when it
// had to drop some. first numbers the attempts.
func (r *Retriever) Retrieve(ctx context.Context, instructions []Instruction, vocab map[string]string, first int) (Retrieval, error) {
	expand := expansion(vocab)
	results := make([][]Entry, len(instructions))
	attempts := make([]Attempt, len(instructions))
	var wg sync.WaitGroup
	for i, in := range instructions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries, err := r.one(ctx, in, expand)
			attempts[i] = Attempt{Attempt: first + i, Strategy: strategy(in), Instruction: in, Found: len(entries), Summary: summary(in)}
			if err != nil {
				attempts[i].Err = err.Error()
			}
			results[i] = entries
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Retrieval{}, err
	}
	var out Retrieval
	out.Attempts = attempts
	seen := map[string]int{} // key → index in out.Entries
	for i, entries := range results {
		if attempts[i].Err != "" {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %s", attempts[i].Summary, attempts[i].Err))
		} else if len(entries) == 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: nothing found", attempts[i].Summary))
		}
		for _, en := range entries {
			if at, ok := seen[en.key()]; ok {
				// Found by several keywords: it answers more of the question.
				out.Entries[at].Rank += en.Rank
				continue
			}
			seen[en.key()] = len(out.Entries)
			out.Entries = append(out.Entries, en)
		}
	}
	sortEntries(out.Entries)
	out.Total = len(out.Entries)
	if r.MaxEntries > 0 && len(out.Entries) > r.MaxEntries {
		out.Entries = out.Entries[len(out.Entries)-r.MaxEntries:]
		out.Truncated = true
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d entries matched; kept the latest %d (query.max_entries)", out.Total, r.MaxEntries))
	}
	return out, nil
}

// sortEntries orders by date (undated notes first), then path and line.
func sortEntries(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if a.Date != b.Date {
			return a.Date < b.Date
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Line < b.Line
	})
}

func strategy(in Instruction) string {
	var parts []string
	if len(in.Keywords) > 0 {
		parts = append(parts, "keyword")
	}
	if in.From != "" || in.To != "" {
		parts = append(parts, "date_range")
	}
	if in.Glob != "" {
		parts = append(parts, "glob")
	}
	if len(in.Tags) > 0 {
		parts = append(parts, "tags")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func summary(in Instruction) string {
	var parts []string
	if len(in.Keywords) > 0 {
		parts = append(parts, fmt.Sprintf("keywords %q", in.Keywords))
	}
	if in.From != "" || in.To != "" {
		parts = append(parts, fmt.Sprintf("%s..%s", in.From, in.To))
	}
	if in.Glob != "" {
		parts = append(parts, "glob "+in.Glob)
	}
	if len(in.Tags) > 0 {
		parts = append(parts, fmt.Sprintf("tags %v", in.Tags))
	}
	if in.Purpose != "" {
		return in.Purpose + " (" + strings.Join(parts, ", ") + ")"
	}
	return strings.Join(parts, ", ")
}

var errEmptyInstruction = errors.New("the instruction restricts nothing (no keywords, dates, glob or tags)")

// one executes one instruction. Keywords are searched one by one as
// phrases, so "bench press" does not match every "press"; without keywords
// the date range, glob and tags list what they cover.
func (r *Retriever) one(ctx context.Context, in Instruction, expand map[string][]string) ([]Entry, error) {
	for _, d := range []string{in.From, in.To} {
		if d != "" && !isoDay.MatchString(d) {
			return nil, fmt.Errorf("date %q is not YYYY-MM-DD", d)
		}
	}
	var keywords []string
	for _, k := range in.Keywords {
		if k = strings.TrimSpace(k); k != "" {
			keywords = append(keywords, k)
		}
	}
	expand = withOtherNumber(expand, keywords)
	base := index.Query{From: in.From, To: in.To, Glob: in.Glob, Tags: in.Tags, Limit: r.limit()}
	var hits []index.Hit
	switch {
	case len(keywords) > 0:
		for _, k := range keywords {
			q := base
			q.Text, q.Mode, q.Expand = k, index.ModePhrase, expand
			hs, err := r.search(ctx, q)
			if err != nil {
				return nil, err
			}
			hits = append(hits, hs...)
		}
	case in.From != "" || in.To != "":
		if in.Glob == "" && len(in.Tags) == 0 {
			// Whole entries straight from the index: the common "what
			// happened that week" instruction needs no second read.
			ems, err := r.Index.Entries(ctx, in.From, in.To)
			if err != nil {
				return nil, err
			}
			out := make([]Entry, 0, len(ems))
			for _, em := range ems {
				out = append(out, Entry{Path: em.Path, Heading: em.Heading, Line: em.Line, Date: em.Date, Correction: em.Correction, Text: em.Text})
			}
			return out, nil
		}
		hs, err := r.Index.Search(ctx, base)
		if err != nil {
			return nil, err
		}
		hits = hs
	case in.Glob != "" || len(in.Tags) > 0:
		hs, err := r.Index.Search(ctx, base)
		if err != nil {
			return nil, err
		}
		hits = hs
	default:
		return nil, errEmptyInstruction
	}
	return r.entries(ctx, hits)
}

// Question searches the question's own words together, as queries the
// index ranks (BM25 over all the words, title and headings first): how
// margin looks when no model planned the search, and what an offline
// answer cites. Searched one by one, each word's best notes came first,
// and a question's most frequent word (a note's "canvas" in every
// language) crowded out the note that answers it. The entries keep the
// searches' order in their Rank; at most MaxEntries, the best.
func (r *Retriever) Question(ctx context.Context, question string, vocab map[string]string, attempt int) (Retrieval, error) {
	words := keywordsOf(question)
	in := Instruction{Purpose: "the question's own words, all of them as written, then in either number, then any", Keywords: words}
	a := Attempt{Attempt: attempt, Strategy: strategy(in), Instruction: in, Summary: summary(in)}
	out := Retrieval{}
	// The question as asked first: a model of meaning reads its stop
	// words and word order too, and finds notes for a question made of
	// nothing else ("what did I do last week").
	hits, fallback, err := r.byMeaning(ctx, question)
	if err != nil {
		return Retrieval{}, err
	}
	out.KeywordOnly = fallback
	if r.Meaning != nil && fallback == "" {
		a.Strategy, a.Summary = "hybrid+"+a.Strategy, "by meaning and words, then "+a.Summary
	}
	if len(words) == 0 && len(hits) == 0 {
		a.Err = "the question holds no word to search for"
		out.Attempts, out.Warnings = []Attempt{a}, []string{a.Summary + ": " + a.Err}
		return out, nil
	}
	// The notes that hold every word come first, then those that hold
	// some: searching any of them alone, a note with one common word in
	// its title or headings outranks one whose text holds them all. The
	// words as written come before their other number (withOtherNumber),
	// whose guess may be another word ("news" → "new").
	// A question whose words have no other number (Chinese, say) makes
	// no second search of all of them.
	type step struct {
		mode   index.Mode
		expand map[string][]string
	}
	exact := expansion(vocab)
	var steps []step
	if len(words) >= 2 {
		steps = append(steps, step{index.ModeAll, exact})
	}
	either := exact
	if slices.ContainsFunc(words, func(w string) bool { return otherNumber(w) != nil }) {
		either = withOtherNumber(exact, words)
		if len(words) >= 2 {
			steps = append(steps, step{index.ModeAll, either})
		}
	}
	if len(words) > 0 {
		steps = append(steps, step{index.ModeAny, either})
	}
	q := index.Query{Text: strings.Join(words, " "), Limit: r.limit()}
	total := len(hits)
	had := map[string]bool{}
	for _, h := range hits {
		had[h.Path] = true
	}
	for _, st := range steps {
		q.Mode, q.Expand = st.mode, st.expand
		res, err := r.Index.Find(ctx, q)
		if err != nil {
			return Retrieval{}, err
		}
		for _, h := range res.Hits {
			if !had[h.Path] {
				had[h.Path] = true
				hits = append(hits, h)
			}
		}
		total = res.Total // any of the words: every note the searches found
	}
	if r.MaxEntries > 0 && len(hits) > r.MaxEntries {
		hits, out.Truncated = hits[:r.MaxEntries], true
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d notes matched; kept the best %d (query.max_entries)", total, r.MaxEntries))
	}
	ranked(hits)
	if out.Entries, err = r.entries(ctx, hits); err != nil {
		return Retrieval{}, err
	}
	sortEntries(out.Entries)
	a.Found, out.Total = len(out.Entries), total
	if a.Found == 0 {
		out.Warnings = append(out.Warnings, a.Summary+": nothing found")
	}
	out.Attempts = []Attempt{a}
	return out, nil
}

// byMeaning searches the question as asked by meaning and words fused,
// when Meaning is set; fallback says why it could not search by meaning
// ("" when it did, or when there is no Meaning to ask).
func (r *Retriever) byMeaning(ctx context.Context, question string) (hits []index.Hit, fallback string, err error) {
	if r.Meaning == nil {
		return nil, "", nil
	}
	res, err := r.Meaning.Find(ctx, index.Query{Text: question, Mode: retrieve.ModeHybrid, Limit: r.limit()})
	if err != nil || res.Fallback != "" {
		return nil, res.Fallback, err
	}
	return res.Hits, "", nil
}

// limit is how many hits a search asks for: one more than the cap, so
// that a truncated retrieval is noticed.
func (r *Retriever) limit() int {
	if r.MaxEntries <= 0 {
		return index.DefaultLimit
	}
	return r.MaxEntries + 1
}

// search runs a keyword search, its hits ranked by their place (see ranked).
func (r *Retriever) search(ctx context.Context, q index.Query) ([]index.Hit, error) {
	hs, err := r.Index.Search(ctx, q)
	ranked(hs)
	return hs, err
}

// ranked sets each hit's Rank from its place in the search's order, as
// reciprocal rank fusion does (1/(60+place)): the index's own Rank is a
// BM25 score, which does not compare across its tiers nor across
// searches, while these keep a search's order and add up over the
// keywords that found an entry.
func ranked(hits []index.Hit) {
	const k = 60 // Cormack, Clarke and Büttcher's constant
	for i := range hits {
		hits[i].Rank = 1 / float64(k+i+1)
	}
}

// entries turns hits into whole entries: daily entries and other sections
// as the index stored them.
func (r *Retriever) entries(ctx context.Context, hits []index.Hit) ([]Entry, error) {
	days := map[string]map[string]Entry{} // date → path#line → entry
	notes := map[string]index.NoteText{}  // path → its properties and sections
	var out []Entry
	for _, h := range hits {
		if r.excluded(h.Path) {
			continue
		}
		if h.Date != "" {
			byLine, ok := days[h.Date]
			if !ok {
				ems, err := r.Index.Entries(ctx, h.Date, h.Date)
				if err != nil {
					return nil, err
				}
				byLine = map[string]Entry{}
				for _, em := range ems {
					byLine[fmt.Sprintf("%s:%d", em.Path, em.Line)] = Entry{Path: em.Path, Heading: em.Heading, Line: em.Line, Date: em.Date, Correction: em.Correction, Text: em.Text}
				}
				days[h.Date] = byLine
			}
			if en, ok := byLine[fmt.Sprintf("%s:%d", h.Path, h.SectionLine)]; ok {
				en.Rank = h.Rank
				out = append(out, en)
				continue
			}
		}
		en := Entry{Path: h.Path, Heading: h.Heading, Line: h.SectionLine, Date: h.Date, Text: h.Snippet, Rank: h.Rank}
		nt, ok := notes[h.Path]
		if !ok {
			var err error
			// A note gone from the index since the search keeps its snippet.
			if nt, err = r.Index.Text(ctx, h.Path); err != nil && !errors.Is(err, index.ErrNotFound) {
				return nil, err
			}
			notes[h.Path] = nt
		}
		if len(nt.Sections) > 0 && nt.Sections[0].Line == h.SectionLine {
			en.Properties = nt.Properties
		}
		// The section's text; the snippet only for a note gone from the
		// index, or a section of neither text nor properties. (A match in
		// the properties has them in its snippet: quoted twice, they would
		// cost the prompt twice.)
		if t := sectionText(nt.Sections, h.SectionLine); t != "" || en.Properties != "" {
			en.Text = t
		}
		out = append(out, en)
	}
	return out, nil
}

func (r *Retriever) excluded(p string) bool {
	for _, ex := range r.Exclude {
		if ex = strings.Trim(ex, "/"); ex != "" && (p == ex || strings.HasPrefix(p, ex+"/")) {
			return true
		}
	}
	return false
}

// sectionText is the text of the stored section whose heading is on line,
// with the sections under it (deeper headings, written back as ATX
// headings) up to the next heading of the same or a higher level; a
// preamble is its own text. "" when no section starts on line.
func sectionText(secs []index.SectionMeta, line int) string {
	for i, s := range secs {
		if s.Line != line {
			continue
		}
		parts := []string{s.Text}
		for _, sub := range secs[i+1:] {
			if s.Level == 0 || sub.Level <= s.Level {
				break
			}
			parts = append(parts, strings.Repeat("#", sub.Level)+" "+sub.Heading, sub.Text)
		}
		return strings.TrimSpace(strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "\n\n"))
	}
	return ""
}

// entriesText renders entries for a prompt, each under its link.
func entriesText(entries []Entry) string {
	text, _ := entriesTextCapped(entries, 0)
	return text
}

// entriesTextCapped renders entries within budget characters (0: no cap).
// Over budget it keeps the newest entries, which are last, and reports that
// it left some out.
func entriesTextCapped(entries []Entry, budget int) (string, bool) {
	if len(entries) == 0 {
		return "(no entries)", false
	}
	blocks := make([]string, len(entries))
	for i, en := range entries {
		var b strings.Builder
		b.WriteString(en.Link())
		if en.Date != "" {
			fmt.Fprintf(&b, " (%s)", en.Date)
		}
		if en.Correction {
			b.WriteString(" [correction]")
		}
		if en.Properties != "" {
			b.WriteString("\n" + en.Properties)
		}
		b.WriteString("\n" + en.Text + "\n")
		if len(en.Parsed) > 0 {
			fmt.Fprintf(&b, "parsed: %s\n", compactJSON(en.Parsed))
		}
		blocks[i] = b.String()
	}
	first, size := len(blocks), 0
	for first > 0 && (budget <= 0 || size+len(blocks[first-1]) <= budget) {
		first--
		size += len(blocks[first])
	}
	return strings.TrimSpace(strings.Join(blocks[first:], "\n")), first > 0
}
