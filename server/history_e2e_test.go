package server_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// gitIn runs git in dir as a person would, failing the test on an error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@x", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@x")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestUndoThroughTheBinary applies a change set of each item kind (a field
// splice, a checklist append, a checkbox flip) in a vault that is a git
// repository, then undoes each item alone with the person's edit elsewhere
// in the note kept, refuses an undo at lines the person changed, redoes an
// undo, and checks the git history and that nothing else of the repository
// moved.
func TestUndoThroughTheBinary(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	fake := llmtest.NewOllama(t, taskModel)
	firstWakeProposes(fake, "QA and docs left.",
		llmtest.ToolCall{Name: "update_task_estimate", Args: map[string]any{"estimate": "2h", "human_summary": "Set estimate to 2h"}},
		llmtest.ToolCall{Name: "add_multiple_checklist_items", Args: map[string]any{"items": []map[string]string{{"title": "Write the changelog"}}}},
		llmtest.ToolCall{Name: "update_checklist_items", Args: map[string]any{"items": []map[string]any{{"text": "Turn the flag on for Acme", "done": true}}}},
	)
	dir := editortest.SampleVault(t)
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "my vault")
	head := gitIn(t, dir, "rev-parse", "HEAD")
	index, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))

	e := editortest.Start(t, agentEnv(fake.URL))
	e.MustCall("initialize", map[string]any{"rootUri": "file://" + dir, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "Testing Editor"}}, nil)
	e.Notify("initialized", map[string]any{})
	a := createAgent(t, e, shipTask)
	var cs protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the change set", "margin/changeSetCreated", 1, forTask(shipTask)), &cs)
	waitWakes(t, e, a.ID, 1)
	original := readFile(t, dir, shipTask)

	var got protocol.ChangeSet
	e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, &got)
	applied := readFile(t, dir, shipTask)
	for _, want := range []string{"\nestimate: 2h\n", "\n- [ ] Write the changelog\n", "\n- [x] Turn the flag on for Acme"} {
		if !strings.Contains(applied, want) {
			t.Fatalf("applied task lacks %q:\n%s", want, applied)
		}
	}
	// The person edits elsewhere in the note.
	mine := "\n- A line of my own.\n"
	writeFile(t, dir, shipTask, applied+mine)

	// Each item alone, the flip first, then the append, then the field by the editor's command.
	e.MustCall("changes/undo", map[string]any{"id": cs.ID, "item": "c3"}, &got)
	if now := readFile(t, dir, shipTask); !strings.Contains(now, "\n- [ ] Turn the flag on for Acme") || !strings.Contains(now, "\n- [ ] Write the changelog\n") ||
		!strings.Contains(now, "estimate: 2h") || itemStatus(got, "c3") != "undone" {
		t.Fatalf("after undoing c3 (%+v):\n%s", got, now)
	}
	e.MustCall("changes/undo", map[string]any{"id": cs.ID, "item": "c2"}, &got)
	e.MustCall("workspace/executeCommand", map[string]any{"command": "margin.undo", "arguments": []string{cs.ID, "c1"}}, &got)
	if now := readFile(t, dir, shipTask); now != original+mine {
		t.Fatalf("after undoing every item, the task is not the original with the person's line, byte for byte:\n%s", now)
	}

	// The set's file says so, with an Apply again lens on each undone item.
	file := readFile(t, dir, cs.Path)
	if !strings.Contains(file, "- [-] Set estimate to 2h ↩️ undone ") {
		t.Errorf("change set file after the undo:\n%s", file)
	}
	var lenses []protocol.CodeLens
	e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + cs.Path}}, &lenses)
	if len(lenses) != 3 || lenses[0].Command.Command != "margin.undo" || lenses[0].Command.Title != "Apply again" {
		t.Errorf("lenses on the undone items = %+v", lenses)
	}

	// Undo of the undo applies c1 again, with an Undo lens.
	e.MustCall("changes/undo", map[string]any{"id": cs.ID, "item": "c1"}, &got)
	if now := readFile(t, dir, shipTask); !strings.Contains(now, "\nestimate: 2h\n") || itemStatus(got, "c1") != "confirmed" {
		t.Fatalf("undo of the undo of c1 (%+v):\n%s", got, now)
	}
	e.MustCall("textDocument/codeLens", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + cs.Path}}, &lenses)
	if len(lenses) != 3 || lenses[0].Command.Title != "Undo" || lenses[0].Command.Arguments[1] != "c1" {
		t.Errorf("lenses after applying c1 again = %+v", lenses)
	}

	// The person changes the line margin wrote: the undo is refused with the three texts.
	edited := strings.Replace(readFile(t, dir, shipTask), "estimate: 2h", "estimate: 3h", 1)
	writeFile(t, dir, shipTask, edited)
	err := e.Call("changes/undo", map[string]any{"id": cs.ID, "item": "c1"}, nil)
	if err == nil || err.Code != -33001 {
		t.Fatalf("undo of a line the person changed: %v, want -33001", err)
	}
	var data struct{ Path, Original, Margin, Current string }
	if json.Unmarshal(err.Data, &data) != nil || data.Current != edited || !strings.Contains(data.Original, "estimate: 1d") || !strings.Contains(data.Margin, "estimate: 2h") {
		t.Errorf("the refusal's data = %s", err.Data)
	}
	if now := readFile(t, dir, shipTask); now != edited {
		t.Fatal("a refused undo wrote the task")
	}
	if err := e.Call("changes/undo", map[string]any{"id": cs.ID, "item": "c9"}, nil); err == nil || err.Code != -33000 {
		t.Errorf("undo of an unknown item: %v, want -33000", err)
	}

	// The agent hears of it on its next wake.
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	poll(t, "a wake that saw the undo", func() bool {
		for _, r := range fake.Requests() {
			if strings.Contains(userMessage(r), "undone by the person") {
				return true
			}
		}
		return false
	})
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	// git: margin's writes are on refs/margin/history, and HEAD, the branch and the index are as they were.
	if now := gitIn(t, dir, "rev-parse", "HEAD"); now != head {
		t.Errorf("HEAD moved: %s -> %s", head, now)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, ".git", "index")); string(now) != string(index) {
		t.Error("the git index changed")
	}
	if got := gitIn(t, dir, "branch", "--format=%(refname)"); got != "refs/heads/main\n" {
		t.Errorf("branches: %s", got)
	}
	log := gitIn(t, dir, "log", "--format=%B", "refs/margin/history")
	for _, want := range []string{"Margin-Change-Set: " + cs.ID, "Margin-Item: c1 c2 c3", "Margin-Agent: " + a.ID, "Margin-Agent: person via Testing Editor",
		"Margin-Template: task-agent@", "Margin-Model: " + taskModel} {
		if !strings.Contains(log, want) {
			t.Errorf("git log of %s lacks %q:\n%s", "refs/margin/history", want, log)
		}
	}

	// The command line lists the writes and undoes too.
	margin := func(args ...string) (string, error) {
		cmd := exec.Command(editortest.Binary(t), append(args, "--vault", dir)...)
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "OLLAMA_HOST="+fake.URL)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err2 := margin("history", "--task", shipTask, "--json")
	var es []struct {
		Path, ChangeSet, Actor, Commit, Template, Model string
		Items                                           []string
	}
	err2 = errors.Join(err2, json.Unmarshal([]byte(out), &es))
	undone, applies := 0, 0
	for _, e := range es {
		if e.Actor == "person via Testing Editor" && e.Path == shipTask && e.ChangeSet == cs.ID && e.Commit != "" {
			undone++
		}
		// The apply names the template version and the model of the wake that proposed it.
		if e.Actor == a.ID && len(e.Items) == 3 {
			applies++
			if !strings.HasPrefix(e.Template, "task-agent@") || e.Model != taskModel {
				t.Errorf("the apply's record names template %q and model %q, want task-agent@… and %s", e.Template, e.Model, taskModel)
			}
			if msg := gitIn(t, dir, "log", "-1", "--format=%B", e.Commit); !strings.Contains(msg, "Margin-Template: "+e.Template) || !strings.Contains(msg, "Margin-Model: "+taskModel) {
				t.Errorf("the apply's commit lacks its template and model:\n%s", msg)
			}
		}
	}
	if err2 != nil || undone != 4 || applies != 1 {
		t.Errorf("margin history --json: %v, want the 4 undos, committed, and the apply\n%s", err2, out)
	}
	writeFile(t, dir, shipTask, strings.Replace(edited, "estimate: 3h", "estimate: 2h", 1))
	if out, err := margin("undo", cs.ID, "c1"); err != nil || !strings.Contains(readFile(t, dir, shipTask), "estimate: 1d") {
		t.Errorf("margin undo: %v\n%s", err, out)
	}
	if out, _ := margin("history", "--limit", "1"); !strings.Contains(out, "person via CLI") {
		t.Errorf("margin history after margin undo:\n%s", out)
	}
}

