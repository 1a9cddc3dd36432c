package task

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/llm/llmtest"
)

// The agents' edits of notes go through edit.Root.Change: these tests pin
// what each caller asks of it when a person edits the same note meanwhile.

// bufferEditor has notes open with LSP versions and refuses an edit of a
// version the buffer has moved past, as a client does.
type bufferEditor struct {
	mu      sync.Mutex
	buffers map[string]string
	version map[string]int
	// typing, when set, is typed into the buffer as an edit arrives,
	// before the client looks at its version (once per entry).
	typing []string
	edits  int
}

func (b *bufferEditor) Open(path string) (string, int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	text, ok := b.buffers[path]
	return text, b.version[path], ok
}

func (b *bufferEditor) ApplyEdit(_ context.Context, path string, version int, newText string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.edits++
	if len(b.typing) > 0 {
		b.buffers[path] += b.typing[0]
		b.version[path]++
		b.typing = b.typing[1:]
	}
	if b.version[path] != version {
		return false, nil
	}
	b.buffers[path] = newText
	b.version[path]++
	return true, nil
}

// TestReportEditedDuringTheWakeIsKept: a report the person edits while the
// wake runs is not overwritten by the wake's new report.
func TestReportEditedDuringTheWakeIsKept(t *testing.T) {
	c := newChaosRig(t, hangTimeout)
	var p, edited string
	var second atomic.Bool
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if second.Load() && edited == "" {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Error(err)
			}
			edited = string(src) + "\nMy own note on the report.\n"
			if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
				t.Error(err)
			}
		}
		if second.Load() {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report("Second wake.", "## Achieved\n- Docs\n")}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	a, err := c.rt.store.Agent(context.Background(), c.id)
	if err != nil {
		t.Fatal(err)
	}
	p = filepath.Join(c.v.Dir(), ReportPath(c.rt.outputFolder(), a.OutputName))
	second.Store(true)
	run := c.wake(t)
	if got, _ := os.ReadFile(p); edited == "" || string(got) != edited {
		t.Errorf("the report edited during the wake became:\n%s", got)
	}
	if run.Status == "done" {
		t.Errorf("the wake that could not publish its report ended %q", run.Status)
	}
}

// TestConfirmedItemFollowsTheBufferAsThePersonTypes: the task note is open,
// and the person types while margin applies a confirmed item; the editor
// refuses the edit of the older buffer, and the item is applied to the
// buffer with their typing.
func TestConfirmedItemFollowsTheBufferAsThePersonTypes(t *testing.T) {
	ed := &bufferEditor{buffers: map[string]string{}, version: map[string]int{}}
	c := newChaosRig(t, hangTimeout, func(o *Options) { o.Editor = ed })
	var turns atomic.Int32
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		if turns.Add(1) == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				call("add_multiple_checklist_items", map[string]any{"items": []any{
					map[string]any{"title": "One"}, map[string]any{"title": "Two"}}}),
				goodReport,
			}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	})
	c.wake(t)
	ctx := t.Context()
	sets, err := c.rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: chaosTask})
	if err != nil || len(sets) != 1 || len(sets[0].Items) != 2 {
		t.Fatalf("change sets %+v, %v", sets, err)
	}
	disk, err := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask))
	if err != nil {
		t.Fatal(err)
	}
	buffer := string(disk) + "\nTyped, not saved.\n"
	ed.mu.Lock()
	ed.buffers[chaosTask], ed.version[chaosTask], ed.typing = buffer, 4, []string{"More typing.\n"}
	ed.mu.Unlock()
	cs, err := c.rt.changes.Decide(ctx, sets[0].ID, []changes.ItemDecision{{Item: "c1", Verdict: changes.Confirmed}})
	if err != nil {
		t.Fatal(err)
	}
	if it := cs.Items[0]; it.Status != changes.ItemConfirmed {
		t.Errorf("item c1 %s (%s), want confirmed", it.Status, it.Detail)
	}
	got, _, _ := ed.Open(chaosTask)
	ed.mu.Lock()
	edits := ed.edits
	ed.mu.Unlock()
	if !strings.Contains(got, "Typed, not saved.\nMore typing.\n") || !strings.Contains(got, "One") || edits != 2 {
		t.Errorf("after %d edits the buffer is\n%s\nwant the typing kept and the item One added", edits, got)
	}
	if now, _ := os.ReadFile(filepath.Join(c.v.Dir(), chaosTask)); string(now) != string(disk) {
		t.Error("the task open in the editor was written on disk")
	}
}
