package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

const (
	shipTask   = "Tasks/Ship invoice export.md"
	shipReport = "Margin/Reports/Ship invoice export.md"
	shipJourn  = "Margin/Journal/Ship invoice export.md"
	taskModel  = "qwen2.5:7b"
)

// agentEnv is the environment of an agents test: the fake model server,
// one agent at a time (auto_create off), and short durations so the suite
// runs in seconds. Later values win, so callers append overrides.
func agentEnv(ollamaURL string, extra ...string) []string {
	return append([]string{
		"OLLAMA_HOST=" + ollamaURL,
		"MARGIN_AGENTS_AUTO_CREATE=false",
		"MARGIN_WATCH_DEBOUNCE=30ms",
		"MARGIN_AGENTS_QUIET_PERIOD=250ms",
		"MARGIN_AGENTS_MAX_WAIT=3s",
		"MARGIN_AGENTS_BACKOFF_INITIAL=150ms",
		"MARGIN_AGENTS_BACKOFF_MAX=2s",
		"MARGIN_LLM_RETRY_LLM_RETRY=0",
		"MARGIN_LOG_LEVEL=debug",
	}, extra...)
}

// reportingModel answers every wake the way a well-behaved model does:
// one observation, then the report, in one turn.
func reportingModel(o *llmtest.Ollama) {
	o.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "record_observations", Args: map[string]any{"observations": []string{"Demo went well; Acme wants a flag first."}}},
			{Name: "update_report", Args: map[string]any{"tldr": "Export works; QA and docs left before the flag goes on.", "content": "## Achieved\n- Endpoint and streaming writer\n\n## What is left to do\n- [ ] QA on staging\n"}},
		}}
	})
}

// waitNth waits for the n-th message matching method and match.
func waitNth(e *editortest.Editor, what, method string, n int, match func(json.RawMessage) bool) json.RawMessage {
	count := 0
	m := e.WaitFor(what, func(m editortest.Message) bool {
		if m.Method == method && (match == nil || match(m.Params)) {
			count++
		}
		return count == n
	})
	return m.Params
}

func forTask(task string) func(json.RawMessage) bool {
	return func(p json.RawMessage) bool {
		var v struct{ Task string }
		json.Unmarshal(p, &v)
		return v.Task == task
	}
}

func createAgent(t *testing.T, e *editortest.Editor, task string) protocol.AgentDetail {
	t.Helper()
	var a protocol.AgentDetail
	e.MustCall("agents/create", map[string]any{"task": task}, &a)
	if a.ID == "" || a.Task != task || a.Lifecycle != "active" {
		t.Fatalf("agents/create = %+v, want an active agent for %s", a, task)
	}
	return a
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// poll asks for a state over RPC until it holds. Every round trip is a
// real request, so this waits on the server, not on a clock.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(editortest.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", editortest.Timeout, what)
		}
	}
}

// waitWakes waits until the agent has completed n wakes and nothing is
// queued or running.
func waitWakes(t *testing.T, e *editortest.Editor, id string, n int) protocol.AgentDetail {
	t.Helper()
	var got protocol.AgentDetail
	poll(t, fmt.Sprintf("%d completed wakes", n), func() bool {
		e.MustCall("agents/get", map[string]any{"id": id}, &got)
		return got.Wakes >= n && !got.State.Queued && !got.State.Running
	})
	return got
}

// userMessage is the wake prompt a request carried.
func userMessage(r llmtest.OllamaRequest) string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