// checkHistoryAgrees checks margin's history against the files only margin
// writes (reports, journals, change sets): after a restart no write is left
// unsettled, and each file is what the latest recorded write of it wrote —
// a write that landed without its record, or a record of a write that
// never landed, shows here.
func checkHistoryAgrees(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var unsettled int
	if err := db.QueryRow(`SELECT count(*) FROM history WHERE state <> 'written'`).Scan(&unsettled); err != nil || unsettled != 0 {
		t.Errorf("%d writes left unsettled after a restart (%v)", unsettled, err)
	}
	checked := 0
	for _, rel := range mdFiles(t, dir) {
		if !strings.HasPrefix(rel, "Margin/Reports/") && !strings.HasPrefix(rel, "Margin/Journal/") && !strings.HasPrefix(rel, "Margin/Changes/") {
			continue
		}
		after, err := lastWritten(db, rel)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if now := readFile(t, dir, rel); now != string(after) {
			t.Errorf("%s is not what margin's history says margin last wrote:\n%s\n--- recorded\n%s", rel, now, after)
		}
		checked++
	}
	t.Logf("margin's history agrees with %d files only margin writes", checked)
}

// lastWritten is the file margin last wrote at rel, by its history: a
// committed write keeps only the bytes it changed (after_part), so the
// file is rebuilt from the last whole one, write by write. That holds for
// a file only margin writes, whose every write replaced the one before.
func lastWritten(db *sql.DB, rel string) ([]byte, error) {
	rows, err := db.Query(`SELECT after, after_part, before_pre, before_suf FROM history WHERE path = ? AND state = 'written' ORDER BY id`, rel)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cur []byte
	n := 0
	for rows.Next() {
		var (
			after    []byte
			part     bool
			pre, suf int
		)
		if err := rows.Scan(&after, &part, &pre, &suf); err != nil {
			return nil, err
		}
		n++
		if !part {
			cur = after
			continue
		}
		if pre+suf > len(cur) {
			return nil, fmt.Errorf("write %d of it keeps %d+%d bytes of a file of %d", n, pre, suf, len(cur))
		}
		cur = slices.Concat(cur[:pre], after, cur[len(cur)-suf:])
	}
	if n == 0 {
		return nil, errors.New("no write of it in margin's history")
	}
	return cur, rows.Err()
}

