package history_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// A process killed while writing whose pid the kernel gave to another
// process since is gone all the same: its write is settled at the next
// start, and committed, not left waiting for the live stranger.
func TestOpenSettlesTheWritesOfADeadProcessWhosePidWasReused(t *testing.T) {
	if _, ok := history.Started(os.Getpid()); !ok {
		t.Skip("no /proc: a process's start cannot be told, and its pid alone says")
	}
	dir, root, db := openState(t)
	h, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task)
	cause := edit.Cause{ChangeSet: "cs1", Item: "c1"}
	if _, err := h.Begin(context.Background(), edit.Record{Path: "Tasks/ship.md", Before: []byte(task), Existed: true, After: []byte(task + "x\n"), Cause: cause}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task+"x\n")
	// And a write that landed and waits for its commit.
	done, err := h.Begin(context.Background(), edit.Record{Path: "Tasks/other.md", After: []byte("y\n")})
	if err != nil {
		t.Fatal(err)
	}
	done(true)
	if _, err := db.Exec(`UPDATE history SET commit_id = ''`); err != nil {
		t.Fatal(err)
	}
	h.Close()
	// The writer died; its pid is now this test's parent's, a live process
	// that started at another time.
	start, _ := history.Started(os.Getppid())
	if _, err := db.Exec(`UPDATE history SET pid = ?, pid_start = ?`, os.Getppid(), start+"0"); err != nil {
		t.Fatal(err)
	}
	if h, err = history.Open(context.Background(), db, root, history.Options{Git: "-"}); err != nil {
		t.Fatal(err)
	}
	es, _ := h.List(context.Background(), history.Filter{})
	if len(es) != 2 || es[1].Path != "Tasks/ship.md" {
		t.Fatalf("after settling: %+v, want the dead process's write, landed", es)
	}
	h.Close() // commits what waits
	var waiting int
	if err := db.QueryRow(`SELECT COUNT(*) FROM history WHERE commit_id = ''`).Scan(&waiting); err != nil || waiting != 0 {
		t.Fatalf("%d writes of the dead process wait for their commit (%v), want none", waiting, err)
	}
}

// A margin killed and not yet reaped by its parent (a zombie) is gone:
// its writes are settled.
func TestOpenSettlesTheWritesOfAnExitedProcessNotYetReaped(t *testing.T) {
	if _, ok := history.Started(os.Getpid()); !ok {
		t.Skip("no /proc")
	}
	child := exec.Command("sleep", "0.1")
	if err := child.Start(); err != nil {
		t.Skip("no sleep program")
	}
	start, _ := history.Started(child.Process.Pid)
	defer child.Wait()
	// Not waited for: once it exits it is a zombie until Wait.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child.Process.Pid))
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("the child never became a zombie: %v", err)
		}
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); f[0] == "Z" {
			break
		}
	}
	dir, root, db := openState(t)
	h, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task)
	if _, err := h.Begin(context.Background(), edit.Record{Path: "Tasks/ship.md", Before: []byte(task), Existed: true, After: []byte(task + "x\n")}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task+"x\n")
	h.Close()
	if _, err := db.Exec(`UPDATE history SET pid = ?, pid_start = ?`, child.Process.Pid, start); err != nil {
		t.Fatal(err)
	}
	if h, err = history.Open(context.Background(), db, root, history.Options{Git: "-"}); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if es, _ := h.List(context.Background(), history.Filter{}); len(es) != 1 {
		t.Fatalf("after settling: %+v, want the zombie's write, landed", es)
	}
}
