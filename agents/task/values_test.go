package task

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/note"
)

// set_task_language fills in a language, never replaces the person's.
func TestSetTaskLanguageLeavesASetLanguage(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	p := filepath.Join(c.v.Dir(), chaosTask)
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	withLanguage := strings.Replace(string(src), "type: task\n", "type: task\nlanguage: en\n", 1)
	if err := os.WriteFile(p, []byte(withLanguage), 0o644); err != nil {
		t.Fatal(err)
	}
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("set_task_language", map[string]any{"language": "de"})}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	if got, _ := os.ReadFile(p); string(got) != withLanguage {
		t.Errorf("the task's language was overwritten:\n%s", got)
	}
	reqs := c.fake.Requests()
	if len(reqs) < 2 || !strings.Contains(string(reqs[1].Raw), "the task's language is already en") {
		t.Errorf("the model was not told the language is set")
	}
}

// A person's save made from a copy older than margin's last write (they
// saved while items were being decided) does not leave decided items
// reading as open: margin writes those lines as decided again.
func TestStaleSaveOfAChangeSetFileGetsItsDecidedLinesBack(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("add_multiple_checklist_items", map[string]any{"items": []any{
					map[string]any{"title": "One"}, map[string]any{"title": "Two"}, map[string]any{"title": "Three"}}}),
				goodReport,
			}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	ctx := t.Context()
	sets, err := c.rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 || len(sets[0].Items) != 3 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	cs := sets[0]
	p := filepath.Join(c.v.Dir(), cs.Path)
	pending, err := os.ReadFile(p) // the person's copy
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.rt.changes.Decide(ctx, cs.ID, []changes.ItemDecision{{Item: "c1", Verdict: changes.Rejected}, {Item: "c2", Verdict: changes.Rejected}, {Item: "c3", Verdict: changes.Rejected, Reason: "later"}}); err != nil {
		t.Fatal(err)
	}
	// Their save lands after margin's write, with a line of their own.
	saved := strings.Replace(string(pending), "\n- [ ] ", "\nAsk Dana.\n- [ ] ", 1)
	if err := os.WriteFile(p, []byte(saved), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.changes.DecideFile(ctx, cs.Path); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if n := strings.Count(string(got), "\n- [-] "); n != 3 || !strings.Contains(string(got), "\nstatus: resolved\n") {
		t.Errorf("%d of 3 rejected lines read as rejected:\n%s", n, got)
	}
	if !strings.Contains(string(got), "\nAsk Dana.\n") {
		t.Errorf("the person's own line was lost:\n%s", got)
	}
}

// An item stored before values were checked (an older margin, or an edit
// of the database) is refused when a person confirms it: nothing reaches
// the task note, and the item is settled with why, not left pending.
func TestConfirmingAnInvalidStoredItemWritesNothing(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	ctx := t.Context()
	a, err := c.rt.store.Agent(ctx, c.id)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(c.v.Dir(), chaosTask)
	task, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := note.Parse(chaosTask, task, note.Options{})
	args := `{"due_date":"2026-13-45"}`
	if _, err := c.rt.store.db.ExecContext(ctx, `INSERT INTO proposals (agent_id, run_id, operation_id, tool, args, summary, base, created_at)
		VALUES (?, 1, 'op', 'update_task_due_date', ?, 'Set due date to 2026-13-45', ?, '2026-11-22T09:00:00Z')`,
		a.ID, args, changes.ItemBase(n, "update_task_due_date", json.RawMessage(args))); err != nil {
		t.Fatal(err)
	}
	if err := c.rt.changes.Route(ctx, a.ID, changes.Owner{Task: a.Task, OutputName: a.OutputName}, 1, n); err != nil {
		t.Fatal(err)
	}
	sets, err := c.rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	cs, err := c.rt.changes.ConfirmAll(ctx, sets[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if it := cs.Items[0]; it.Status != changes.ItemStale || !strings.Contains(it.Detail, "not a day of the calendar") {
		t.Errorf("item %s (%s), want refused with why", it.Status, it.Detail)
	}
	if got, _ := os.ReadFile(p); string(got) != string(task) {
		t.Errorf("the task note changed:\n%s", got)
	}
	file, _ := os.ReadFile(filepath.Join(c.v.Dir(), cs.Path))
	if !strings.Contains(string(file), "- [-] Set due date to 2026-13-45 — not applied: refused, nothing written: ") {
		t.Errorf("change set file:\n%s", file)
	}
}