// TestUndoOfAnOpenNoteGoesThroughTheEditor undoes an item of a task note
// open in the editor, with typing not saved yet: the undo is an edit of
// the buffer (workspace/applyEdit with its version) that keeps the typing,
// and the file on disk is left alone.
func TestUndoOfAnOpenNoteGoesThroughTheEditor(t *testing.T) {
	e, _, dir, _, cs := proposed(t)
	var got protocol.ChangeSet
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, &got)
	onDisk := readFile(t, dir, shipTask)
	var (
		mu    sync.Mutex
		edits []json.RawMessage
	)
	e.OnRequest("workspace/applyEdit", func(p json.RawMessage) (any, *editortest.RPCError) {
		mu.Lock()
		defer mu.Unlock()
		edits = append(edits, p)
		return map[string]any{"applied": true}, nil
	})
	typed := onDisk + "\n- typed, not saved\n"
	e.Notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": "file://" + dir + "/" + shipTask, "version": 9, "languageId": "markdown", "text": typed}})
	e.MustCall("workspace/executeCommand", map[string]any{"command": "margin.undo", "arguments": []string{cs.ID, "c1"}}, &got)
	if itemStatus(got, "c1") != "undone" {
		t.Fatalf("margin.undo c1 = %+v", got)
	}
	if readFile(t, dir, shipTask) != onDisk {
		t.Error("the undo of an open note was written on disk")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(edits) != 1 {
		t.Fatalf("applyEdit requests = %d, want the task's", len(edits))
	}
	var p protocol.ApplyEditParams
	json.Unmarshal(edits[0], &p)
	dc := p.Edit.DocumentChanges
	if len(dc) != 1 || dc[0].TextDocument.Version != 9 || len(dc[0].Edits) != 1 || dc[0].Edits[0].NewText != "estimate: 1d\n" {
		t.Errorf("applyEdit = %s, want the estimate line put back in version 9", edits[0])
	}
}