func TestAgentFirstWakeWritesReportAndJournal(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)

	a := createAgent(t, e, shipTask)
	upd := waitNth(e, "the first report", "margin/reportUpdated", 1, forTask(shipTask))
	var note struct{ Task, Path, TLDR string }
	json.Unmarshal(upd, &note)
	if note.Path != shipReport || !strings.Contains(note.TLDR, "QA and docs left") {
		t.Errorf("reportUpdated = %s, want path %s and the model's tldr", upd, shipReport)
	}

	report := readFile(t, dir, shipReport)
	for _, want := range []string{
		"---\nmargin: report\n", `task: "[[Tasks/Ship invoice export]]"`, "agent: " + a.ID + "\n",
		`template: "task-agent@1"`, "\nupdated: ", "\nwake: 1\n", `tldr: "Export works; QA and docs left before the flag goes on."`,
		`generated_by: "` + taskModel + `"`, "---\n## Achieved\n- Endpoint and streaming writer\n",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	journal := readFile(t, dir, shipJourn)
	if !strings.HasPrefix(journal, "---\nmargin: journal\n") ||
		!regexp.MustCompile(`(?m)^- \d{4}-\d\d-\d\d \d\d:\d\d — Demo went well; Acme wants a flag first\.$`).MatchString(journal) {
		t.Errorf("journal:\n%s\nwant margin: journal and one `- YYYY-MM-DD HH:MM — text` line", journal)
	}
	tmpl := readFile(t, dir, "Margin/Templates/task-agent.md")
	for _, want := range []string{"margin: template", "name: task-agent", "version: 1", "## General Directive", "## Report Directive"} {
		if !strings.Contains(tmpl, want) {
			t.Errorf("seeded template lacks %q", want)
		}
	}

	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model calls = %d, want 1", len(reqs))
	}
	msg := userMessage(reqs[0])
	if got := strings.Count(msg, "[data: entry Daily/"); got != 22 {
		t.Errorf("first wake shows %d linked entries in full, want all 22 (20 by name, one by alias, one by markdown link)", got)
	}
	if !strings.Contains(msg, "first wake") || !strings.Contains(msg, "[data: the task note "+shipTask+"]") {
		t.Errorf("first wake prompt lacks the full-context marker or the fenced task:\n%s", msg)
	}
	if len(reqs[0].Tools) != 11 {
		t.Errorf("tools offered = %d, want 3 immediate + 8 deferred", len(reqs[0].Tools))
	}
	if sys := reqs[0].Messages[0]; sys.Role != "system" || !strings.Contains(sys.Content, "Verification over inference") || !strings.Contains(sys.Content, "## Report Format") {
		t.Errorf("system prompt is not scaffold + general + report directive:\n%s", sys.Content)
	}

	got := waitWakes(t, e, a.ID, 1)
	if got.ID != a.ID || got.Wakes != 1 || got.Report == nil || got.Report.GeneratedBy != taskModel || got.Report.Template != "task-agent@1" {
		t.Errorf("agents/get = %+v, want 1 wake and the report summary", got)
	}
	var list protocol.AgentsListResult
	e.MustCall("agents/list", map[string]any{"lifecycle": "active"}, &list)
	if len(list.Agents) != 1 || list.Agents[0].ID != a.ID {
		t.Errorf("agents/list = %+v, want the one agent", list.Agents)
	}
	var rep struct{ Path, TLDR, Content, GeneratedBy string }
	e.MustCall("reports/get", map[string]any{"task": shipTask}, &rep)
	if rep.Path != shipReport || rep.GeneratedBy != taskModel || !strings.Contains(rep.Content, "QA on staging") {
		t.Errorf("reports/get = %+v", rep)
	}
	// The task by its bare name, any case, as `margin report` takes it.
	var byName struct{ Path string }
	e.MustCall("reports/get", map[string]any{"task": "ship INVOICE export"}, &byName)
	if byName.Path != shipReport {
		t.Errorf("reports/get by name = %+v, want %s", byName, shipReport)
	}
	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	if len(act.Runs) != 1 || act.Runs[0].Status != "completed" || !act.Runs[0].FullContext {
		t.Errorf("runs = %+v, want one completed full-context run", act.Runs)
	}
	roles := []string{}
	for i := len(act.Messages) - 1; i >= 0; i-- {
		roles = append(roles, act.Messages[i].Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool,tool" {
		t.Errorf("messages by role = %v, want the prompt, the turn and two tool results", roles)
	}
	if len(act.ToolCalls) != 2 {
		t.Errorf("tool calls = %+v, want record_observations and update_report", act.ToolCalls)
	}

	// Pause and resume go through agents/control.
	var paused protocol.AgentDetail
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "pause"}, &paused)
	if paused.Lifecycle != "dormant" || paused.DormantReason != "paused" {
		t.Errorf("after pause: %+v", paused)
	}
	if err := e.Call("agents/control", map[string]any{"id": a.ID, "action": "explode"}, nil); err == nil || err.Code != -32602 {
		t.Errorf("unknown action: %v, want -32602", err)
	}
	if err := e.Call("agents/get", map[string]any{"id": "nope"}, nil); err == nil || err.Code != -33000 {
		t.Errorf("unknown agent: %v, want -33000", err)
	}
}

// firstWake starts margin with the well-behaved model, creates the
// agent of the 20-entry task and waits for its first report.
func firstWake(t *testing.T, extraEnv ...string) (*editortest.Editor, *llmtest.Ollama, string, protocol.AgentDetail) {
	t.Helper()
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, extraEnv...))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	waitNth(e, "the first report", "margin/reportUpdated", 1, forTask(shipTask))
	waitWakes(t, e, a.ID, 1)
	return e, fake, dir, a
}

