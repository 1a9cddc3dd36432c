package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

// Two tasks named Plan in different folders: each one's code lens and
// each link's hover show that task's own report, never the other's.
func TestSameStemTasksShowTheirOwnReports(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		which := "Home"
		if strings.Contains(userMessage(r), "quarterly roadmap") {
			which = "Work"
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "update_report", Args: map[string]any{"tldr": which + " plan on track.", "content": "## " + which + "\n- on track\n"}},
		}}
	})
	dir := editortest.SampleVault(t)
	tasks := []struct{ path, which, report string }{
		{"Tasks/Work/Plan.md", "Work", "Margin/Reports/Plan.md"},
		{"Tasks/Home/Plan.md", "Home", "Margin/Reports/Plan (Home).md"},
	}
	for _, tk := range tasks {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(tk.path)), 0o755); err != nil {
			t.Fatal(err)
		}
		body := "Home: the garden and the kitchen."
		if tk.which == "Work" {
			body = "Work: the quarterly roadmap."
		}
		writeFile(t, dir, tk.path, "---\ntype: task\nstatus: todo\n---\n# Plan\n\n"+body+"\n")
	}
	writeFile(t, dir, "Inbox/Plans.md", "# Plans\n[[Tasks/Work/Plan]]\n[[Tasks/Home/Plan]]\n")
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)

	// One after the other, so the Work task's agent is the first of the name.
	for _, tk := range tasks {
		createAgent(t, e, tk.path)
		waitNth(e, "the report on "+tk.path, "margin/reportUpdated", 1, forTask(tk.path))
	}

	for i, tk := range tasks {
		t.Run(tk.which, func(t *testing.T) {
			want := tk.which + " plan on track."
			if got := readFile(t, dir, tk.report); !strings.Contains(got, want) || !strings.Contains(got, strings.TrimSuffix(tk.path, ".md")) {
				t.Errorf("%s:\n%s\nwant the report on %s", tk.report, got, tk.path)
			}
			ls := lensesOf(t, e, dir, tk.path)
			if len(ls) == 0 || ls[0].Command.Title != "TLDR: "+want {
				t.Errorf("lenses of %s = %+v, want its TLDR %q first", tk.path, ls, want)
			}
			var h *struct{ Contents struct{ Value string } }
			e.MustCall("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": uriOf(dir, "Inbox/Plans.md")},
				"position": map[string]any{"line": i + 1, "character": 3}}, &h)
			if h == nil || !strings.Contains(h.Contents.Value, want) {
				t.Errorf("hover on the link to %s = %+v, want its TLDR %q", tk.path, h, want)
			}
		})
	}
}
