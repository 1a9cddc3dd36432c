package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// facts are what a run found from the vault's structure alone: enough for
// a review without a model, and the citable ground a model's review rests on.
type facts struct {
	changed  []index.NoteMeta // notes in scope whose content changed since the last run
	due      []dueTask
	moved    []movedDate
	progress []checklistProgress
	entries  []index.EntryMeta // log entries new since the last run
	marks    marksUpdate       // what this run saw that the last did not, for the next
	first    bool              // no run before: every note in scope is new
}

type dueTask struct {
	index.TaskMeta
	overdue bool
}

type movedDate struct {
	index.TaskMeta
	from string
}

type checklistProgress struct {
	path, title       string
	done, total       int
	wasDone, wasTotal int
	seen              bool // the last run saw the note
}

func (f facts) nothingNew() bool { return len(f.changed) == 0 }

func isOpen(status string) bool { return status != "done" && status != "cancelled" }

const outOfScopePrefix = "out of scope "

// outOfScopeKey prefixes the hash of a note a scope leaves out.
func outOfScopeKey(s Scope) string {
	b, _ := json.Marshal(s) // a Scope always marshals
	sum := sha256.Sum256(b)
	return outOfScopePrefix + hex.EncodeToString(sum[:6]) + " "
}

// gather compares the index with what the review's last run saw: only
// notes whose hash changed are read, so a run costs what changed.
func (r *Reviews) gather(ctx context.Context, def Definition, to time.Time, lookback string) (facts, error) {
	ix := r.opts.Index
	before, err := r.store.marks(ctx, def.Name)
	if err != nil {
		return facts{}, err
	}
	stats, err := ix.Stat(ctx)
	if err != nil {
		return facts{}, fmt.Errorf("reading the index for review %s: %w", def.Name, err)
	}
	f := facts{marks: marksUpdate{set: map[string]mark{}}, first: len(before) == 0}
	out := r.opts.OutputFolder + "/"
	paths := make([]string, 0, len(stats))
	for p, st := range stats {
		if strings.HasSuffix(p, ".md") && !strings.HasPrefix(p, out) && st.State == index.StateIndexed {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	outOfScope := outOfScopeKey(def.Scope)
	for _, p := range paths {
		hash := stats[p].Hash
		old, seen := before[p]
		if seen && (old.Hash == hash || old.Hash == outOfScope+hash) {
			continue
		}
		// A note the last run left out of its scope is new to this one.
		seen = seen && !strings.HasPrefix(old.Hash, outOfScopePrefix)
		n, err := ix.Note(ctx, p)
		if errors.Is(err, index.ErrNotFound) {
			continue // removed since the stat
		}
		if err != nil {
			return facts{}, fmt.Errorf("reading %s for review %s: %w", p, def.Name, err)
		}
		m := mark{Hash: hash, Entries: []string{}}
		if !def.Scope.includes(p, n.Tags, n.Kind == note.KindTask) {
			// Remembered with the scope it was left out of, so that it is
			// read again only when it or the scope changes.
			m.Hash = outOfScope + hash
			f.marks.set[p] = m
			continue
		}
		f.changed = append(f.changed, n)
		if n.Task != nil {
			m.Due = n.Task.Due
			if seen && old.Due != "" && old.Due != m.Due && isOpen(n.Task.Status) {
				f.moved = append(f.moved, movedDate{TaskMeta: *n.Task, from: old.Due})
			}
		}
		for _, c := range n.Checklist {
			m.Total++
			if c.State == 'x' {
				m.Done++
			}
		}
		if m.Total > 0 && (!seen || m.Done != old.Done || m.Total != old.Total) {
			f.progress = append(f.progress, checklistProgress{path: p, title: n.Title, done: m.Done, total: m.Total, wasDone: old.Done, wasTotal: old.Total, seen: seen})
		}
		for _, e := range n.Entries {
			key := e.Date + " " + e.Heading
			m.Entries = append(m.Entries, key)
			if !slices.Contains(old.Entries, key) && (seen || e.Date >= lookback) {
				f.entries = append(f.entries, e)
			}
		}
		f.marks.set[p] = m
	}
	for p := range before {
		if _, ok := stats[p]; !ok {
			f.marks.gone = append(f.marks.gone, p)
		}
	}

	tasks, err := ix.Tasks(ctx)
	if err != nil {
		return facts{}, fmt.Errorf("listing tasks for review %s: %w", def.Name, err)
	}
	today := to.Format(time.DateOnly)
	horizon := today
	if next, ok := def.Schedule.Next(to); ok {
		horizon = next.Format(time.DateOnly)
	}
	for _, t := range tasks {
		if t.Due == "" || !isOpen(t.Status) || t.Due > horizon || !def.Scope.includes(t.Path, t.Labels, true) || strings.HasPrefix(t.Path, out) {
			continue
		}
		f.due = append(f.due, dueTask{TaskMeta: t, overdue: t.Due < today})
	}
	slices.SortStableFunc(f.due, func(a, b dueTask) int { return strings.Compare(a.Due, b.Due) })
	return f, nil
}
