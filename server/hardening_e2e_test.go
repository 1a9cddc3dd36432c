package server_test

// Helpers shared by the hardening suites (soak, crash, disk full): a model
// that answers every wake, settling, and the invariants that must hold
// between the vault's files and margin's ledger whatever happened before.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault/edit"
	"go.yaml.in/yaml/v3"
)

// soakLong is set by `make soak` (MARGIN_SOAK=long): the hardening suites
// then run their long versions. The default is the short run of CI.
var soakLong = os.Getenv("MARGIN_SOAK") == "long"

var taskNoteRE = regexp.MustCompile(`\[data: the task note ([^\]]+)\]`)

// stormModel answers every wake with an observation and a report, and one
// wake in every proposeEvery (by a hash of its prompt) also proposes an
// estimate. Answers depend only on the prompt, as a model at temperature 0
// would, so a wake re-run with the same prompt repeats its calls exactly.
func stormModel(o *llmtest.Ollama, proposeEvery int) {
	o.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		msg := userMessage(r)
		sum := sha256.Sum256([]byte(msg))
		tag := hex.EncodeToString(sum[:4])
		task := "the task"
		if m := taskNoteRE.FindStringSubmatch(msg); m != nil {
			task = m[1]
		}
		calls := []llmtest.ToolCall{}
		if r.Messages[len(r.Messages)-1].Role == "user" {
			calls = append(calls, llmtest.ToolCall{Name: "record_observations", Args: map[string]any{"observations": []string{"Looked at " + task + " (" + tag + ")."}}})
			if proposeEvery > 0 && int(sum[4])%proposeEvery == 0 {
				calls = append(calls, llmtest.ToolCall{Name: "update_task_estimate", Args: map[string]any{
					"estimate": fmt.Sprintf("%dh", 1+int(sum[5])%9), "human_summary": "Re-estimate " + tag}})
			}
		}
		calls = append(calls, llmtest.ToolCall{Name: "update_report", Args: map[string]any{
			"tldr": "Reviewed " + tag + ".", "content": "## State\n- reviewed at " + tag + "\n"}})
		return llmtest.Reply{ToolCalls: calls}
	})
}

// settle waits until every change made so far has reached margin and every
// agent is idle: a marker note is indexed (the watcher delivers in order),
// then no wake is queued, running or waiting for the model, and no change
// is waiting to be routed to the agents, on several polls in a row.
func settle(t *testing.T, e *editortest.Editor, dir string) protocol.AgentCounts {
	t.Helper()
	marker := fmt.Sprintf("settlemarker%d", time.Now().UnixNano())
	writeFile(t, dir, "Inbox/settle.md", "# Settle\n\n"+marker+"\n")
	poll(t, "the settle marker indexed", func() bool { return len(searchHits(e, marker)) == 1 })
	var st protocol.StatusResult
	idle := 0
	deadline := time.Now().Add(4 * editortest.Timeout)
	for idle < 5 {
		if time.Now().After(deadline) {
			_, stacks := goroutines(e)
			t.Fatalf("agents never settled: %+v; margin's goroutines:\n%s", st.Agents, stacks)
		}
		e.MustCall("vault/status", nil, &st)
		if st.Agents.Queued == 0 && st.Agents.Running == 0 && st.Agents.Routing == 0 && st.Agents.WaitingForModel == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(50 * time.Millisecond) // a poll interval, not an assertion
	}
	return st.Agents
}

func searchHits(e *editortest.Editor, query string) []protocol.Hit {
	var res protocol.SearchResult
	e.MustCall("vault/search", map[string]any{"query": query}, &res)
	return res.Hits
}

