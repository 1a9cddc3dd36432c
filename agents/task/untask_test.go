package task

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// tasksPluginTask is a task note in the shape the Tasks plugin's users
// write: checklist lines with the #task global filter, emoji dates, a
// recurrence, a custom status, and an item in a callout.
const tasksPluginTask = "---\ntype: task\nstatus: in-progress\n---\n# Move house\n\n## Checklist\n\n" +
	"- [ ] #task Book the van 📅 2026-12-01\n" +
	"- [x] #task Pack the books ✅ 2026-11-20\n" +
	"    - [ ] #task Label the boxes ⏳ 2026-11-28\n" +
	"- [/] #task Cancel the internet 🔁 every month\n" +
	"> - [ ] #task Ask about parking 🛫 2026-11-25\n" +
	"1. [ ] #task Forward the mail\n"

// tasksPluginLine is the Tasks plugin's taskRegex (src/Task/
// TaskRegularExpressions.ts): what it lists as a task.
var tasksPluginLine = regexp.MustCompile(`^[\s>]*(?:[-*+]|[0-9]+[.)]) +\[.\]`)

// tasksPluginLines returns the lines of a file outside fenced code that
// the Tasks plugin would take for tasks.
func tasksPluginLines(text string) []string {
	var found []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if bare := strings.TrimLeft(l, " >"); strings.HasPrefix(bare, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && tasksPluginLine.MatchString(l) {
			found = append(found, l)
		}
	}
	return found
}

func wakeMoveHouse(t *testing.T, model llm.Model) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "Tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Tasks", "Move house.md"), []byte(tasksPluginTask), 0o644); err != nil {
		t.Fatal(err)
	}
	v := querytest.IndexedVault(t, dir)
	rt, err := newRuntime(context.Background(), v, model, Options{Now: func() time.Time { return querytest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	r := planRig{t, v, rt}
	a := r.create("Tasks/Move house.md")
	r.wake(a)
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ReportPath("Margin", a.OutputName))))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A report never holds a line the Tasks plugin takes for a task, whether
// margin wrote it offline from the checklist or the model copied the
// checklist into it: those lines would be listed a second time, without
// their dates. Checkboxes become ☐ and ☑, other statuses are escaped,
// and fenced code is kept as written.
func TestReportsHoldNoTasksPluginLines(t *testing.T) {
	t.Run("offline", func(t *testing.T) {
		got := wakeMoveHouse(t, nil)
		if lines := tasksPluginLines(got); len(lines) > 0 {
			t.Errorf("the offline report has lines the Tasks plugin lists: %q\n%s", lines, got)
		}
		for _, want := range []string{"- ☐ #task Book the van\n", "- ☐ #task Label the boxes\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("the offline report lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("model", func(t *testing.T) {
		fake := llmtest.NewOllama(t, "qwen2.5:7b")
		fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{report("Moving on track",
				"## What is left to do\n\n"+
					"- [ ] #task Book the van 📅 2026-12-01\n"+
					"- [x] #task Pack the books ✅ 2026-11-20\n"+
					"\t* [ ] Label the boxes\n"+
					"- [/] #task Cancel the internet\n"+
					"> [!todo] Next\n> - [ ] #task Ask about parking\n"+
					"2) [X] Forward the mail\n\n"+
					"```markdown\n- [ ] kept in code\n```\n")}}
		})
		client, err := llm.New(fake.Config())
		if err != nil {
			t.Fatal(err)
		}
		got := wakeMoveHouse(t, client)
		if lines := tasksPluginLines(got); len(lines) > 0 {
			t.Errorf("the model's report has lines the Tasks plugin lists: %q\n%s", lines, got)
		}
		for _, want := range []string{
			"- ☐ #task Book the van 📅 2026-12-01", "- ☑ #task Pack the books", "\t* ☐ Label the boxes",
			`- \[/\] #task Cancel the internet`, "> - ☐ #task Ask about parking", "2) ☑ Forward the mail",
			"```markdown\n- [ ] kept in code\n```",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("the model's report lacks %q:\n%s", want, got)
			}
		}
	})
}

// A task that is one by the TaskNotes plugin's folder only is read as a
// task by its wake: done, it gets the settled report, with no model.
func TestWakeReadsATaskNotesTask(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{
		".obsidian/community-plugins.json": `["tasknotes"]`,
		"TaskNotes/Tasks/Call plumber.md":  "---\nstatus: done\n---\n# Call plumber\n\n- [x] Find a number\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := querytest.IndexedVault(t, dir)
	rt, err := newRuntime(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	r := planRig{t, v, rt}
	a := r.create("TaskNotes/Tasks/Call plumber.md")
	r.wake(a)
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ReportPath("Margin", a.OutputName))))
	if err != nil || !strings.Contains(string(b), "[!note] Task done") {
		t.Errorf("report (%v):\n%s\nwant the settled report of a done task", err, b)
	}
}

// untask finds the items as note does, in the report's text as the body
// of its file: a --- at its top opens no header, and code, fenced or
// indented, keeps what it holds.
func TestUntaskTakesNotesItems(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"top rule", "---\n- [ ] a\n---\n", "---\n- ☐ a\n---\n"},
		{"long fence", "~~~~\n- [ ] code\n~~~\n- [x] still code\n~~~~\n- [X] b", "~~~~\n- [ ] code\n~~~\n- [x] still code\n~~~~\n- ☑ b"},
		{"indented code", "Text.\n\n    - [ ] code\n", "Text.\n\n    - [ ] code\n"},
		{"other status", "- [❗] urgent\n  - [-] dropped\n", "- \\[❗\\] urgent\n  - \\[-\\] dropped\n"},
		{"no item", "[ ] not a list\n- [link](x)\n", "[ ] not a list\n- [link](x)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := untask(tc.in); got != tc.want {
				t.Errorf("untask(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
