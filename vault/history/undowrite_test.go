package history_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// writeAs writes the file at p as margin does for actor, and returns the
// write's id in the history.
func (f *fixture) writeAs(t *testing.T, actor, p string, change func(string) string) int64 {
	t.Helper()
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: actor, Task: "Tasks/ship.md"})
	if _, err := f.root.Change(ctx, nil, p, func(cur edit.Current) ([]byte, error) {
		return []byte(change(string(cur.Content))), nil
	}); err != nil {
		t.Fatal(err)
	}
	es, err := f.h.List(context.Background(), history.Filter{Limit: 1})
	if err != nil || len(es) != 1 || es[0].Path != p {
		t.Fatalf("history %+v, %v", es, err)
	}
	return es[0].ID
}

const (
	report1 = "---\nmargin: report\nupdated: 2026-11-24T09:00:00Z\n---\n## Achieved\n- Draft\n"
	report2 = "---\nmargin: report\nupdated: 2026-11-25T10:30:00Z\n---\n## Achieved\n- Draft\n- Review\n"
	daily   = "# 2026-11-24\n\n## 09:00\nStarted the draft.\n\n## 11:00\nLunch with Dana.\n"
	entry   = "## 10:15\nReviewed the export with [[Ship it]].\n\n"
)

// Every write margin makes that is not a change item's is undone by its
// id: the file gets back what the write replaced, a person's edit
// elsewhere in it stays, whether the history still keeps the whole file
// or only the lines the write changed (compacted once committed).
func TestUndoWriteByID(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		name := "just written"
		if compacted {
			name = "compacted"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("report", func(t *testing.T) {
				f := open(t, t.TempDir(), history.Options{Git: "-"})
				write(t, f.dir, "Margin/Reports/ship.md", report1)
				id := f.writeAs(t, "agent-1", "Margin/Reports/ship.md", func(string) string { return report2 })
				if compacted {
					f.h.Close()
				}
				u, err := f.h.UndoWrite(context.Background(), nil, id)
				if err != nil || u.Path != "Margin/Reports/ship.md" || u.Write != id {
					t.Fatalf("undo = %+v, %v", u, err)
				}
				if got := read(t, f.dir, "Margin/Reports/ship.md"); got != report1 {
					t.Fatalf("after undo:\n%s\nwant:\n%s", got, report1)
				}
				// The undo is a write of its own: undoing it redoes the report.
				es, err := f.h.List(context.Background(), history.Filter{Limit: 1})
				if err != nil || es[0].UndoOf != id {
					t.Fatalf("latest write %+v, %v: want the undo of %d", es, err, id)
				}
				if _, err := f.h.UndoWrite(context.Background(), nil, es[0].ID); err != nil {
					t.Fatal(err)
				}
				if got := read(t, f.dir, "Margin/Reports/ship.md"); got != report2 {
					t.Fatalf("after undo of the undo:\n%s\nwant:\n%s", got, report2)
				}
			})
			t.Run("log entry, the person wrote on", func(t *testing.T) {
				f := open(t, t.TempDir(), history.Options{Git: "-"})
				write(t, f.dir, "Daily/2026-11-24.md", daily)
				id := f.writeAs(t, "person via CLI", "Daily/2026-11-24.md", func(s string) string {
					return strings.Replace(s, "## 11:00", entry+"## 11:00", 1)
				})
				if compacted {
					f.h.Close()
				}
				mine := "\n## 15:00\nShipped.\n"
				write(t, f.dir, "Daily/2026-11-24.md", "Top line.\n"+read(t, f.dir, "Daily/2026-11-24.md")+mine)
				if _, err := f.h.UndoWrite(context.Background(), nil, id); err != nil {
					t.Fatal(err)
				}
				if got, want := read(t, f.dir, "Daily/2026-11-24.md"), "Top line.\n"+daily+mine; got != want {
					t.Fatalf("after undo:\n%s\nwant:\n%s", got, want)
				}
			})
			t.Run("a file margin created", func(t *testing.T) {
				f := open(t, t.TempDir(), history.Options{Git: "-"})
				id := f.writeAs(t, "agent-1", "Margin/Journal/ship.md", func(string) string { return "- 2026-11-24 09:00 — noted\n" })
				if compacted {
					f.h.Close()
				}
				if _, err := f.h.UndoWrite(context.Background(), nil, id); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(f.dir, "Margin/Journal/ship.md")); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the journal margin created is still there: %v", err)
				}
			})
		})
	}
}