func TestAgentWakesOnceWithDiffOnLinkedEntryEdit(t *testing.T) {
	e, fake, dir, a := firstWake(t)

	// Three saves in a row, inside the quiet period: one wake.
	daily := readFile(t, dir, "Daily/2026-11-20.md")
	for _, s := range []string{"went well, mostly", "went well, mostly. Flag first", "went well. Dana wants it behind a flag for Acme first, then everyone"} {
		writeFile(t, dir, "Daily/2026-11-20.md", strings.Replace(daily, "went well. Dana wants it behind a flag for Acme\nfirst.", s+".", 1))
	}
	waitNth(e, "the second report", "margin/reportUpdated", 2, forTask(shipTask))
	waitWakes(t, e, a.ID, 2)

	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2 (first wake + one coalesced wake)", len(reqs))
	}
	msg := userMessage(reqs[1])
	for _, want := range []string{
		"[data: diff of Daily/2026-11-20.md#11:00]",
		"--- before/Daily/2026-11-20.md#11:00",
		"-Demo of [[Ship invoice export]] went well. Dana wants it behind a flag for Acme",
		"+Demo of [[Ship invoice export]] went well. Dana wants it behind a flag for Acme first, then everyone.",
		"## Current Report\n\nTLDR: Export works; QA and docs left",
		"Demo went well; Acme wants a flag first.", // the journal
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("incremental prompt lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "[data: entry "); n != 0 {
		t.Errorf("incremental prompt repeats %d entries in full; want them by reference", n)
	}
	if len(msg)*2 > len(userMessage(reqs[0])) {
		t.Errorf("incremental prompt is %d bytes, the full one %d: want well under half", len(msg), len(userMessage(reqs[0])))
	}

	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	if len(act.Runs) != 2 || act.Runs[0].FullContext || act.Runs[0].Reason != "linked entry changed" {
		t.Errorf("runs = %+v, want a second, incremental run for the linked entry", act.Runs)
	}
}

func TestAgentNoOpSavesCostNoModelCall(t *testing.T) {
	e, fake, dir, a := firstWake(t, "MARGIN_AGENTS_QUIET_PERIOD=1s")

	// A touch and a save of the same bytes: the vault sees no change.
	now := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(dir, shipTask), now, now)
	writeFile(t, dir, "Daily/2026-11-20.md", readFile(t, dir, "Daily/2026-11-20.md"))

	// An edit reverted before the agent wakes (as a git checkout does): the
	// wake finds its run key completed and skips the model.
	orig := readFile(t, dir, "Daily/2026-11-20.md")
	writeFile(t, dir, "Daily/2026-11-20.md", strings.Replace(orig, "Demo of", "Zanzibarquux demo of", 1))
	poll(t, "the edit indexed", func() bool {
		var res protocol.SearchResult
		e.MustCall("vault/search", map[string]any{"query": "zanzibarquux"}, &res)
		return len(res.Hits) > 0
	})
	writeFile(t, dir, "Daily/2026-11-20.md", orig)

	var got protocol.AgentDetail
	poll(t, "the wake skipped and nothing queued", func() bool {
		e.MustCall("agents/get", map[string]any{"id": a.ID}, &got)
		return got.State.Skipped > 0 && !got.State.Queued && !got.State.Running
	})
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("model calls = %d, want only the first wake's", n)
	}
	if got.Wakes != 1 {
		t.Errorf("wakes = %d, want 1", got.Wakes)
	}
}

// observing is a model reply that records obs in the journal.
func observing(obs string) llmtest.Reply {
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "record_observations", Args: map[string]any{"observations": []string{obs}}}}}
}

// crashMidWake starts margin on a copy of the sample vault with a model
// that records obs on the first turn of the Ship task's wake and hangs on
// the second, and kills margin there with SIGKILL.
func crashMidWake(t *testing.T, obs string) (dir string, a protocol.AgentDetail) {
	t.Helper()
	fake := llmtest.NewOllama(t, taskModel)
	stalled := make(chan struct{})
	var once sync.Once
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		if r.Messages[len(r.Messages)-1].Role == "user" {
			return observing(obs)
		}
		once.Do(func() { close(stalled) })
		return llmtest.Reply{Delay: time.Hour} // until the process dies
	})
	dir = editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	a = createAgent(t, e, shipTask)
	select {
	case <-stalled:
	case <-time.After(editortest.Timeout):
		t.Fatal("the wake never reached its second turn")
	}
	if err := e.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	e.Exit()
	return dir, a
}

