package server_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// firstWakeProposes scripts a model that makes calls on the first wake and
// afterwards only reports, with tldr.
func firstWakeProposes(o *llmtest.Ollama, tldr string, calls ...llmtest.ToolCall) {
	var once sync.Once
	o.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": tldr, "content": "## Left\n- QA\n"}}
		reply := llmtest.Reply{ToolCalls: []llmtest.ToolCall{report}}
		once.Do(func() { reply.ToolCalls = append(calls, report) })
		return reply
	})
}

// proposingModel proposes on the first wake (an estimate and two checklist
// items, which explode into three change items) and only reports after.
func proposingModel(o *llmtest.Ollama) {
	firstWakeProposes(o, "QA and docs left.",
		llmtest.ToolCall{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h", "human_summary": "Set estimate to 2h"}},
		llmtest.ToolCall{Name: "add_multiple_checklist_items", Args: map[string]any{"items": []map[string]string{{"title": "Announce the export to Acme"}, {"title": "Write the changelog"}}}},
	)
}

// proposed starts margin with the proposing model and waits for the change
// set of the first wake.
func proposed(t *testing.T, extraEnv ...string) (*editortest.Editor, *llmtest.Ollama, string, protocol.AgentDetail, protocol.ChangeSet) {
	t.Helper()
	return proposedFor(t, map[string]any{}, nil, extraEnv...)
}

// proposedFor is proposed for a client with these capabilities; setup,
// when set, prepares the editor before initialize (its answers to the
// server's requests).
func proposedFor(t *testing.T, capabilities map[string]any, setup func(*editortest.Editor), extraEnv ...string) (*editortest.Editor, *llmtest.Ollama, string, protocol.AgentDetail, protocol.ChangeSet) {
	t.Helper()
	fake := llmtest.NewOllama(t, taskModel)
	proposingModel(fake)
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, extraEnv...))
	if setup != nil {
		setup(e)
	}
	e.InitializeWith(dir, capabilities)
	a := createAgent(t, e, shipTask)
	var cs protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the change set", "margin/changeSetCreated", 1, forTask(shipTask)), &cs)
	waitWakes(t, e, a.ID, 1)
	return e, fake, dir, a, cs
}

func itemStatus(cs protocol.ChangeSet, id string) string {
	for _, it := range cs.Items {
		if it.ID == id {
			return it.Status
		}
	}
	return ""
}

