package history_test

import (
	"context"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// A renamed task's writes are listed under its new path; another task's
// stay under theirs, and every write keeps the path it landed at.
func TestMoveTaskListsTheWritesUnderTheNewPath(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{})
	ctx := context.Background()
	for _, w := range []struct{ path, task string }{
		{"Margin/Reports/Plan.md", "Tasks/Plan.md"},
		{"Tasks/Plan.md", "Tasks/Plan.md"},
		{"Margin/Reports/Other.md", "Tasks/Other.md"},
	} {
		if _, err := f.root.WriteContext(edit.WithCause(ctx, edit.Cause{Actor: "a1", Task: w.task}), w.path, "", []byte("x\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.h.MoveTask(ctx, "Tasks/Plan.md", "Tasks/Garden.md"); err != nil {
		t.Fatal(err)
	}
	got, err := f.h.List(ctx, history.Filter{Task: "Tasks/Garden.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Path != "Tasks/Plan.md" || got[1].Path != "Margin/Reports/Plan.md" {
		t.Errorf("writes of Tasks/Garden.md: %+v; want the two about Tasks/Plan.md, where they landed", got)
	}
	if other, err := f.h.List(ctx, history.Filter{Task: "Tasks/Other.md"}); err != nil || len(other) != 1 {
		t.Errorf("writes of Tasks/Other.md: %+v, %v", other, err)
	}
}