// recoverWake restarts margin on dir with a model that repeats the
// interrupted wake's first call and then reports, and waits for that wake.
func recoverWake(t *testing.T, dir string, a protocol.AgentDetail, obs string) (*editortest.Editor, *llmtest.Ollama) {
	t.Helper()
	fake := llmtest.NewOllama(t, taskModel)
	fake.Script(observing(obs), llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_report", Args: map[string]any{"tldr": "Recovered.", "content": "Recovered after a crash."}}}})
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	waitNth(e, "the recovered report", "margin/reportUpdated", 1, forTask(shipTask))
	waitWakes(t, e, a.ID, 1)
	return e, fake
}

func TestAgentCrashMidWakeIsRecoveredWithoutDuplicates(t *testing.T) {
	const obs = "Deploy on a Thursday night hit a migration lock."
	dir, a := crashMidWake(t, obs)
	if n := strings.Count(readFile(t, dir, shipJourn), obs); n != 1 {
		t.Fatalf("journal has the observation %d times before the restart, want 1", n)
	}

	// The restarted margin re-runs the interrupted wake; the model repeats
	// its first call, which must not append the observation again.
	e2, fake2 := recoverWake(t, dir, a, obs)
	if n := strings.Count(readFile(t, dir, shipJourn), obs); n != 1 {
		t.Errorf("journal has the observation %d times after recovery, want 1", n)
	}
	var act protocol.Activity
	e2.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	if len(act.Runs) != 1 || act.Runs[0].Status != "completed" || act.Runs[0].Attempts != 2 {
		t.Errorf("runs = %+v, want the one run, completed on its second attempt", act.Runs)
	}
	if len(act.ToolCalls) != 2 {
		t.Errorf("tool calls = %+v, want record_observations once and update_report", act.ToolCalls)
	}
	if len(fake2.Requests()) != 2 {
		t.Errorf("model calls after restart = %d, want 2", len(fake2.Requests()))
	}
}

func TestAgentFailuresBackOffAndGoDormant(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	// A model that never calls update_report: every wake ends incomplete.
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{Content: "Looks fine to me."}
	})
	dir := editortest.SampleVault(t)
	taskBefore := readFile(t, dir, shipTask)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_AGENTS_DORMANT_AFTER=3"))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)

	var statuses []struct {
		Lifecycle string
		Failures  int
		NextWake  time.Time
		Reason    string
	}
	for n := 1; n <= 3; n++ {
		p := waitNth(e, fmt.Sprintf("agentStatus after failure %d", n), "margin/agentStatus", n, nil)
		var st struct {
			Lifecycle string
			Failures  int
			NextWake  time.Time
			Reason    string
		}
		json.Unmarshal(p, &st)
		statuses = append(statuses, st)
	}
	for i, st := range statuses[:2] {
		if st.Lifecycle != "active" || st.Failures != i+1 || st.NextWake.IsZero() {
			t.Errorf("status after failure %d = %+v, want active with a next wake", i+1, st)
		}
	}
	if last := statuses[2]; last.Lifecycle != "dormant" || last.Failures != 3 || !strings.Contains(last.Reason, "without update_report") {
		t.Errorf("status after failure 3 = %+v, want dormant, saying why", last)
	}

	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	if len(act.Runs) != 3 {
		t.Fatalf("runs = %d, want 3", len(act.Runs))
	}
	// Runs are newest first; retry n waits 150ms·2ⁿ⁻¹ after the failure.
	for i, wait := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond} {
		later, earlier := act.Runs[1-i], act.Runs[2-i]
		if later.Status != "incomplete" || earlier.Status != "incomplete" {
			t.Errorf("run statuses %s, %s: want incomplete", earlier.Status, later.Status)
		}
		if gap := later.Started.Sub(earlier.Finished); gap < wait {
			t.Errorf("retry %d started %s after the failure, want ≥ %s", i+1, gap, wait)
		}
	}
	// A model only adds (issue 33): the report is what margin writes
	// without one, never the model's, and it names the last failed run.
	var rep protocol.Report
	e.MustCall("reports/get", map[string]any{"id": a.ID}, &rep)
	if rep.GeneratedBy != "offline" || rep.FailedRun != act.Runs[0].ID || !strings.Contains(rep.Content, "Checklist progress") {
		t.Errorf("report after wakes that never called update_report: generated by %q, failed run %d (want %d):\n%s",
			rep.GeneratedBy, rep.FailedRun, act.Runs[0].ID, rep.Content)
	}
	if readFile(t, dir, shipTask) != taskBefore {
		t.Error("the task note changed")
	}
	if n := len(fake.Requests()); n != 3 {
		t.Errorf("model calls = %d, want 3: each wake's model answered without a tool and the wake ended", n)
	}

	// agents/control resume brings the dormant agent back, with a clean
	// failure count, and wakes it at once.
	reportingModel(fake)
	var resumed protocol.AgentDetail
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "resume"}, &resumed)
	if resumed.Lifecycle != "active" || resumed.Failures != 0 || resumed.DormantReason != "" {
		t.Errorf("after resume: %+v, want active with no failures", resumed)
	}
	waitNth(e, "the report after resume", "margin/reportUpdated", 1, forTask(shipTask))
	waitWakes(t, e, a.ID, 1)
}