// changedLines are the lines of after that before does not have, and the
// other way round.
func changedLines(before, after string) (added, removed []string) {
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	for _, l := range a {
		if !slices.Contains(b, l) {
			added = append(added, l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			removed = append(removed, l)
		}
	}
	return added, removed
}

func TestChangeSetTickedInFileAppliesOnlyThatLine(t *testing.T) {
	e, _, dir, a, cs := proposed(t)
	if len(cs.Items) != 3 || cs.Items[0].Summary != "Set estimate to 2h" || cs.Items[1].Tool != "add_checklist_item" ||
		cs.Items[2].Summary != `Add checklist item "Write the changelog"` {
		t.Fatalf("changeSetCreated items = %+v, want the estimate and two exploded checklist items", cs.Items)
	}
	file := readFile(t, dir, cs.Path)
	for _, want := range []string{"---\nmargin: changeset\n", "\nstatus: pending\n", "\nagent: " + a.ID + "\n",
		"\n- [ ] Set estimate to 2h ^c1\n", "\n- [ ] Add checklist item \"Write the changelog\" ^c3\n"} {
		if !strings.Contains(file, want) {
			t.Errorf("change set file lacks %q:\n%s", want, file)
		}
	}

	if got := waitWakes(t, e, a.ID, 1); got.PendingChanges != 3 {
		t.Errorf("pendingChanges = %d, want 3", got.PendingChanges)
	}
	var lenses []protocol.CodeLens
	e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + cs.Path}}, &lenses)
	if len(lenses) != 9 || lenses[0].Command.Command != "margin.confirm" || lenses[1].Command.Command != "margin.reject" || lenses[2].Command.Command != "margin.preview" ||
		lenses[8].Command.Arguments[1] != "c3" || !strings.HasPrefix(strings.Split(file, "\n")[lenses[0].Range.Start.Line], "- [ ] Set estimate") {
		t.Errorf("change set lenses = %+v, want Apply, Reject and Diff on each item's line", lenses)
	}
	e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + shipTask}}, &lenses)
	if len(lenses) != 3 || lenses[0].Command.Title != "TLDR: QA and docs left." || lenses[1].Command.Title != "3 suggested changes" || lenses[2].Command.Command != "margin.confirmAll" {
		t.Errorf("task lenses = %+v, want the TLDR and the open change set with its apply all", lenses)
	}

	taskBefore := readFile(t, dir, shipTask)
	writeFile(t, dir, cs.Path, strings.Replace(file, "- [ ] Set estimate to 2h ^c1", "- [x] Set estimate to 2h ^c1", 1))
	applied := waitNth(e, "c1 applied", "margin/changeApplied", 1, nil)
	var ca struct{ ID, Item, Status string }
	json.Unmarshal(applied, &ca)
	if ca.ID != cs.ID || ca.Item != "c1" || ca.Status != "confirmed" {
		t.Fatalf("changeApplied = %s, want c1 of %s confirmed", applied, cs.ID)
	}
	added, removed := changedLines(taskBefore, readFile(t, dir, shipTask))
	if !slices.Equal(added, []string{"estimate: 2h"}) || !slices.Equal(removed, []string{"estimate: 1d"}) {
		t.Errorf("task diff: +%q -%q, want only the estimate line", added, removed)
	}
	file = readFile(t, dir, cs.Path)
	for _, want := range []string{"\nstatus: partially-resolved\n", "\n- [x] Set estimate to 2h ✅ ", "\n- [ ] Add checklist item \"Announce the export to Acme\" ^c2\n"} {
		if !strings.Contains(file, want) {
			t.Errorf("decided change set file lacks %q:\n%s", want, file)
		}
	}

	// The decision wakes the agent; margin's own write of the task, which
	// lands inside the same quiet period, adds no reason of its own.
	if got := waitWakes(t, e, a.ID, 2); got.PendingChanges != 2 {
		t.Errorf("pendingChanges after one decision = %d, want 2", got.PendingChanges)
	}
	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	if len(act.Runs) != 2 || act.Runs[0].Reason != "decision on a change set" {
		t.Errorf("runs = %+v, want a second run woken by the decision alone", act.Runs)
	}
	var ds protocol.DecisionsListResult
	e.MustCall("decisions/list", map[string]any{"task": shipTask}, &ds)
	if len(ds.Decisions) != 1 || ds.Decisions[0].Verdict != "confirmed" || ds.Decisions[0].Outcome != "confirmed" {
		t.Errorf("decisions = %+v, want the one confirmation", ds.Decisions)
	}
}

