package task

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault/note"
)

// slowEditor has every note that exists open, as it is on disk, and
// holds each ApplyEdit until released: a person who takes their time to
// look at an edit, or an editor that hangs.
type slowEditor struct {
	dir     string
	entered chan string // the path of an ApplyEdit that waits
	release chan struct{}
}

func (e slowEditor) Open(p string) (string, int, bool) {
	b, err := os.ReadFile(filepath.Join(e.dir, p))
	return string(b), 1, err == nil
}

func (e slowEditor) ApplyEdit(ctx context.Context, p string, _ int, _ string) (bool, error) {
	select {
	case e.entered <- p:
	default:
	}
	select {
	case <-e.release:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil // refused: nothing is written
}

// A decision a person ticks in a change set file that waits on the editor
// (ApplyEdit of the task note) does not hold up the agents: creating an
// agent answers while it waits.
func TestCreateIsNotBlockedByAChangeSetFileDecision(t *testing.T) {
	v := querytest.SampleVault(t)
	ed := slowEditor{dir: v.Dir(), entered: make(chan string, 1), release: make(chan struct{})}
	t.Cleanup(func() { close(ed.release) })
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := newRuntime(ctx, v, nil, Options{Editor: ed})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rt.store.createAgent(ctx, chaosTask, "", querytest.Now)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(v.Dir(), chaosTask))
	if err != nil {
		t.Fatal(err)
	}
	n := note.Parse(chaosTask, src, note.Options{})
	args := `{"priority":"P0"}`
	if _, err := rt.store.db.ExecContext(ctx, `INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
		VALUES (?, 1, 'op', 'update_task_priority', ?, 'Set priority to P0', ?, '2026-11-22T09:00:00Z')`,
		a.ID, args, changes.ItemBase(n, "update_task_priority", json.RawMessage(args))); err != nil {
		t.Fatal(err)
	}
	if err := rt.changes.Route(ctx, a.ID, changes.Owner{Task: a.Task, OutputName: a.OutputName}, 1, n); err != nil {
		t.Fatal(err)
	}
	sets, err := rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	runAgents(t, ctx, cancel, v, rt)
	<-v.Ready()

	// The person ticks the item and saves the file.
	p := filepath.Join(v.Dir(), sets[0].Path)
	file, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ticked := strings.Replace(string(file), "- [ ] Set priority to P0 ^c1", "- [x] Set priority to P0 ^c1", 1)
	if ticked == string(file) {
		t.Fatalf("no open line to tick:\n%s", file)
	}
	if err := os.WriteFile(p, []byte(ticked), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ed.entered:
		if got != chaosTask {
			t.Fatalf("the editor was asked to edit %s, want the task %s", got, chaosTask)
		}
	case <-time.After(hangTimeout):
		t.Fatal("the decision never reached the editor")
	}

	// While it waits there, a new agent is made and woken.
	createCtx, stop := context.WithTimeout(ctx, hangTimeout)
	defer stop()
	other, err := rt.Create(createCtx, "Tasks/Renew passport.md")
	if err != nil {
		t.Fatalf("agents/create while a decision waits on the editor: %v", err)
	}
	if other.Task != "Tasks/Renew passport.md" {
		t.Errorf("created %+v", other)
	}
}