// mdFiles lists the vault's markdown files (vault-relative), state dir
// excluded.
func mdFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".margin" || rel == ".git") {
			return fs.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tempFiles lists margin's atomic-write temp files left in the vault.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && edit.IsTempName(d.Name()) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// frontmatter returns a note's YAML frontmatter, or ok false if it has none.
func frontmatter(content string) (map[string]any, bool, error) {
	if !strings.HasPrefix(content, "---\n") {
		return nil, false, nil
	}
	end := strings.Index(content[4:], "\n---\n")
	if end < 0 {
		return nil, true, fmt.Errorf("frontmatter is not closed")
	}
	var m map[string]any
	err := yaml.Unmarshal([]byte(content[4:4+end]), &m)
	return m, true, err
}

// checkNotesWhole fails for any file margin writes (under Margin/) whose
// frontmatter does not parse or lacks its margin kind, and for any other
// note whose frontmatter parsed in the original vault and no longer does:
// the signs of a torn or half-written file.
func checkNotesWhole(t *testing.T, dir string, brokenBefore map[string]bool) {
	t.Helper()
	for _, rel := range mdFiles(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		fm, has, err := frontmatter(string(b))
		switch {
		case strings.HasPrefix(rel, "Margin/") && !strings.HasPrefix(rel, "Margin/Domains/"):
			if !has || err != nil || fm["margin"] == nil {
				t.Errorf("%s is not a whole margin file (frontmatter %v, %v):\n%s", rel, has, err, b)
			}
		case err != nil && !brokenBefore[rel]:
			t.Errorf("%s: frontmatter no longer parses: %v", rel, err)
		}
	}
}

// brokenNotes lists the notes whose frontmatter does not parse.
func brokenNotes(t *testing.T, dir string) map[string]bool {
	out := map[string]bool{}
	for _, rel := range mdFiles(t, dir) {
		b, _ := os.ReadFile(filepath.Join(dir, rel))
		if _, _, err := frontmatter(string(b)); err != nil {
			out[rel] = true
		}
	}
	return out
}

// checkLedgerAgrees checks, on a settled server, that the vault's files and
// margin's ledger tell one story: each change set in the ledger has its file
// and each change set file its ledger entry; each item was decided at most
// once; each journal holds exactly the observations its ledger records as
// applied; each report's wake count is its agent's.
func checkLedgerAgrees(t *testing.T, e *editortest.Editor, dir string) {
	t.Helper()
	var sets protocol.ChangesListResult
	e.MustCall("changes/list", map[string]any{"status": "all"}, &sets)
	inLedger := map[string]bool{}
	for _, cs := range sets.ChangeSets {
		inLedger[cs.Path] = true
		b, err := os.ReadFile(filepath.Join(dir, cs.Path))
		if err != nil {
			t.Errorf("change set %s of the ledger has no file: %v", cs.ID, err)
			continue
		}
		if !strings.Contains(string(b), "id: "+cs.ID) && !strings.Contains(string(b), `id: "`+cs.ID+`"`) {
			t.Errorf("%s does not carry change set id %s:\n%s", cs.Path, cs.ID, b)
		}
	}
	for _, rel := range mdFiles(t, dir) {
		if strings.HasPrefix(rel, "Margin/Changes/") && !inLedger[rel] {
			t.Errorf("change set file %s is not in the ledger", rel)
		}
	}

	var decisions protocol.DecisionsListResult
	e.MustCall("decisions/list", map[string]any{"limit": 1000}, &decisions)
	decided := map[string]int{}
	for _, d := range decisions.Decisions {
		if d.Verdict != "deferred" {
			decided[d.ChangeSet+"/"+d.Item]++
		}
	}
	for k, n := range decided {
		if n > 1 {
			t.Errorf("item %s was decided %d times", k, n)
		}
	}

	var list protocol.AgentsListResult
	e.MustCall("agents/list", nil, &list)
	for _, a := range list.Agents {
		var act protocol.Activity
		e.MustCall("agents/activity", map[string]any{"id": a.ID, "limit": 1000}, &act)
		want := map[string]int{}
		for _, tc := range act.ToolCalls {
			if tc.Tool != "record_observations" || tc.Status != "applied" {
				continue
			}
			var args struct{ Observations []string }
			json.Unmarshal(tc.Args, &args)
			for _, o := range args.Observations {
				want[o]++
			}
		}
		stem := strings.TrimSuffix(filepath.Base(a.Task), ".md")
		got := map[string]int{}
		if b, err := os.ReadFile(filepath.Join(dir, "Margin/Journal", stem+".md")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if _, text, ok := strings.Cut(l, " — "); ok && strings.HasPrefix(l, "- ") {
					got[text]++
				}
			}
		}
		for o, n := range got {
			if want[o] != n {
				t.Errorf("journal of %s has %q %d times, the ledger %d", a.Task, o, n, want[o])
			}
		}
		for o, n := range want {
			if got[o] == 0 {
				t.Errorf("journal of %s lacks %q, which the ledger records %d times", a.Task, o, n)
			}
		}

		var full protocol.AgentDetail
		e.MustCall("agents/get", map[string]any{"id": a.ID}, &full)
		b, err := os.ReadFile(filepath.Join(dir, "Margin/Reports", stem+".md"))
		if err != nil {
			// A completed wake is one whose update_report took effect.
			if full.Wakes > 0 {
				t.Errorf("agent of %s has %d wakes and no report: %v", a.Task, full.Wakes, err)
			}
			continue
		}
		fm, _, err := frontmatter(string(b))
		if err != nil {
			t.Errorf("report of %s: %v", a.Task, err)
			continue
		}
		if w, _ := fm["wake"].(int); fm["generated_by"] != "offline" && w != full.Wakes {
			t.Errorf("report of %s says wake %v, the ledger %d completed wakes", a.Task, fm["wake"], full.Wakes)
		}
	}
}

// goroutines counts margin's goroutines and gives their stacks.
func goroutines(e *editortest.Editor) (n int, stacks string) {
	var g struct {
		Goroutines int
		Stacks     string
	}
	e.MustCall("margin/test.goroutines", nil, &g)
	return g.Goroutines, g.Stacks
}