// An undo that would overwrite what the person or a later write of
// margin's put there is refused with the three versions, and writes
// nothing; a write that applied change items is undone through its set.
func TestUndoWriteRefusals(t *testing.T) {
	t.Run("the person edited margin's lines", func(t *testing.T) {
		f := open(t, t.TempDir(), history.Options{Git: "-"})
		write(t, f.dir, "Daily/2026-11-24.md", daily)
		id := f.writeAs(t, "person via CLI", "Daily/2026-11-24.md", func(s string) string {
			return strings.Replace(s, "## 11:00", entry+"## 11:00", 1)
		})
		edited := strings.Replace(read(t, f.dir, "Daily/2026-11-24.md"), "Reviewed the export", "Reviewed the export twice", 1)
		write(t, f.dir, "Daily/2026-11-24.md", edited)
		_, err := f.h.UndoWrite(context.Background(), nil, id)
		var ce *history.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, edit.ErrConflict) {
			t.Fatalf("undo = %v, want a ConflictError", err)
		}
		// (The whole files, or, once the history compacted the write, the lines it changed.)
		if !strings.Contains(daily, ce.Original) || !strings.Contains(ce.Margin, "Reviewed the export with") || ce.Current != edited || ce.Later != nil {
			t.Errorf("conflict data %#v", *ce)
		}
		if got := read(t, f.dir, "Daily/2026-11-24.md"); got != edited {
			t.Error("a refused undo wrote the note")
		}
	})
	t.Run("a later write of margin's", func(t *testing.T) {
		f := open(t, t.TempDir(), history.Options{Git: "-"})
		write(t, f.dir, "Margin/Reports/ship.md", report1)
		first := f.writeAs(t, "agent-1", "Margin/Reports/ship.md", func(string) string { return report2 })
		second := f.writeAs(t, "agent-1", "Margin/Reports/ship.md", func(s string) string {
			return strings.Replace(s, "2026-11-25T10:30:00Z", "2026-11-26T08:00:00Z", 1) + "- Publish\n"
		})
		f.h.Close()
		now := read(t, f.dir, "Margin/Reports/ship.md")
		_, err := f.h.UndoWrite(context.Background(), nil, first)
		var ce *history.ConflictError
		if !errors.As(err, &ce) || ce.Later == nil || ce.Later.Write != second {
			t.Fatalf("undo = %v (%+v), want a refusal naming write %d", err, ce, second)
		}
		if !strings.Contains(err.Error(), "undo it first") {
			t.Errorf("the refusal %q does not say what to do", err)
		}
		if got := read(t, f.dir, "Margin/Reports/ship.md"); got != now {
			t.Error("a refused undo wrote the report")
		}
	})
	t.Run("a change item's write", func(t *testing.T) {
		f := open(t, t.TempDir(), history.Options{Git: "-"})
		write(t, f.dir, "Tasks/ship.md", task)
		f.apply(t, "Tasks/ship.md", "cs1", "c1", func(s string) string { return strings.Replace(s, "estimate: 1h", "estimate: 2h", 1) })
		es, err := f.h.List(context.Background(), history.Filter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.h.UndoWrite(context.Background(), nil, es[0].ID)
		if !errors.Is(err, history.ErrItemWrite) || !strings.Contains(err.Error(), "margin undo cs1 c1") {
			t.Errorf("undo of an item's write = %v, want ErrItemWrite naming the item's undo", err)
		}
	})
	t.Run("no such write", func(t *testing.T) {
		f := open(t, t.TempDir(), history.Options{Git: "-"})
		if _, err := f.h.UndoWrite(context.Background(), nil, 42); !errors.Is(err, history.ErrNothingToUndo) {
			t.Errorf("undo of write 42 = %v, want ErrNothingToUndo", err)
		}
	})
}