func TestChangeSetRejectionReachesTheNextWake(t *testing.T) {
	e, fake, _, a, cs := proposed(t)

	var got protocol.ChangeSet
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{
		{"item": "c1", "verdict": "rejected", "reason": "a day is right, QA is slow"},
	}}, &got)
	if got.Status != "partially-resolved" || itemStatus(got, "c1") != "rejected" {
		t.Errorf("after the rejection: %+v", got)
	}
	waitWakes(t, e, a.ID, 2)
	reqs := fake.Requests()
	msg := userMessage(reqs[len(reqs)-1])
	_, decisions, _ := strings.Cut(msg, "## Recent User Decisions\n\n")
	decisions, _, _ = strings.Cut(decisions, "\n## ")
	if !strings.Contains(decisions, "rejected: Set estimate to 2h (update_task_estimate) — reason: a day is right, QA is slow") {
		t.Errorf("the next wake's Recent User Decisions:\n%s\nwant the rejection with its reason", decisions)
	}

	// The same decision again changes nothing and records nothing.
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{
		{"item": "c1", "verdict": "rejected", "reason": "again"},
	}}, &got)
	var ds protocol.DecisionsListResult
	e.MustCall("decisions/list", map[string]any{"agent": a.ID}, &ds)
	if len(ds.Decisions) != 1 || ds.Decisions[0].Reason != "a day is right, QA is slow" {
		t.Errorf("decisions after a repeat = %+v, want the first one only", ds.Decisions)
	}

	for _, tc := range []struct {
		name   string
		params map[string]any
		code   int
	}{
		{"unknown change set", map[string]any{"id": "nope", "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, -33000},
		{"unknown item", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c9", "verdict": "confirmed"}}}, -33000},
		{"bad verdict", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c2", "verdict": "maybe"}}}, -32602},
		{"no decisions", map[string]any{"id": cs.ID}, -32602},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Call("changes/decide", tc.params, nil); err == nil || err.Code != tc.code {
				t.Errorf("changes/decide %v: %v, want code %d", tc.params, err, tc.code)
			}
		})
	}
	if err := e.Call("changes/confirmAll", map[string]any{"id": "nope"}, nil); err == nil || err.Code != -33000 {
		t.Errorf("confirmAll of an unknown set: %v, want -33000", err)
	}

	// An editor's button runs the same decision through executeCommand.
	e.MustCall("workspace/executeCommand", map[string]any{"command": "margin.confirm", "arguments": []string{cs.ID, "c2"}}, &got)
	if itemStatus(got, "c2") != "confirmed" {
		t.Errorf("margin.confirm c2: %+v", got)
	}
	for _, p := range []map[string]any{
		{"command": "margin.launch", "arguments": []string{cs.ID}},
		{"command": "margin.confirm", "arguments": []string{cs.ID}},
		{"command": "margin.reject", "arguments": []any{cs.ID, 3}},
	} {
		if err := e.Call("workspace/executeCommand", p, nil); err == nil || err.Code != -32602 {
			t.Errorf("executeCommand %v: %v, want -32602", p, err)
		}
	}
}

func TestChangeSetStaleItemIsNotApplied(t *testing.T) {
	e, _, dir, _, cs := proposed(t)

	// The person sets the estimate themselves after the proposal.
	task := strings.Replace(readFile(t, dir, shipTask), "estimate: 1d", "estimate: 3h", 1)
	writeFile(t, dir, shipTask, task)
	var got protocol.ChangeSet
	e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, &got)
	if itemStatus(got, "c1") != "stale" || itemStatus(got, "c2") != "confirmed" || got.Status != "resolved" {
		t.Fatalf("after confirmAll: %+v, want c1 stale and the checklist items confirmed", got)
	}
	if !strings.Contains(got.Items[0].Detail, "estimate changed since it was proposed") {
		t.Errorf("stale detail = %q", got.Items[0].Detail)
	}
	after := readFile(t, dir, shipTask)
	added, removed := changedLines(task, after)
	if !slices.Equal(added, []string{"- [ ] Announce the export to Acme", "- [ ] Write the changelog"}) || len(removed) != 0 {
		t.Errorf("task diff: +%q -%q, want only the two checklist items", added, removed)
	}
	if !strings.Contains(readFile(t, dir, cs.Path), "- [-] Set estimate to 2h — not applied: the task's estimate changed since it was proposed ^c1") {
		t.Errorf("change set file:\n%s\nwant c1 marked not applied", readFile(t, dir, cs.Path))
	}
	// Deciding again applies nothing twice.
	e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, &got)
	if readFile(t, dir, shipTask) != after {
		t.Error("a second confirmAll changed the task again")
	}
}

