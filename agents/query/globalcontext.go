package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// The global context (seed 003 §7.7): Margin/Context.md, a short markdown
// memory the Observer keeps and every Planner and Analyzer reads. Items are
// lines `- key: value (confidence, YYYY-MM-DD)` under the sections
// Preferences, Patterns, Facts and Insights, so a person can read and edit
// them; lines margin cannot read are kept as written.

func (e *Engine) domainsFolder() string { return path.Join(e.v.OutputFolder, "Domains") }

// ContextPath is the vault path of the global context.
func (e *Engine) ContextPath() string { return path.Join(e.v.OutputFolder, "Context.md") }

func (e *Engine) archivePath() string {
	return path.Join(e.v.OutputFolder, "Context Archive.md")
}

// Context returns the global context's path and content ("" when margin
// has not written it yet).
func (e *Engine) Context(ctx context.Context) (string, string, error) {
	text, err := e.readContext()
	return e.ContextPath(), text, err
}

func (e *Engine) readContext() (string, error) {
	b, err := e.v.Files.ReadFile(e.ContextPath())
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the global context: %w", err)
	}
	return string(b), nil
}

var categories = []struct{ name, heading string }{
	{"preference", "Preferences"},
	{"pattern", "Patterns"},
	{"fact", "Facts"},
	{"insight", "Insights"},
}

type contextItem struct {
	Category   string
	Key        string
	Value      string
	Confidence string
	Date       string
	Raw        string // a line margin could not read, kept verbatim
}

type globalContext struct {
	Version int
	Items   []contextItem
}

var itemRE = regexp.MustCompile(`^- ([A-Za-z0-9_.-]+): (.*?) \((certain|likely|tentative)(?:, (\d{4}-\d{2}-\d{2}))?\)\s*$`)

// parseContext reads the global context with vault/note, as the index
// reads it: the version from the header, the items from the lines of each
// category's `## ` section up to the next `## ` heading (a `## ` line in a
// code block is no heading). A header that does not decode leaves the
// version 0, as a missing one does. A file whose markup is over the parse
// budget is refused: rendering what could not be read would lose it.
func parseContext(text string) (globalContext, error) {
	var gc globalContext
	src := []byte(text)
	var header struct {
		Version int `yaml:"version"`
	}
	if _, err := note.DecodeFrontmatter(src, &header); err == nil {
		gc.Version = header.Version
	}
	o := note.ParseOutline(src)
	if o.Plain != "" {
		return gc, fmt.Errorf("the global context is not read, so not rewritten: %s", o.Plain)
	}
	secs := o.Sections
	for i, s := range secs {
		if s.Level != 2 {
			continue
		}
		category := ""
		for _, c := range categories {
			if strings.HasPrefix(strings.ToLower(s.Text), strings.ToLower(c.heading)) {
				category = c.name
			}
		}
		if category == "" {
			continue
		}
		// Deeper headings, and level-1 ones too, are lines of the category,
		// kept as written.
		end := len(src)
		for _, next := range secs[i+1:] {
			if next.Level == 2 {
				end = next.Offset
				break
			}
		}
		for line := range strings.SplitSeq(strings.ReplaceAll(text[s.Body:end], "\r\n", "\n"), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if m := itemRE.FindStringSubmatch(line); m != nil {
				gc.Items = append(gc.Items, contextItem{Category: category, Key: m[1], Value: m[2], Confidence: m[3], Date: m[4]})
			} else {
				gc.Items = append(gc.Items, contextItem{Category: category, Raw: line})
			}
		}
	}
	return gc, nil
}

func (gc globalContext) render(day string) string {
	var b strings.Builder
	b.WriteString(edit.RenderFrontmatter(edit.Field{Key: "margin", Value: "context"}, edit.Field{Key: "last_updated", Value: day}, edit.Field{Key: "version", Value: gc.Version}))
	b.WriteString("\n# Global Context\n")
	for _, c := range categories {
		fmt.Fprintf(&b, "\n## %s\n\n", c.heading)
		n := 0
		for _, it := range gc.Items {
			if it.Category != c.name {
				continue
			}
			n++
			b.WriteString(it.line() + "\n")
		}
		if n == 0 {
			b.WriteString("- (none yet)\n")
		}
	}
	return b.String()
}

func (it contextItem) line() string {
	if it.Raw != "" {
		return it.Raw
	}
	if it.Date != "" {
		return fmt.Sprintf("- %s: %s (%s, %s)", it.Key, it.Value, it.Confidence, it.Date)
	}
	return fmt.Sprintf("- %s: %s (%s)", it.Key, it.Value, it.Confidence)
}

// apply upserts updates by (category, key) and reports how many changed
// something.
func (gc *globalContext) apply(updates []ContextUpdate, day string) int {
	n := 0
	for _, u := range updates {
		cat := strings.ToLower(strings.TrimSpace(string(u.Category)))
		if !slices.ContainsFunc(categories, func(c struct{ name, heading string }) bool { return c.name == cat }) {
			continue
		}
		key := contextKey(u.Key)
		value := strings.Join(strings.Fields(u.Value), " ")
		conf := strings.ToLower(strings.TrimSpace(string(u.Confidence)))
		if conf != "certain" && conf != "likely" {
			conf = "tentative"
		}
		if key == "" || value == "" {
			continue
		}
		it := contextItem{Category: cat, Key: key, Value: value, Confidence: conf, Date: day}
		i := slices.IndexFunc(gc.Items, func(x contextItem) bool { return x.Raw == "" && x.Category == cat && x.Key == key })
		switch {
		case i < 0:
			gc.Items = append(gc.Items, it)
		case gc.Items[i].Value == value && gc.Items[i].Confidence == conf:
			continue
		default:
			gc.Items[i] = it
		}
		n++
	}
	return n
}

