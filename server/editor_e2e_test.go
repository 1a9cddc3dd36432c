package server_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// languageModel sets the task's language on the first wake.
func languageModel(o *llmtest.Ollama) {
	var mu sync.Mutex
	calls := 0
	o.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- QA\n"}}
		if !first {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "set_task_language", Args: map[string]any{"language": "en"}}, report}}
	})
}

func TestSetTaskLanguageOnAnOpenNoteGoesThroughTheEditor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied bool
	}{
		{"editor applies", true},
		{"editor refuses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, taskModel)
			languageModel(fake)
			dir := editortest.SampleVault(t)
			e := editortest.Start(t, agentEnv(fake.URL))
			e.Initialize(dir)
			edits := editorAnswering(e, tc.applied)
			disk := readFile(t, dir, shipTask)
			// An unsaved line in the buffer must survive the edit.
			buffer := disk + "\nUnsaved: ask Dana about 🚀 launch.\n"
			openNote(e, dir, shipTask, 7, buffer)
			a := createAgent(t, e, shipTask)
			waitWakes(t, e, a.ID, 1)

			if readFile(t, dir, shipTask) != disk {
				t.Error("the open task note was written on disk")
			}
			reqs := edits()
			if len(reqs) != 1 || reqs[0].Edit.DocumentChanges[0].TextDocument.Version != 7 {
				t.Fatalf("applyEdit requests = %+v, want one edit of version 7", reqs)
			}
			added, removed := changedLines(buffer, applyLineEdits(t, buffer, reqs[0]))
			if !slices.Equal(added, []string{"language: en"}) || len(removed) != 0 {
				t.Errorf("the editor's edit: +%q -%q, want only the language line", added, removed)
			}
			var act activity
			e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
			var result string
			for _, m := range act.Messages {
				if m.Role == "tool" && m.ToolName == "set_task_language" {
					result = m.Content
				}
			}
			if tc.applied && !strings.Contains(result, "language set to en") ||
				!tc.applied && !(strings.Contains(result, "refused") && strings.Contains(result, "nothing was written")) {
				t.Errorf("the model was told %q", result)
			}
		})
	}
}

func TestLogAppendOnAnOpenNoteGoesThroughTheEditor(t *testing.T) {
	const daily = "Daily/2026-11-21.md"
	for _, tc := range []struct {
		name    string
		applied bool
	}{
		{"editor applies", true},
		{"editor refuses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editortest.SampleVault(t)
			e := startQuery(t, dir, nil)
			edits := editorAnswering(e, tc.applied)
			disk := readFile(t, dir, daily)
			buffer := disk + "\n## 21:00\nUnsaved: 東京 trip 🚄 booked.\n"
			openNote(e, dir, daily, 5, buffer)

			var l struct{ Path, Heading string }
			err := e.Call("log/append", map[string]any{"text": "Walked 5k in the rain.", "time": "2026-11-21T21:10"}, &l)
			if readFile(t, dir, daily) != disk {
				t.Error("the open daily note was written on disk")
			}
			reqs := edits()
			if len(reqs) != 1 || reqs[0].Edit.DocumentChanges[0].TextDocument.Version != 5 || reqs[0].Edit.DocumentChanges[0].TextDocument.URI != uriOf(dir, daily) {
				t.Fatalf("applyEdit requests = %+v, want one edit of the daily note at version 5", reqs)
			}
			if want := buffer + "\n## 21:10\nWalked 5k in the rain.\n"; applyLineEdits(t, buffer, reqs[0]) != want {
				t.Errorf("the editor's edit gives\n%s\nwant\n%s", applyLineEdits(t, buffer, reqs[0]), want)
			}
			if tc.applied {
				if err != nil || l.Path != daily || l.Heading != "21:10" {
					t.Errorf("log/append = %+v, %v", l, err)
				}
				return
			}
			if err == nil || err.Code != -33001 || !strings.Contains(err.Message, "refused") || !strings.Contains(err.Message, "nothing was written") {
				t.Errorf("log/append refused by the editor: %v, want -33001 saying nothing was written", err)
			}
		})
	}
}
