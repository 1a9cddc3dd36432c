package history_test

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
	"github.com/margin-md/margin/vault/store"
)

// BenchmarkChange is the cost of a write through edit.Root.Change of a
// task note (2 KB), without history and with its record (the part on the
// write's path: the git commit is made after, off it).
func BenchmarkChange(b *testing.B) {
	for _, recorded := range []bool{false, true} {
		b.Run(fmt.Sprintf("recorded=%v", recorded), func(b *testing.B) {
			dir := b.TempDir()
			root, _ := edit.Open(dir)
			defer root.Close()
			if recorded {
				db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				h, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
				if err != nil {
					b.Fatal(err)
				}
				defer h.Close()
				root.SetRecorder(h)
				defer root.SetRecorder(nil)
			}
			ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent", ChangeSet: "cs", Item: "c1"})
			body := make([]byte, 2048)
			for i := range body {
				body[i] = 'a' + byte(i%26)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := root.Change(ctx, nil, "Tasks/t.md", func(edit.Current) ([]byte, error) {
					return fmt.Appendf(body[:len(body):len(body)], "\nwrite %d\n", i), nil
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGitCommit is the cost of committing one recorded write to
// refs/margin/history (off the write's path), in batches of 20.
func BenchmarkGitCommit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Fatal(err, string(out))
	}
	root, _ := edit.Open(dir)
	defer root.Close()
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent", ChangeSet: "cs", Item: "c1"})
	b.ResetTimer()
	for n := 0; n < b.N; n += 20 {
		b.StopTimer()
		// Record 20 writes with git off, then time their commits.
		h, _ := history.Open(context.Background(), db, root, history.Options{Git: "-"})
		root.SetRecorder(h)
		for i := range 20 {
			root.Change(ctx, nil, fmt.Sprintf("Margin/Reports/r%d.md", i%5), func(cur edit.Current) ([]byte, error) {
				return fmt.Appendf(cur.Content, "line %d %d\n", n, i), nil
			})
		}
		root.SetRecorder(nil)
		h.Close()
		uncommit(b, db)
		b.StartTimer()
		h, _ = history.Open(context.Background(), db, root, history.Options{})
		h.Close() // commits what is recorded before it returns
	}
}

func uncommit(b *testing.B, db *sql.DB) {
	if _, err := db.Exec(`UPDATE history SET commit_id = '' WHERE commit_id = '-'`); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkChangeOfATaskWithItems is the cost of a recorded write of a
// task note to which 100 change items of other sets were applied: each
// write looks up whether it changes those items' lines (touch.go).
func BenchmarkChangeOfATaskWithItems(b *testing.B) {
	_, root, db := openState(b)
	historytest.Record(b, db, root, history.Options{Git: "-"})
	for i := range 100 {
		ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent", ChangeSet: fmt.Sprintf("cs%d", i), Item: "c1"})
		if _, err := root.Change(ctx, nil, "Tasks/t.md", func(cur edit.Current) ([]byte, error) {
			return fmt.Appendf(cur.Content, "- [ ] step %d\n", i), nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent"})
	b.ResetTimer()
	for i := range b.N {
		if _, err := root.Change(ctx, nil, "Tasks/t.md", func(cur edit.Current) ([]byte, error) {
			return fmt.Appendf(cur.Content, "note %d\n", i), nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