func TestChangeSetOpenDocumentGoesThroughApplyEdit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		applied    bool
		wantStatus string
	}{
		{"editor applies", true, "confirmed"},
		{"editor refuses", false, "pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, dir, _, cs := proposed(t)
			var mu sync.Mutex
			var edits []json.RawMessage
			e.OnRequest("workspace/applyEdit", func(p json.RawMessage) (any, *editortest.RPCError) {
				mu.Lock()
				edits = append(edits, p)
				mu.Unlock()
				return map[string]any{"applied": tc.applied}, nil
			})
			text := readFile(t, dir, shipTask)
			uri := "file://" + dir + "/" + shipTask
			e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 4, "languageId": "markdown", "text": text}})
			setText := readFile(t, dir, cs.Path)
			e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + cs.Path, "version": 1, "languageId": "markdown", "text": setText}})

			var got protocol.ChangeSet
			e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, &got)
			if s := itemStatus(got, "c1"); s != tc.wantStatus {
				t.Errorf("c1 = %s (%s), want %s", s, got.Items[0].Detail, tc.wantStatus)
			}
			if !tc.applied && !strings.Contains(got.Items[0].Detail, "refused") {
				t.Errorf("a refusal is not explained: %q", got.Items[0].Detail)
			}
			if readFile(t, dir, shipTask) != text || readFile(t, dir, cs.Path) != setText {
				t.Error("an open note was written on disk")
			}
			mu.Lock()
			defer mu.Unlock()
			// The task's edit; when it was applied, the open change set
			// file's statuses follow through the editor too.
			want := 1
			if tc.applied {
				want = 2
			}
			if len(edits) != want {
				t.Fatalf("applyEdit requests = %d, want %d", len(edits), want)
			}
			if tc.applied && !strings.Contains(string(edits[1]), "- [x] Set estimate to 2h ✅ ") {
				t.Errorf("change set file edit = %s, want c1's line ticked with its date", edits[1])
			}
			var p protocol.ApplyEditParams
			json.Unmarshal(edits[0], &p)
			dc := p.Edit.DocumentChanges
			if len(dc) != 1 || dc[0].TextDocument.Version != 4 || len(dc[0].Edits) != 1 {
				t.Fatalf("applyEdit = %s, want one edit of version 4", edits[0])
			}
			ed := dc[0].Edits[0]
			if ed.Range.Start.Line != 6 || ed.Range.End.Line != 7 || ed.NewText != "estimate: 2h\n" {
				t.Errorf("edit = %+v, want line 6 (estimate) replaced only", ed)
			}
		})
	}
}

func TestChangeSetExpires(t *testing.T) {
	e, _, dir, _, cs := proposed(t, "MARGIN_AGENTS_CHANGESET_EXPIRE_AFTER=300ms")
	var list protocol.ChangesListResult
	poll(t, "the change set to expire", func() bool {
		e.MustCall("changes/list", map[string]any{}, &list)
		return len(list.ChangeSets) == 0
	})
	e.MustCall("changes/list", map[string]any{"status": "expired", "task": shipTask}, &list)
	if len(list.ChangeSets) != 1 || list.ChangeSets[0].ID != cs.ID || itemStatus(list.ChangeSets[0], "c1") != "expired" {
		t.Fatalf("expired sets = %+v, want %s with expired items", list.ChangeSets, cs.ID)
	}
	if file := readFile(t, dir, cs.Path); !strings.Contains(file, "\nstatus: expired\n") || !strings.Contains(file, "- [-] Set estimate to 2h — expired ^c1") {
		t.Errorf("expired change set file:\n%s", file)
	}
	var got protocol.ChangeSet
	e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, &got)
	if got.Status != "expired" {
		t.Errorf("confirming an expired set: %+v, want it left expired", got)
	}
}