func contextKey(k string) string {
	k = strings.ToLower(strings.TrimSpace(k))
	k = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		case r == ' ':
			return '_'
		}
		return -1
	}, k)
	// "same_point." is "same_point": a near-duplicate key updates the item.
	return strings.TrimRight(k, "._-")
}

// shrink moves items out until the rendered context fits maxTokens
// (characters / 4, llm.EstimateTokens' ratio): first the oldest tentative
// insights, then other tentative items, then likely insights. Certain
// items and the user's own lines are never moved.
func (gc *globalContext) shrink(maxTokens int, day string) []contextItem {
	var moved []contextItem
	tiers := []func(contextItem) bool{
		func(it contextItem) bool { return it.Category == "insight" && it.Confidence == "tentative" },
		func(it contextItem) bool { return it.Confidence == "tentative" },
		func(it contextItem) bool { return it.Category == "insight" && it.Confidence == "likely" },
	}
	for _, movable := range tiers {
		for (len(gc.render(day))+3)/4 > maxTokens {
			oldest := -1
			for i, it := range gc.Items {
				if it.Raw == "" && movable(it) && (oldest < 0 || it.Date < gc.Items[oldest].Date) {
					oldest = i
				}
			}
			if oldest < 0 {
				break
			}
			moved = append(moved, gc.Items[oldest])
			gc.Items = slices.Delete(gc.Items, oldest, oldest+1)
		}
	}
	return moved
}

// updateContext runs the Observer and writes what it learnt; it also says
// how many updates it dropped as empty of content ("ok: ok"), which would
// only take a line of the person's context.
func (e *Engine) updateContext(ctx context.Context, s *Session, trigger string) (int, int, error) {
	obs, err := e.observe(ctx, s, s.active(), trigger, s.context)
	if err != nil {
		return 0, 0, err
	}
	n := len(obs.Updates)
	obs.Updates = slices.DeleteFunc(obs.Updates, func(u ContextUpdate) bool {
		return contextKey(u.Key) == "" || emptyOfContent(u.Key) || emptyOfContent(u.Value)
	})
	dropped := n - len(obs.Updates)
	if !obs.ShouldUpdate || len(obs.Updates) == 0 {
		return 0, dropped, nil
	}
	if trigger == triggerCorrection {
		// What a user states in a correction is certain (seed §12.10 rule 5).
		for i := range obs.Updates {
			obs.Updates[i].Confidence = "certain"
		}
	}
	written, err := e.writeContext(s.cause(ctx, "global context", roleObserver), obs.Updates)
	return written, dropped, err
}

// writeContext applies updates to Margin/Context.md, re-applying them to
// the version a person saved meanwhile (see editNote). What they move out
// is archived before the context is written, so an item is never lost;
// and once, though the change may run again after a lost race.
func (e *Engine) writeContext(ctx context.Context, updates []ContextUpdate) (int, error) {
	day := e.opts.Now().Format(time.DateOnly)
	n := 0
	archived := map[contextItem]bool{}
	err := e.editNote(ctx, e.ContextPath(), func(cur []byte, _ bool) ([]byte, error) {
		gc, err := parseContext(string(cur))
		if err != nil {
			return nil, err
		}
		if n = gc.apply(updates, day); n == 0 {
			return nil, nil
		}
		gc.Version++
		var moved []contextItem
		for _, it := range gc.shrink(e.opts.ContextMaxTokens, day) {
			if !archived[it] {
				moved = append(moved, it)
			}
		}
		if len(moved) > 0 {
			if err := e.archive(ctx, moved, day); err != nil {
				return nil, err
			}
			for _, it := range moved {
				archived[it] = true
			}
		}
		return []byte(gc.render(day)), nil
	})
	if err != nil {
		return 0, fmt.Errorf("writing the global context: %w", err)
	}
	return n, nil
}

// archive appends items moved out of the context to Margin/Context Archive.md.
func (e *Engine) archive(ctx context.Context, items []contextItem, day string) error {
	var lines strings.Builder
	for _, it := range items {
		fmt.Fprintf(&lines, "- %s archived — %s %s\n", day, it.Category, strings.TrimPrefix(it.line(), "- "))
	}
	err := e.editNote(ctx, e.archivePath(), func(content []byte, _ bool) ([]byte, error) {
		if len(content) == 0 {
			content = []byte(edit.RenderFrontmatter(edit.Field{Key: "margin", Value: "context-archive"}) + "\n# Global Context Archive\n\nItems moved out of [[Context]] to keep it within its budget.\n\n")
		}
		out := append([]byte(nil), content...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		return append(out, lines.String()...), nil
	})
	if err != nil {
		return fmt.Errorf("writing the context archive: %w", err)
	}
	return nil
}
