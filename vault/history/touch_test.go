package history_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

func estimate(to string) func(string) string {
	return func(s string) string {
		i := strings.Index(s, "estimate: ")
		j := i + strings.IndexByte(s[i:], '\n')
		return s[:i] + "estimate: " + to + s[j:]
	}
}

// undoRefused undoes the item, wants it refused for margin's later write
// of item c1 of set later, with the three texts, and the note untouched.
func (f *fixture) undoRefused(t *testing.T, set, later string) {
	t.Helper()
	before := read(t, f.dir, "Tasks/ship.md")
	_, err := f.h.Undo(context.Background(), nil, set, "c1")
	var ce *history.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, edit.ErrConflict) || ce.Later == nil {
		t.Fatalf("undo of %s = %v, want it refused for a later write", set, err)
	}
	if ce.Later.ChangeSet != later || len(ce.Later.Items) != 1 || ce.Later.Items[0] != "c1" || ce.Later.Write == 0 {
		t.Errorf("undo of %s refused for %+v, want item c1 of %s", set, ce.Later, later)
	}
	if !strings.Contains(err.Error(), "item c1 of "+later) {
		t.Errorf("the refusal says %q, not what to undo first", err)
	}
	if !strings.Contains(ce.Original, "estimate: 1h") || !strings.Contains(ce.Margin, "estimate: 2h") || ce.Current != before {
		t.Errorf("the refusal's texts = %+v", ce)
	}
	if read(t, f.dir, "Tasks/ship.md") != before {
		t.Fatal("a refused undo wrote the note")
	}
}

func (f *fixture) undo(t *testing.T, set string) {
	t.Helper()
	if _, err := f.h.Undo(context.Background(), nil, set, "c1"); err != nil {
		t.Fatalf("undo of %s: %v", set, err)
	}
}

// An item's lines that later writes of margin changed and changed back
// hold what the item wrote, yet its undo would take back their change
// too: it is refused until they are undone, newest first.
func TestUndoWaitsForTheLaterWritesThatChangedItsLines(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	write(t, f.dir, "Tasks/ship.md", task)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", estimate("2h"))
	// A later item elsewhere in the note is no reason to wait.
	f.apply(t, "Tasks/ship.md", "cs0", "c1", func(s string) string { return strings.Replace(s, "- [ ] Draft", "- [x] Draft", 1) })
	f.apply(t, "Tasks/ship.md", "cs2", "c1", estimate("3h"))
	f.apply(t, "Tasks/ship.md", "cs3", "c1", estimate("2h"))
	f.undoRefused(t, "cs1", "cs3")

	f.undo(t, "cs3") // back to 3h
	f.undo(t, "cs3") // the undo undone: 2h again, by cs3's write
	f.undoRefused(t, "cs1", "cs3")
	f.undo(t, "cs3")
	f.undo(t, "cs2") // back to 2h, as cs1 wrote it, and nothing later stands
	f.undo(t, "cs1")
	if got, want := read(t, f.dir, "Tasks/ship.md"), strings.Replace(task, "- [ ] Draft", "- [x] Draft", 1); got != want {
		t.Fatalf("after undoing cs3, cs2 and cs1:\n%s\nwant:\n%s", got, want)
	}
}

// The person changed the item's line, and a later write of margin's
// changed it back: that write changed the item's lines all the same.
func TestUndoWaitsForALaterWriteThatWroteTheItemsLinesBack(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	write(t, f.dir, "Tasks/ship.md", task)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", estimate("2h"))
	write(t, f.dir, "Tasks/ship.md", estimate("3h")(read(t, f.dir, "Tasks/ship.md")))
	f.apply(t, "Tasks/ship.md", "cs2", "c1", estimate("2h"))
	f.undoRefused(t, "cs1", "cs2")
	f.undo(t, "cs2") // the person's 3h: now the person's edit refuses it
	_, err := f.h.Undo(context.Background(), nil, "cs1", "c1")
	var ce *history.ConflictError
	if !errors.As(err, &ce) || ce.Later != nil || !strings.Contains(ce.Current, "estimate: 3h") {
		t.Fatalf("undo of cs1 at the person's line = %v (%+v), want refused for the person's edit", err, ce)
	}
}

// Pruning keeps what a refusal reads: an undo of an undo stands as a
// redo though the write it redid is older than history.keep, and the
// refusal names it, the write to undo first.
func TestPruneKeepsWhatAnUndosRefusalReads(t *testing.T) {
	f := openAging(t)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", estimate("2h"))
	f.apply(t, "Tasks/ship.md", "cs2", "c1", estimate("3h"))
	f.apply(t, "Tasks/ship.md", "cs3", "c1", estimate("2h"))
	f.undo(t, "cs3")
	f.undo(t, "cs3") // redone
	f.later(t)
	f.undoRefused(t, "cs1", "cs3")
}

// A write of no change item (the agent's own, say) that changed an
// item's lines and back cannot be undone: the item's undo stays refused,
// naming it, after history.keep too.
func TestUndoWaitsForALaterWriteOfNoItem(t *testing.T) {
	f := openAging(t)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", estimate("2h"))
	agent := edit.WithCause(context.Background(), edit.Cause{Actor: "agent-1", Task: "Tasks/ship.md"})
	for _, to := range []string{"3h", "2h"} {
		if _, err := f.root.Change(agent, nil, "Tasks/ship.md", func(cur edit.Current) ([]byte, error) {
			return []byte(estimate(to)(string(cur.Content))), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	refused := func() {
		t.Helper()
		_, err := f.h.Undo(context.Background(), nil, "cs1", "c1")
		var ce *history.ConflictError
		if !errors.As(err, &ce) || ce.Later == nil || ce.Later.Actor != "agent-1" || len(ce.Later.Items) != 0 ||
			!strings.Contains(err.Error(), "by agent-1") {
			t.Fatalf("undo of cs1 = %v, want it refused for agent-1's write", err)
		}
	}
	refused()
	f.later(t)
	refused()
}
