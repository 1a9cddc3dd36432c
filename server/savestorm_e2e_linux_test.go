package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// TestSaveStormWhileApproving is issue #18's storm through the whole
// server: a person saves the task note in a tight loop, by rename and in
// place, while the items of its change sets are approved one by one. No
// save may be lost: once the approval in flight has answered, the note
// comes from the writer's last save (margin's edits keep its last line).
// Rounds alternate between saving by rename and in place.
// vault/edit's TestStormOfSavesLosesNone is the same storm without the
// server, many times faster.
func TestSaveStormWhileApproving(t *testing.T) {
	rounds, items, burst := 2, 8, 20
	if soakLong {
		rounds, items = 40, 12
	}
	fake := llmtest.NewOllama(t, taskModel)
	var wakes atomic.Int64
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		w := wakes.Add(1)
		var add []map[string]string
		for i := range items {
			add = append(add, map[string]string{"title": fmt.Sprintf("Step %d of wake %d", i, w)})
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "add_multiple_checklist_items", Args: map[string]any{"items": add}},
			{Name: "update_report", Args: map[string]any{"tldr": "Steps proposed.", "content": "## Left\n- steps\n"}},
		}}
	})
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_LOG_LEVEL=warn"))
	e.Initialize(dir)
	createAgent(t, e, shipTask)
	file := filepath.Join(dir, shipTask)
	saveRE := regexp.MustCompile(`(?m)^user save (\d+)$`)

	saves, lost, applied := 0, 0, 0
	for round := range rounds {
		var cs protocol.ChangeSet
		poll(t, "a pending change set", func() bool {
			var list protocol.ChangesListResult
			e.MustCall("changes/list", map[string]any{"task": shipTask, "status": "pending"}, &list)
			if len(list.ChangeSets) == 0 {
				return false
			}
			cs = list.ChangeSets[len(list.ChangeSets)-1]
			return true
		})
		inPlace := round%2 == 1
		base := readFile(t, dir, shipTask)
		if m := saveRE.FindStringIndex(base); m != nil {
			base = base[:m[0]]
		}
		save := func(n int) {
			content := base + "user save " + strconv.Itoa(n) + "\n"
			if inPlace {
				f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.WriteString(content[:len(content)/2])
				f.WriteString(content[len(content)/2:])
				f.Close()
				return
			}
			tmp := filepath.Join(dir, "Tasks", ".editor-save.tmp")
			if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, file); err != nil {
				t.Error(err)
			}
		}

		var (
			approving sync.Mutex // held around each approval in flight
			done      atomic.Bool
			wg        sync.WaitGroup
		)
		wg.Add(1)
		go func() { // the person, approving item after item
			defer wg.Done()
			defer done.Store(true)
			for _, it := range cs.Items {
				approving.Lock()
				var after protocol.ChangeSet
				err := e.Call("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": it.ID, "verdict": "confirmed"}}}, &after)
				approving.Unlock()
				switch {
				case err == nil && itemStatus(after, it.ID) == "confirmed":
					applied++
				case err != nil && err.Code != -33001 && err.Code != -33002:
					t.Errorf("approving %s: %v", it.ID, err)
				}
			}
		}()
		for n := saves + burst; !done.Load(); n += burst {
			// A burst of saves, then a look once the approval in flight
			// has answered: a save followed by a later one may be
			// replaced, the last one of the burst must be there.
			for k := n - burst + 1; k <= n; k++ {
				save(k)
			}
			saves = n
			approving.Lock()
			b, err := os.ReadFile(file)
			approving.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if m := saveRE.FindSubmatch(b); m == nil || string(m[1]) != strconv.Itoa(n) {
				lost++
				t.Errorf("round %d: save %d lost; the note ends %q", round, n, b[max(0, len(b)-80):])
			}
		}
		wg.Wait()
	}
	t.Logf("%d rounds, %d saves, %d items applied, %d lost", rounds, saves, applied, lost)
}
