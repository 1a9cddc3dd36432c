package task

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
)

// twoPlans are two tasks of one name in different folders, each with a
// line its agent's reply is told apart by.
var twoPlans = map[string]string{
	"Tasks/Work/Plan.md": "---\ntype: task\nstatus: todo\n---\n# Plan\n\nWork: the quarterly roadmap.\n",
	"Tasks/Home/Plan.md": "---\ntype: task\nstatus: todo\n---\n# Plan\n\nHome: the garden and the kitchen.\n",
}

// twoPlansVault is a vault of twoPlans, indexed.
func twoPlansVault(t *testing.T) *vault.Vault {
	t.Helper()
	dir := t.TempDir()
	for p, content := range twoPlans {
		if err := os.MkdirAll(filepath.Join(dir, path.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return querytest.IndexedVault(t, dir)
}

// planModel answers each agent from what its task says: a report, an
// observation and an estimate proposal naming its own task.
func planModel(t *testing.T) llm.Model {
	t.Helper()
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(func(req llmtest.OllamaRequest) llmtest.Reply {
		which, estimate := "Home", "3h"
		if strings.Contains(querytest.User(req), "quarterly roadmap") {
			which, estimate = "Work", "2h"
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			call("record_observations", map[string]any{"observations": []string{which + " observation"}}),
			call("update_task_estimate", map[string]any{"estimate": estimate}),
			report(which+" plan", "## "+which+"\n- on track\n"),
		}}
	})
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// outputFiles reads every file under the output folder that belongs to
// the agent with name: its report, journal and change sets.
func outputFiles(t *testing.T, v *vault.Vault, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	read := func(rel string) {
		b, err := os.ReadFile(filepath.Join(v.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = string(b)
	}
	read(ReportPath("Margin", name))
	read(JournalPath("Margin", name))
	sets, err := os.ReadDir(filepath.Join(v.Dir(), "Margin", "Changes", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sets {
		read(path.Join("Margin", "Changes", name, e.Name()))
	}
	return out
}

// planRig is a runtime over a vault (twoPlansVault) answered by planModel.
type planRig struct {
	t  *testing.T
	v  *vault.Vault
	rt *Runtime
}

func newPlanRig(t *testing.T, v *vault.Vault) planRig {
	t.Helper()
	rt, err := newRuntime(context.Background(), v, planModel(t), Options{Now: func() time.Time { return querytest.Now }})
	if err != nil {
		t.Fatal(err)
	}
	return planRig{t, v, rt}
}

// create makes the agent of task, as a first sighting of the task does.
func (r planRig) create(task string) Agent {
	r.t.Helper()
	a, err := r.rt.store.createAgent(context.Background(), task, "", querytest.Now)
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

func (r planRig) wake(a Agent) {
	r.t.Helper()
	if _, err := r.rt.runWake(context.Background(), a.ID, wakeRequest{reason: "test", force: true}); err != nil {
		r.t.Fatalf("wake of %s: %v", a.Task, err)
	}
}

// Two tasks named Plan in different folders each get their own report,
// journal and change sets: the first agent keeps the plain stem, the
// second is told apart by its folder, and waking one never touches what
// the other wrote.
func TestSameStemTasksKeepTheirOwnOutputs(t *testing.T) {
	v := twoPlansVault(t)
	ctx := context.Background()
	rig := newPlanRig(t, v)
	rt := rig.rt
	work, home := rig.create("Tasks/Work/Plan.md"), rig.create("Tasks/Home/Plan.md")
	if work.OutputName != "Plan" || home.OutputName != "Plan (Home)" {
		t.Fatalf("output names %q and %q, want \"Plan\" and \"Plan (Home)\"", work.OutputName, home.OutputName)
	}
	rig.wake(work)
	rig.wake(home)

	for _, c := range []struct {
		agent       Agent
		which, task string
	}{
		{work, "Work", "Tasks/Work/Plan"},
		{home, "Home", "Tasks/Home/Plan"},
	} {
		t.Run(c.which, func(t *testing.T) {
			rep, err := ReadReport(v.Root(), v.Options().OutputFolder, c.agent)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TLDR != c.which+" plan" || rep.Task != c.task {
				t.Errorf("report %s: TLDR %q of task %q, want %q of %q", rep.Path, rep.TLDR, rep.Task, c.which+" plan", c.task)
			}
			journal, err := ReadJournal(v.Root(), JournalPath("Margin", c.agent.OutputName))
			if err != nil {
				t.Fatal(err)
			}
			if len(journal) != 1 || !strings.HasSuffix(journal[0], c.which+" observation") {
				t.Errorf("journal of %s: %q, want its own observation only", c.task, journal)
			}
			sets, err := rt.changes.Store().ChangeSets(ctx, changes.ChangeSetFilter{Task: c.agent.Task})
			if err != nil {
				t.Fatal(err)
			}
			if len(sets) != 1 {
				t.Fatalf("%d change sets of %s, want 1", len(sets), c.task)
			}
			if dir := path.Join("Margin", "Changes", c.agent.OutputName); path.Dir(sets[0].Path) != dir {
				t.Errorf("change set %s, want it under %s", sets[0].Path, dir)
			}
			files := outputFiles(t, v, c.agent.OutputName)
			if len(files) != 3 {
				t.Errorf("files of %s: %v, want its report, journal and one change set", c.task, files)
			}
			for p, content := range files {
				if !strings.Contains(content, "[["+c.task+"]]") {
					t.Errorf("%s does not belong to %s:\n%s", p, c.task, content)
				}
			}
		})
	}

	homeBefore := outputFiles(t, v, home.OutputName)
	rig.wake(work)
	if homeAfter := outputFiles(t, v, home.OutputName); !equalFiles(homeBefore, homeAfter) {
		t.Errorf("waking Tasks/Work/Plan.md changed the outputs of Tasks/Home/Plan.md:\nbefore %v\nafter %v", homeBefore, homeAfter)
	}
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for p, content := range a {
		if c, ok := b[p]; !ok || c != content {
			return false
		}
	}
	return true
}

// A renamed task's outputs take its new name at the next wake (SPEC §3.3
// names them by the task's stem): the report moves, and names the task
// by its new path.
func TestRenamedTaskGivesItsOutputsItsNewName(t *testing.T) {
	v := twoPlansVault(t)
	ctx := context.Background()
	rig := newPlanRig(t, v)
	rt := rig.rt
	a := rig.create("Tasks/Home/Plan.md")
	rig.wake(a)
	if err := os.Rename(filepath.Join(v.Dir(), "Tasks/Home/Plan.md"), filepath.Join(v.Dir(), "Tasks/Home/Garden.md")); err != nil {
		t.Fatal(err)
	}
	if err := rt.store.moveTask(ctx, a.ID, "Tasks/Home/Garden.md", ""); err != nil {
		t.Fatal(err)
	}
	rig.wake(a)
	moved, err := rt.store.Agent(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReport(v.Root(), v.Options().OutputFolder, moved)
	if err != nil {
		t.Fatal(err)
	}
	if moved.OutputName != "Garden" || rep.Path != "Margin/Reports/Garden.md" || rep.Task != "Tasks/Home/Garden" || rep.Wake != 2 {
		t.Errorf("after the rename: output name %q, report %s on %q at wake %d; want the report at Margin/Reports/Garden.md, "+
			"on Tasks/Home/Garden, at wake 2", moved.OutputName, rep.Path, rep.Task, rep.Wake)
	}
	if _, err := os.Stat(filepath.Join(v.Dir(), "Margin/Reports/Plan.md")); !os.IsNotExist(err) {
		t.Errorf("the report under the old name is still there: %v", err)
	}
}

// TestNewAgentLeavesAnotherTasksReportAlone is a state database rebuilt
// from scratch (deleted, or a fresh clone of the vault): the reports of the
// agents before it are still in the vault. A new agent must not take the
// name, and overwrite the report, of another task.
func TestNewAgentLeavesAnotherTasksReportAlone(t *testing.T) {
	v := twoPlansVault(t)
	homes := "---\nmargin: report\ntask: \"[[Tasks/Home/Plan]]\"\ntldr: Home plan from before\n---\n\nThe garden first.\n"
	if err := os.MkdirAll(filepath.Join(v.Dir(), "Margin", "Reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.Dir(), "Margin", "Reports", "Plan.md"), []byte(homes), 0o644); err != nil {
		t.Fatal(err)
	}
	rig := newPlanRig(t, v)
	work, home := rig.create("Tasks/Work/Plan.md"), rig.create("Tasks/Home/Plan.md")
	if work.OutputName != "Plan (Work)" || home.OutputName != "Plan" {
		t.Fatalf("output names %q (work) and %q (home), want \"Plan (Work)\" and the report's own \"Plan\"", work.OutputName, home.OutputName)
	}
	rig.wake(work)
	got, err := os.ReadFile(filepath.Join(v.Dir(), "Margin", "Reports", "Plan.md"))
	if err != nil || string(got) != homes {
		t.Errorf("the home plan's report after the work plan's wake (%v):\n%s", err, got)
	}
}
