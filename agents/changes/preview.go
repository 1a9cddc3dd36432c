package changes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/note"
)

// ErrDecided refuses the preview of an item that is no longer open: what
// it would change is no question any more.
var ErrDecided = errors.New("only an open item can be previewed")

// ErrUnreadable says an item can neither be applied to its note nor
// found stale: the note cannot be read as a task now (its frontmatter
// does not parse).
var ErrUnreadable = errors.New("the note cannot be read")

// Preview is what applying one item of a change set alone would make of
// its note now (changes/preview): the note as it is and as it would be,
// or, when the item would not apply (stale), why.
type Preview struct {
	ChangeSet string
	Item      string
	Summary   string
	Path      string // the note the item changes
	Exists    bool   // false for a note a proposed edit would create
	InEditor  bool   // Before is the editor's buffer, not the file
	Before    []byte
	After     []byte // nil when stale
	Stale     bool
	Reason    string // why it is stale, or that applying would write nothing
	// Properties are the frontmatter keys the item changes, as a person
	// reads properties rather than YAML lines.
	Properties []PropertyChange
}

// PropertyChange is one frontmatter key an item adds, removes or changes.
type PropertyChange struct {
	Key    string
	Before string // "" when added
	After  string // "" when removed
	Change string // added | removed | changed
}

// Preview is what applying item of the change set id alone would make of
// its note as it is now: the buffer when the note is open in the editor,
// as applying would find it. It is computed by the code that applies
// (applyTo) on a copy of the items, and writes nothing.
func (c *Changes) Preview(ctx context.Context, id, item string) (Preview, error) {
	if err := c.expireDue(ctx); err != nil {
		return Preview{}, err
	}
	cs, err := c.store.ChangeSet(ctx, id)
	if err != nil {
		return Preview{}, err
	}
	i := itemIndex(cs, item)
	if i < 0 {
		return Preview{}, fmt.Errorf("%w: no item %s in %s", ErrChangeSetNotFound, item, id)
	}
	if it := cs.Items[i]; !it.open() {
		return Preview{}, fmt.Errorf("item %s of %s is %s: %w", item, id, it.Status, ErrDecided)
	}
	o, err := c.owner(ctx, cs)
	if err != nil {
		return Preview{}, err
	}
	cur, err := c.v.Files.CurrentOf(c.opts.Editor, o.Task)
	if err != nil {
		return Preview{}, fmt.Errorf("previewing %s of %s: %w", item, id, err)
	}
	items := slices.Clone(cs.Items)
	out, _, applied := c.applyTo(o.Task, cur, items, []int{i})
	p := Preview{ChangeSet: id, Item: item, Summary: items[i].Summary, Path: o.Task, Exists: cur.Exists, InEditor: cur.InEditor, Before: cur.Content}
	switch {
	case items[i].Status == ItemStale:
		p.Stale, p.Reason = true, items[i].Detail
		return p, nil
	case len(applied) == 0:
		// Neither applicable nor stale: the note cannot be read as a task
		// now (its frontmatter does not parse), and applying would say so.
		return Preview{}, fmt.Errorf("previewing %s of %s: %w: %s", item, id, ErrUnreadable, strings.TrimPrefix(items[i].Detail, "not applied: "))
	}
	p.After = out
	if string(p.After) == string(p.Before) {
		p.Reason = "the note already reads so: applying writes nothing"
	}
	p.Properties = PropertyChanges(cur.Content, out)
	return p, nil
}

// PropertyChanges are the frontmatter keys that differ between two
// versions of a note, in the order the later version has them, then the
// removed ones. A key is matched case-insensitively, as Obsidian does.
func PropertyChanges(before, after []byte) []PropertyChange {
	fields := func(src []byte) []note.Field {
		if n := note.Parse("", src, note.Options{}); n.Frontmatter != nil {
			return n.Frontmatter.Fields
		}
		return nil
	}
	was, now := fields(before), fields(after)
	find := func(fs []note.Field, key string) (string, bool) {
		for _, f := range fs {
			if strings.EqualFold(f.Key, key) {
				return propertyValue(f.Value), true
			}
		}
		return "", false
	}
	var out []PropertyChange
	for _, f := range now {
		v := propertyValue(f.Value)
		switch old, ok := find(was, f.Key); {
		case !ok:
			out = append(out, PropertyChange{Key: f.Key, After: v, Change: "added"})
		case old != v:
			out = append(out, PropertyChange{Key: f.Key, Before: old, After: v, Change: "changed"})
		}
	}
	for _, f := range was {
		if _, ok := find(now, f.Key); !ok {
			out = append(out, PropertyChange{Key: f.Key, Before: propertyValue(f.Value), Change: "removed"})
		}
	}
	return out
}

// propertyValue is a frontmatter value as Obsidian's properties show it:
// a list as its items joined by commas, a scalar as written, a map as
// JSON.
func propertyValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []any:
		items := make([]string, len(v))
		for i, x := range v {
			items[i] = propertyValue(x)
		}
		return strings.Join(items, ", ")
	case map[string]any:
		b, _ := json.Marshal(v)
		return string(b)
	}
	n := note.Frontmatter{Fields: []note.Field{{Key: "v", Value: v}}}
	return n.String("v")
}