// TestTwoMarginsCommitEachWriteOnce runs margin log from the command line
// while margin serve writes into the same git vault: every write of
// either is committed to refs/margin/history exactly once.
func TestTwoMarginsCommitEachWriteOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	dir := editortest.SampleVault(t)
	gitIn(t, dir, "init", "-q")
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			cmd := exec.Command(editortest.Binary(t), "log", "--vault", dir, fmt.Sprintf("Bench 3x5 @ %d", 180+i))
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "OLLAMA_HOST=http://127.0.0.1:1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("margin log: %v\n%s", err, out)
			}
		})
		e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	}
	wg.Wait()
	waitWakes(t, e, a.ID, 2)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var writes, uncommitted int
	db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE commit_id IN ('', '-')) FROM history WHERE state = 'written'`).Scan(&writes, &uncommitted)
	ids := strings.Fields(gitIn(t, dir, "log", "--format=%(trailers:key=Margin-Write,valueonly)", "refs/margin/history"))
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("write %s committed twice", id)
		}
		seen[id] = true
	}
	if uncommitted != 0 || len(ids) != writes || writes < 6 {
		t.Errorf("%d writes recorded, %d uncommitted, %d commits", writes, uncommitted, len(ids))
	}
}

// TestUndoAReportWriteThroughTheBinary: changes/undo {write} undoes a
// write that is no change item's (the agent's report) by its history id,
// and refuses, with -33001 and the three versions, to undo one whose text
// the person has edited since.
func TestUndoAReportWriteThroughTheBinary(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	firstWakeProposes(fake, "QA left.")
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	waitWakes(t, e, a.ID, 1)
	var rep protocol.Report
	e.MustCall("reports/get", map[string]any{"id": a.ID}, &rep)
	first := readFile(t, dir, rep.Path)
	e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
	waitWakes(t, e, a.ID, 2)
	if readFile(t, dir, rep.Path) == first {
		t.Fatal("the second wake did not rewrite the report")
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var writes []int64
	rows, err := db.Query(`SELECT id FROM history WHERE path = ? AND state = 'written' ORDER BY id`, rep.Path)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		writes = append(writes, id)
	}
	rows.Close()
	if len(writes) != 2 {
		t.Fatalf("writes of the report %v, want 2", writes)
	}

	var got protocol.ChangesUndoResult
	e.MustCall("changes/undo", map[string]any{"write": writes[1]}, &got)
	if got.Write == nil || got.Write.Write != writes[1] || got.Write.Path != rep.Path || got.ChangeSet != nil {
		t.Errorf("changes/undo {write} = %+v", got)
	}
	if now := readFile(t, dir, rep.Path); now != first {
		t.Errorf("after the undo the report is\n%s\nwant the first wake's\n%s", now, first)
	}

	// The person edits the report: the undo of its creation is refused.
	edited := first + "\nMy own line.\n"
	writeFile(t, dir, rep.Path, edited)
	rpcErr := e.Call("changes/undo", map[string]any{"write": writes[0]}, nil)
	if rpcErr == nil || rpcErr.Code != -33001 {
		t.Fatalf("undo of a report the person edited: %v, want -33001", rpcErr)
	}
	var data struct{ Path, Margin, Current string }
	if json.Unmarshal(rpcErr.Data, &data) != nil || data.Path != rep.Path || data.Margin != first || data.Current != edited {
		t.Errorf("the refusal's data = %s", rpcErr.Data)
	}
	if readFile(t, dir, rep.Path) != edited {
		t.Error("a refused undo wrote the report")
	}
	if err := e.Call("changes/undo", map[string]any{"write": writes[0], "id": "abc"}, nil); err == nil || err.Code != -32602 {
		t.Errorf("undo of a write and a change set at once: %v, want -32602", err)
	}
}

// An applied change item's write is undone through its change set, which
// records the undo as a decision: changes/undo {write} refuses it with
// -33007, naming the undo to run, and writes nothing.
func TestUndoByWriteOfAnItemIsRefused(t *testing.T) {
	e, _, dir, _, cs := proposed(t)
	e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": []map[string]string{{"item": "c1", "verdict": "confirmed"}}}, nil)
	applied := readFile(t, dir, shipTask)
	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var write int64
	if err := db.QueryRow(`SELECT id FROM history WHERE path = ? AND change_set = ? ORDER BY id DESC LIMIT 1`, shipTask, cs.ID).Scan(&write); err != nil {
		t.Fatal(err)
	}
	rpcErr := e.Call("changes/undo", map[string]any{"write": write}, nil)
	if rpcErr == nil || rpcErr.Code != -33007 || !strings.Contains(rpcErr.Message, "margin undo "+cs.ID+" c1") {
		t.Errorf("undo of an item's write by its id: %v, want -33007 naming the item's undo", rpcErr)
	}
	if readFile(t, dir, shipTask) != applied {
		t.Error("the refused undo wrote the task")
	}
}