// With the model server down, the agent writes the offline report and
// waits for the model without counting a failure (SPEC §4.1); when the
// server comes back, margin's probe finds it and the agent wakes.
func TestAgentOfflineReportWithoutModel(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	fake.Stop()

	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_AGENTS_DORMANT_AFTER=1"))
	e.Initialize(dir)
	createAgent(t, e, shipTask)
	upd := waitNth(e, "the offline report", "margin/reportUpdated", 1, forTask(shipTask))
	if !strings.Contains(string(upd), "Offline summary") {
		t.Errorf("reportUpdated = %s, want the offline tldr", upd)
	}
	report := readFile(t, dir, shipReport)
	for _, want := range []string{
		`generated_by: "offline"`, "4 of 8 checklist items done", "**status**: in-progress", "**priority**: P1", "**due**: 2026-11-27",
		"- ☐ QA on staging with the Acme sample (12 MB)", "## Recent linked entries", "[[Daily/2026-11-20#11:00|2026-11-20 11:00]]",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("offline report lacks %q:\n%s", want, report)
		}
	}
	st := waitNth(e, "agentStatus after the offline wake", "margin/agentStatus", 1, nil)
	if !strings.Contains(string(st), `"failures":0`) || !strings.Contains(string(st), `"lifecycle":"active"`) ||
		!strings.Contains(string(st), "waiting for the model") {
		t.Errorf("agentStatus = %s, want no failure (dormant_after is 1) and the agent waiting for the model", st)
	}

	fake.Start()
	waitNth(e, "the model's report once the server is back", "margin/reportUpdated", 2, forTask(shipTask))
	if report := readFile(t, dir, shipReport); !strings.Contains(report, "generated_by: \""+taskModel+"\"") {
		t.Errorf("report after the server came back:\n%s", report)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want the one wake after the server came back", n)
	}
}

func TestAgentReportsBrokenTaskFrontmatter(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	writeFile(t, dir, "Tasks/Broken.md", "---\nstatus: [open\n  due: tomorrow\n---\n# Broken\n\n- [ ] fix me\n")
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	createAgent(t, e, "Tasks/Broken.md")
	waitNth(e, "the broken-frontmatter report", "margin/reportUpdated", 1, forTask("Tasks/Broken.md"))
	report := readFile(t, dir, "Margin/Reports/Broken.md")
	if !strings.Contains(report, "does not parse") || !strings.Contains(report, `generated_by: "margin"`) {
		t.Errorf("report:\n%s\nwant it to say the frontmatter does not parse", report)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("model calls = %d, want none for an unreadable task", n)
	}
}

func TestAgentFollowsRenameAndSleepsOnDelete(t *testing.T) {
	e, _, dir, a := firstWake(t)
	if err := os.Rename(filepath.Join(dir, shipTask), filepath.Join(dir, "Tasks/Ship CSV export.md")); err != nil {
		t.Fatal(err)
	}
	waitNth(e, "agentStatus naming the new path", "margin/agentStatus", 1, forTask("Tasks/Ship CSV export.md"))
	var got protocol.AgentDetail
	e.MustCall("agents/get", map[string]any{"task": "Tasks/Ship CSV export.md"}, &got)
	if got.ID != a.ID || got.Lifecycle != "active" {
		t.Errorf("after rename: %+v, want the same agent, active", got)
	}
	os.Remove(filepath.Join(dir, "Tasks/Ship CSV export.md"))
	p := waitNth(e, "agentStatus after the delete", "margin/agentStatus", 2, nil)
	if !strings.Contains(string(p), `"lifecycle":"dormant"`) || !strings.Contains(string(p), "task deleted") {
		t.Errorf("agentStatus = %s, want dormant because the task was deleted", p)
	}
}
