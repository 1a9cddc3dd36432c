package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	_ "modernc.org/sqlite"
)

// TestCrashKillNineAnywhere starts margin again and again on one vault
// while edits keep waking its agents and change sets are being approved,
// and SIGKILLs it after a random few milliseconds to a second and a half —
// during the startup scan's index commits, wakes, report and journal
// writes, change set files and their application. After every kill no
// file margin writes may be torn and no note's frontmatter broken; once a
// last run has recovered and settled, no temp file may be left, and the
// ledger and the vault must agree with no effect applied twice, and
// margin's history with the files only margin writes.
func TestCrashKillNineAnywhere(t *testing.T) {
	iterations := 12
	if soakLong {
		iterations = 200
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d iterations", seed, iterations)
	rng := rand.New(rand.NewPCG(seed, 1))

	fake := llmtest.NewOllama(t, taskModel)
	stormModel(fake, 2)
	dir := editortest.SampleVault(t)
	broken := brokenNotes(t, dir)
	env := agentEnv(fake.URL, "MARGIN_AGENTS_AUTO_CREATE=true", "MARGIN_AGENTS_QUIET_PERIOD=40ms", "MARGIN_AGENTS_MAX_WAIT=200ms",
		"MARGIN_LOG_LEVEL=info")

	tasks := []string{}
	for _, rel := range mdFiles(t, dir) {
		if strings.HasPrefix(rel, "Tasks/") {
			tasks = append(tasks, rel)
		}
	}
	leftTemp := 0
	for i := range iterations {
		e := editortest.Start(t, env)
		e.Initialize(dir)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			crashStorm(e, dir, tasks, rand.New(rand.NewPCG(seed, uint64(i)+2)), stop)
		}()
		time.Sleep(time.Duration(5+rng.IntN(1500)) * time.Millisecond)
		// The storm stops first: a request written to a dead process fails
		// the test from the storm's goroutine.
		close(stop)
		wg.Wait()
		if err := e.Process().Kill(); err != nil {
			t.Fatal(err)
		}
		e.Exit()
		leftTemp += len(tempFiles(t, dir))
		checkNotesWhole(t, dir, broken)
		if t.Failed() {
			t.Fatalf("after kill %d (seed %d)", i+1, seed)
		}
	}
	t.Logf("%d temp files found right after the kills", leftTemp)

	e := editortest.Start(t, env)
	e.Initialize(dir)
	counts := settle(t, e, dir)
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temp files left after restart: %v", left)
	}
	checkNotesWhole(t, dir, broken)
	checkLedgerAgrees(t, e, dir)
	checkHistoryAgrees(t, dir)
	var sets protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"status": "all"}, &sets)
	var decisions protocol.DecisionsListResult
	e.MustCall("decisions/list", map[string]any{"limit": 1000}, &decisions)
	t.Logf("after %d kills: %+v agents, %d change sets, %d decisions, %d model calls", iterations, counts, len(sets.ChangeSets), len(decisions.Decisions), len(fake.Requests()))
	if len(fake.Requests()) == 0 || len(sets.ChangeSets) == 0 {
		t.Errorf("the storm did not reach the agents: %d model calls, %d change sets", len(fake.Requests()), len(sets.ChangeSets))
	}
}

// crashStorm edits linked daily entries and task notes and approves every
// change set margin announces, until stop. Requests are sent without
// waiting for replies: the server may be dead before it answers.
func crashStorm(e *editortest.Editor, dir string, tasks []string, rng *rand.Rand, stop <-chan struct{}) {
	approved := map[string]bool{}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(10+rng.IntN(60)) * time.Millisecond):
		}
		task := tasks[rng.IntN(len(tasks))]
		stem := strings.TrimSuffix(filepath.Base(task), ".md")
		switch rng.IntN(3) {
		case 0: // a new entry linking the task, appended as a logger does
			p := filepath.Join(dir, "Daily", fmt.Sprintf("2026-12-%02d.md", 1+rng.IntN(5)))
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintf(f, "\n## %02d:%02d\nWorked on [[%s]], step %d.\n", rng.IntN(24), rng.IntN(60), stem, n)
				f.Close()
			}
		case 1: // a checklist line added to the task, saved whole
			p := filepath.Join(dir, task)
			if b, err := os.ReadFile(p); err == nil {
				os.WriteFile(p, append(b, fmt.Sprintf("- [ ] storm step %d\n", n)...), 0o644)
			}
		case 2: // approve what was proposed
			for _, m := range e.Received() {
				if m.Method != "margin/changeSetCreated" {
					continue
				}
				var cs struct{ ID string }
				json.Unmarshal(m.Params, &cs)
				if !approved[cs.ID] {
					approved[cs.ID] = true
					e.Send("changes/confirmAll", map[string]any{"id": cs.ID})
				}
			}
		}
	}
}

