package task

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// A wake shows the agent a few notes near its task by meaning that are not
// linked either way: evidence the links miss, and links a person may want.
// They are kept cheap: few, each a short excerpt of its nearest section,
// the first thing left out when the context is over budget, and on an
// incremental wake shown only when they changed since the agent's last.
const (
	// relatedLimit is how many related notes a wake shows at most: past
	// the nearest few, nearness by meaning says little.
	relatedLimit = 3
	// excerptRunes bounds one note's excerpt: a sentence or two, enough
	// to tell what the section is about (some 70 tokens).
	excerptRunes = 280
	// relatedTokens caps the related notes' section of the prompt; a note
	// that would pass it is left out.
	relatedTokens = 360
)

// relatedNote is a note a wake shows as related to its task.
type relatedNote struct {
	changes.RelatedNote
	Heading string // the nearest section's heading path; "" for the note's beginning
	Excerpt string
}

// findRelated reads the notes near the task by meaning that the wake
// shows. A failure to find or read them costs the wake nothing but them:
// it is logged, and the wake goes on without.
func (w *waking) findRelated(ctx context.Context) []relatedNote {
	rt := w.rt
	if rt.v.Related == nil {
		return nil
	}
	// Related notes leave out margin's own files (other tasks' reports,
	// journals, change sets): no evidence of the person's, no note to link.
	found, err := rt.v.Related.RelatedNow(ctx, w.agent.Task, relatedLimit)
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Warn("finding the notes related to a task", "agent", w.agent.ID, "task", w.agent.Task, "err", err)
		}
		return nil
	}
	var out []relatedNote
	tokens := 0
	for _, f := range found {
		snap, err := rt.v.Files.Read(f.Path)
		if err != nil {
			continue // gone or unreadable since it was embedded
		}
		link, err := w.linkText(ctx, f.Path)
		if err != nil {
			rt.log.Warn("naming a related note", "agent", w.agent.ID, "note", f.Path, "err", err)
			continue
		}
		r := relatedNote{RelatedNote: changes.RelatedNote{Path: f.Path, Link: link}, Heading: f.Heading,
			Excerpt: excerpt(snap.Content, f.Line, f.Heading != "")}
		if tokens += estimateTokens(relatedBlock(r)); tokens > relatedTokens {
			break
		}
		out = append(out, r)
	}
	return out
}

// linkText is how the task links the note at p as Obsidian writes a link
// by default: by the note's name when that resolves to it alone from the
// task, else by its path without ".md".
func (w *waking) linkText(ctx context.Context, p string) (string, error) {
	full := strings.TrimSuffix(p, path.Ext(p))
	name := path.Base(full)
	to, err := w.rt.v.Index.ResolveLink(ctx, w.agent.Task, name)
	switch {
	case err == nil && to == p:
		return name, nil
	case err == nil, errors.Is(err, index.ErrNotFound):
		return full, nil
	}
	return "", err
}

// excerpt is the beginning of the section of src at line (a heading's
// line when heading, else the line the note's body starts on), up to the
// next heading, cut to excerptRunes at a word.
func excerpt(src []byte, line int, heading bool) string {
	o := note.ParseOutline(src)
	start, end := o.BodyOffset, len(src)
	if len(o.Sections) > 0 {
		end = o.Sections[0].Offset
	}
	if heading {
		i := slices.IndexFunc(o.Sections, func(s note.Section) bool { return s.Line == line })
		if i < 0 {
			return ""
		}
		start, end = o.Sections[i].Body, len(src)
		if i+1 < len(o.Sections) {
			end = o.Sections[i+1].Offset
		}
	}
	text := strings.Join(strings.Fields(string(src[start:end])), " ")
	if utf8.RuneCountInString(text) <= excerptRunes {
		return text
	}
	r := []rune(text)[:excerptRunes]
	if i := strings.LastIndexByte(string(r), ' '); i > excerptRunes/2 {
		return string(r)[:i] + " …"
	}
	return string(r) + "…"
}

// relatedPaths are the paths of notes, in order.
func relatedPaths(notes []relatedNote) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.Path
	}
	return out
}

// sameNotes reports whether two lists of paths hold the same notes,
// whatever their order (nearness shifts with every embedded edit).
func sameNotes(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// shown is what the wake showed the agent for its link tool.
func (w *waking) shown() changes.Shown {
	s := changes.Shown{}
	for _, r := range w.related {
		s.Related = append(s.Related, r.RelatedNote)
	}
	return s
}