func TestChangeSetsSplitAtMaxItemsAndSupersede(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	var mu sync.Mutex
	calls := 0
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		report := llmtest.ToolCall{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- QA\n"}}
		if n == 1 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h"}},
				{Name: "update_task_priority", Args: map[string]any{"priority": "P0"}},
				{Name: "add_multiple_checklist_items", Args: map[string]any{"items": []map[string]string{{"title": "Write the changelog"}}}},
				report,
			}}
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"estimate": "3h"}}, report}}
	})
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL, "MARGIN_AGENTS_CHANGESET_MAX_ITEMS=2"))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	var first, second protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the first set", "margin/changeSetCreated", 1, nil), &first)
	json.Unmarshal(waitNth(e, "the further set", "margin/changeSetCreated", 2, nil), &second)
	if len(first.Items) != 2 || len(second.Items) != 1 || second.Items[0].ID != "c1" || second.Items[0].Tool != "add_checklist_item" {
		t.Fatalf("sets = %+v and %+v, want 2 items then 1", first, second)
	}
	waitWakes(t, e, a.ID, 1)

	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	var third protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the newer estimate", "margin/changeSetCreated", 3, nil), &third)
	waitWakes(t, e, a.ID, 2)
	var list protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"status": "all"}, &list)
	byID := map[string]protocol.ChangeSet{}
	for _, cs := range list.ChangeSets {
		byID[cs.ID] = cs
	}
	if old := byID[first.ID]; itemStatus(old, "c1") != "superseded" || itemStatus(old, "c2") != "pending" || old.Status != "partially-resolved" {
		t.Errorf("the older set after a newer estimate: %+v, want c1 superseded, c2 still pending", old)
	}
	if !strings.Contains(readFile(t, dir, first.Path), "- [-] Set estimate to 2h — superseded ^c1") {
		t.Errorf("older change set file:\n%s", readFile(t, dir, first.Path))
	}
	if err := e.Call("changes/decide", map[string]any{"id": first.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(readFile(t, dir, shipTask), "estimate: 2h") {
		t.Error("a superseded item was applied")
	}
}

func TestChangeSetFileEditedBadly(t *testing.T) {
	e, _, dir, _, cs := proposed(t)
	orig := readFile(t, dir, cs.Path)
	taskBefore := readFile(t, dir, shipTask)

	// Nonsense with a half-typed tick decides nothing.
	writeFile(t, dir, cs.Path, "{{{ not a change set\n- [x] Set estim ^c1\n")
	// Then: the frontmatter damaged, c1 reworded, c2 ticked, c3 twice with
	// different marks. Only c2 is a decision.
	damaged := strings.NewReplacer(
		"margin: changeset\n", "margin: [changeset\n",
		"- [ ] Set estimate to 2h ^c1", "- [x] Set estimate to 4h ^c1",
		`- [ ] Add checklist item "Announce the export to Acme" ^c2`, `- [x] Add checklist item "Announce the export to Acme" ^c2`,
		`- [ ] Add checklist item "Write the changelog" ^c3`, "- [x] Add checklist item \"Write the changelog\" ^c3\n- [-] Add checklist item \"Write the changelog\" ^c3",
	).Replace(orig)
	writeFile(t, dir, cs.Path, damaged)
	var ca struct{ ID, Item, Status string }
	json.Unmarshal(waitNth(e, "c2 applied", "margin/changeApplied", 1, nil), &ca)
	if ca.Item != "c2" || ca.Status != "confirmed" {
		t.Fatalf("changeApplied = %+v, want c2 confirmed", ca)
	}
	added, removed := changedLines(taskBefore, readFile(t, dir, shipTask))
	if !slices.Equal(added, []string{"- [ ] Announce the export to Acme"}) || len(removed) != 0 {
		t.Errorf("task diff: +%q -%q, want only c2's line", added, removed)
	}
	if got := readFile(t, dir, cs.Path); got != damaged {
		t.Errorf("a change set file with damaged frontmatter was rewritten; the person's text must stay:\n%s", got)
	}
	var list protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"task": shipTask}, &list)
	if len(list.ChangeSets) != 1 || itemStatus(list.ChangeSets[0], "c1") != "pending" || itemStatus(list.ChangeSets[0], "c3") != "pending" {
		t.Errorf("after the bad edits: %+v, want c1 and c3 still pending", list.ChangeSets)
	}
}

func TestChangeSetRepeatedProposalWaitsForTheFirst(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h", "human_summary": "Estimate 2h"}},
			{Name: "update_report", Args: map[string]any{"tldr": "QA left.", "content": "## Left\n- QA\n"}},
		}}
	})
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	waitWakes(t, e, a.ID, 1)
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	waitWakes(t, e, a.ID, 2)

	var list protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"status": "all"}, &list)
	if len(list.ChangeSets) != 1 || itemStatus(list.ChangeSets[0], "c1") != "pending" {
		t.Errorf("change sets = %+v, want the first one, still pending", list.ChangeSets)
	}
	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	told := false
	for _, m := range act.Messages {
		told = told || m.Role == "tool" && m.ToolName == "update_task_estimate" && strings.Contains(m.Content, "proposed already and waits for the person's decision")
	}
	if !told {
		t.Errorf("the model was not told its repeat proposal waits: %+v", act.Messages)
	}
}