// TestChangeSetWithoutFileIsRestored reproduces what the crash suite found:
// a kill between storing a change set and creating its file left a set in
// the ledger that no person could see in the vault. The state is made by
// hand here (the ledger row without a recorded file, the file gone) and the
// restarted margin must write the file and announce the set.
func TestChangeSetWithoutFileIsRestored(t *testing.T) {
	e, _, dir, _, cs := proposed(t)
	before := readFile(t, dir, cs.Path)
	if err := e.Process().Kill(); err != nil {
		t.Fatal(err)
	}
	e.Exit()
	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), `UPDATE change_sets SET fingerprint = '' WHERE id = ?`, cs.ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Remove(filepath.Join(dir, cs.Path)); err != nil {
		t.Fatal(err)
	}

	fake := llmtest.NewOllama(t, taskModel)
	reportingModel(fake)
	e2 := editortest.Start(t, agentEnv(fake.URL))
	e2.Initialize(dir)
	e2.WaitFor("the restored change set announced", func(m editortest.Message) bool {
		return m.Method == "margin/changeSetCreated" && strings.Contains(string(m.Params), cs.ID)
	})
	if got := readFile(t, dir, cs.Path); got != before {
		t.Errorf("restored change set file:\n%s\nwant as first written:\n%s", got, before)
	}
	settle(t, e2, dir)
	checkLedgerAgrees(t, e2, dir)
}

// TestJournalAppendInterruptedBeforeItsRecord reproduces what the crash
// suite found: a kill after a journal append and before its ledger record
// left an observation the ledger did not know, and a re-run that repeated
// the call appended it twice. The crash state is made by hand: the call is
// left "started" (its effect under way) with its line in the journal, and
// the restarted margin must settle it from the journal, without appending.
func TestJournalAppendInterruptedBeforeItsRecord(t *testing.T) {
	const obs = "Deploy on a Thursday night hit a migration lock."
	dir, a := crashMidWake(t, obs)
	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ExecContext(context.Background(), `UPDATE tool_calls SET status = 'started', result = '' WHERE tool = 'record_observations'`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("marking the call started: %v (%d rows)", err, n)
	}
	db.Close()

	// The re-run's model repeats the call, then reports.
	e2, _ := recoverWake(t, dir, a, obs)
	if n := strings.Count(readFile(t, dir, shipJourn), obs); n != 1 {
		t.Errorf("journal has the observation %d times, want 1:\n%s", n, readFile(t, dir, shipJourn))
	}
	checkLedgerAgrees(t, e2, dir)
}

// TestWriteKilledBeforeItsRecordIsSettled makes by hand what a kill -9
// between a write and the settling of its record leaves (a record still
// 'writing', of a process that is gone): one whose write landed, one whose
// write did not. The restarted margin keeps the first as written and
// forgets the second.
func TestWriteKilledBeforeItsRecordIsSettled(t *testing.T) {
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(dir)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()

	db, err := sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	if err != nil {
		t.Fatal(err)
	}
	landed, lost := "Margin/Reports/landed.md", "Margin/Reports/lost.md"
	if err := os.MkdirAll(filepath.Join(dir, "Margin/Reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, landed, "margin's report\n")
	writeFile(t, dir, lost, "the report before\n")
	for _, r := range []struct{ path, before, after, state string }{
		{lost, "", "the report before\n", "written"}, // margin's earlier write
		{landed, "", "margin's report\n", "writing"},
		{lost, "the report before\n", "the report margin was writing\n", "writing"},
	} {
		// pid 0x7fffffff is no process.
		if _, err := db.Exec(`INSERT INTO history (at, path, existed, before, after, state, pid) VALUES (?, ?, ?, ?, ?, ?, 2147483647)`,
			time.Now().UTC().Format(time.RFC3339Nano), r.path, r.before != "", []byte(r.before), []byte(r.after), r.state); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	e = editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false", "XDG_CONFIG_HOME=" + t.TempDir()})
	e.Initialize(dir)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	e.Exit()
	checkHistoryAgrees(t, dir)
	db, _ = sql.Open("sqlite", filepath.Join(dir, ".margin/state.db"))
	defer db.Close()
	var n int
	if db.QueryRow(`SELECT count(*) FROM history WHERE path = ?`, lost).Scan(&n); n != 1 {
		t.Errorf("the write that never landed is still recorded")
	}
}
