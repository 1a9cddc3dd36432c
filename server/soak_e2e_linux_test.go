package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault/vaultgen"
	"github.com/margin-md/margin/vault/vaulttest"
)

// TestSoakEditStorm runs margin on a generated vault with task agents and a
// model that answers every wake, through a storm of edits as editors, git
// and people make them, for a bounded time. Once it has settled: the index
// equals a fresh index of the same files; no agent has a state left to
// process (a restart wakes nobody's model); memory and goroutines are back
// near their level before the storm; and no file outside Margin/ changed
// that neither the storm nor an approved change touched.
func TestSoakEditStorm(t *testing.T) {
	notes, agentsN, stormFor := 300, 8, 5*time.Second
	if soakLong {
		notes, agentsN, stormFor = 10000, 200, 5*time.Minute
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d: %d notes, %d agents, %s of storm", seed, notes, agentsN, stormFor)

	dir := filepath.Join(t.TempDir(), "vault")
	if _, err := vaultgen.Generate(dir, vaultgen.Options{Notes: notes, Seed: int64(seed % 1000)}); err != nil {
		t.Fatal(err)
	}
	fake := llmtest.NewOllama(t, taskModel)
	stormModel(fake, 4)
	env := agentEnv(fake.URL, "MARGIN_AGENTS_QUIET_PERIOD=100ms", "MARGIN_AGENTS_MAX_WAIT=1s", "MARGIN_LOG_LEVEL=warn")
	e := editortest.Start(t, env)
	e.Initialize(dir)
	e.WaitFor("the first scan", func(m editortest.Message) bool {
		return m.Method == "margin/indexStatus" && strings.Contains(string(m.Params), `"kind":"scan"`)
	})

	var tasks, daily, others []string
	for _, rel := range mdFiles(t, dir) {
		switch {
		case strings.HasPrefix(rel, "Tasks/"):
			tasks = append(tasks, rel)
		case strings.HasPrefix(rel, "Daily/"):
			daily = append(daily, rel)
		default:
			others = append(others, rel)
		}
	}
	// Agents of open tasks: a done or cancelled task costs no model call
	// (SPEC §4.1), and the storm is meant to keep the model busy.
	open := slices.DeleteFunc(slices.Clone(tasks), func(rel string) bool {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		return err != nil || closedTaskRE.Match(b)
	})
	agentTasks := open[:min(agentsN, len(open))]
	for _, task := range agentTasks {
		createAgent(t, e, task)
	}
	settle(t, e, dir)

	pid := e.Process().Pid
	rssBefore := rssKB(t, pid)
	gBefore, stacksBefore := goroutines(e)
	baseline := vaulttest.UserFiles(t, dir)

	s := &storm{t: t, e: e, dir: dir, rng: rng, tasks: tasks, daily: daily, others: others,
		touched: map[string]bool{}, approved: map[string]bool{}, kinds: map[string]int{}}
	began := time.Now()
	ops := 0
	for time.Since(began) < stormFor {
		s.step()
		ops++
	}
	counts := settle(t, e, dir)
	s.touched["Inbox/settle.md"] = true
	rssAfter := rssKB(t, pid)
	gAfter, stacksAfter := goroutines(e)
	t.Logf("storm: %d operations in %s (%v); agents %+v; %d model calls", ops, stormFor, s.kinds, counts, len(fake.Requests()))
	t.Logf("RSS %d kB before the storm, %d kB after it settled; goroutines %d before, %d after", rssBefore, rssAfter, gBefore, gAfter)
	if len(fake.Requests()) == 0 {
		t.Error("no model call over the storm: the agents never woke their model")
	}
	if rssAfter > 2*rssBefore+64<<10 {
		t.Errorf("RSS grew from %d kB to %d kB over the storm", rssBefore, rssAfter)
	}
	if gAfter > gBefore+10 {
		t.Errorf("goroutines grew from %d to %d over the storm; before:\n%s\nafter:\n%s", gBefore, gAfter, stacksBefore, stacksAfter)
	}

	after := vaulttest.UserFiles(t, dir)
	for rel, h := range baseline {
		if !s.touched[rel] && !s.approved[rel] && after[rel] != h {
			t.Errorf("%s changed, and neither the storm nor an approved change touched it", rel)
		}
	}
	for rel := range after {
		if _, was := baseline[rel]; !was && !s.touched[rel] {
			t.Errorf("%s appeared outside Margin/, and the storm did not write it", rel)
		}
	}
	checkLedgerAgrees(t, e, dir)

	var down any
	e.MustCall("shutdown", nil, &down)
	e.Notify("exit", nil)
	if code := e.Exit(); code != 0 {
		t.Fatalf("margin exited %d after shutdown", code)
	}
	compareWithFreshIndex(t, dir)

	// Every agent's last completed run covers the state it would see now:
	// the startup wakes of a restarted margin are all skipped.
	quiet := llmtest.NewOllama(t, taskModel)
	stormModel(quiet, 0)
	e2 := editortest.Start(t, agentEnv(quiet.URL, "MARGIN_LOG_LEVEL=warn"))
	e2.Initialize(dir)
	for _, task := range agentTasks {
		var a protocol.AgentDetail
		poll(t, "the startup wake of "+task+" skipped", func() bool {
			e2.MustCall("agents/get", map[string]any{"task": task}, &a)
			return a.Lifecycle != "active" || (a.State.Skipped > 0 && !a.State.Queued && !a.State.Running)
		})
	}
	if n := len(quiet.Requests()); n != 0 {
		t.Errorf("after the restart %d model calls were made: some agent's last run did not match its sources", n)
	}
}

// closedTaskRE matches a done or cancelled task's status field.
var closedTaskRE = regexp.MustCompile(`(?m)^status: *(done|cancelled)\s*$`)

// storm makes the edits of TestSoakEditStorm.
type storm struct {
	t                    *testing.T
	e                    *editortest.Editor
	dir                  string
	rng                  *rand.Rand
	tasks, daily, others []string
	touched, approved    map[string]bool // vault-relative paths
	kinds                map[string]int  // operations made, by kind
	n                    int
	decidedSets          []string
	folders              int
}

func (s *storm) pick(list []string) string { return list[s.rng.IntN(len(list))] }

func (s *storm) write(rel string, data []byte) {
	p := filepath.Join(s.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.touched[rel] = true
}

func (s *storm) read(rel string) []byte {
	b, _ := os.ReadFile(filepath.Join(s.dir, rel))
	return b
}

// step makes one storm operation and pauses a little, as people and tools do.
func (s *storm) step() {
	s.n++
	kind := []string{"save", "save", "save", "rename-save", "rename-save", "delete", "folder", "checkout", "approve", "approve"}[s.rng.IntN(10)]
	s.kinds[kind]++
	switch kind {
	case "save": // a daily entry linking a task, or a line in a task
		if s.rng.IntN(2) == 0 {
			rel := s.pick(s.daily)
			task := strings.TrimSuffix(filepath.Base(s.pick(s.tasks)), ".md")
			s.write(rel, append(s.read(rel), fmt.Sprintf("\n## 23:%02d\nStorm %d on [[%s]].\n", s.n%60, s.n, task)...))
		} else {
			rel := s.pick(s.tasks)
			s.write(rel, append(s.read(rel), fmt.Sprintf("- [ ] storm item %d\n", s.n)...))
		}
	case "rename-save": // VS Code and vim write a new file and rename it over the note
		rel := s.pick(append(s.daily, s.others...))
		tmp := filepath.Join(s.dir, filepath.Dir(rel), "."+filepath.Base(rel)+".swp")
		if err := os.WriteFile(tmp, append(s.read(rel), fmt.Sprintf("\nRenamed save %d.\n", s.n)...), 0o644); err != nil {
			s.t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(s.dir, rel)); err != nil {
			s.t.Fatal(err)
		}
		s.touched[rel] = true
	case "delete":
		if len(s.others) > 10 {
			i := s.rng.IntN(len(s.others))
			rel := s.others[i]
			s.others = slices.Delete(s.others, i, i+1)
			os.Remove(filepath.Join(s.dir, rel))
			s.touched[rel] = true
		}
	case "folder": // a new folder tree with notes, made at once
		s.folders++
		base := fmt.Sprintf("Storm/%d/deep/er", s.folders)
		for i := range 3 {
			rel := fmt.Sprintf("%s/Note %d.md", base, i)
			s.write(rel, fmt.Appendf(nil, "# Storm note %d\n\nLinks [[%s]].\n", i, strings.TrimSuffix(filepath.Base(s.pick(s.tasks)), ".md")))
			s.others = append(s.others, rel)
		}
	case "checkout": // git checkout: many files rewritten at once, half of them back to what they were
		n := 10 + s.rng.IntN(40)
		var back []string
		old := map[string][]byte{}
		for range n {
			rel := s.pick(s.daily)
			if _, ok := old[rel]; !ok {
				old[rel] = s.read(rel)
				back = append(back, rel)
			}
			s.write(rel, append(s.read(rel), fmt.Sprintf("\nBranch line %d.\n", s.n)...))
		}
		for _, rel := range back[:len(back)/2] {
			s.write(rel, old[rel])
		}
	case "approve":
		var sets protocol.ChangesListResult
		s.e.MustCall("changes/list", nil, &sets)
		for _, cs := range sets.ChangeSets {
			if slices.Contains(s.decidedSets, cs.ID) {
				continue
			}
			s.decidedSets = append(s.decidedSets, cs.ID)
			if s.rng.IntN(2) == 0 {
				s.e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, nil)
				s.approved[cs.Task] = true
			} else {
				var decisions []map[string]any
				for _, it := range cs.Items {
					decisions = append(decisions, map[string]any{"item": it.ID, "verdict": "rejected", "reason": "storm"})
				}
				s.e.MustCall("changes/decide", map[string]any{"id": cs.ID, "decisions": decisions}, nil)
			}
			break
		}
	}
	time.Sleep(time.Duration(s.rng.IntN(20)) * time.Millisecond)
}

// rssKB is the resident set of process pid.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// indexQueries dump the index by path, without row ids and mtimes, which
// differ between two indexes of the same files.
var indexQueries = map[string]string{
	"files": `SELECT path, size, hash, state, reason, kind FROM files`,
	"notes": `SELECT f.path, n.title, n.kind, n.date, n.margin_kind, n.frontmatter_error, n.status, n.priority, n.due,
		n.scheduled, n.estimate, n.language, n.labels, n.headings, n.props, n.meta FROM notes n JOIN files f ON f.id = n.file_id`,
	"sections": `SELECT f.path, s.line, s.title, s.heading, s.body, s.date, s.listed, s.time, s.correction,
		s.start_offset, s.end_offset FROM sections s JOIN files f ON f.id = s.file_id`,
	"checklist": `SELECT f.path, c.ord, c.line, c.state, c.text, c.due, c.scheduled, c.start, c.done, c.cancelled, c.priority,
		c.item_id FROM checklist_items c JOIN files f ON f.id = c.file_id`,
	"tags":    `SELECT f.path, t.tag_key, t.tag, t.ord FROM tags t JOIN files f ON f.id = t.file_id`,
	"aliases": `SELECT f.path, a.alias_key, a.alias, a.ord FROM aliases a JOIN files f ON f.id = a.file_id`,
	"links": `SELECT f.path, l.ord, s.line, l.line, l.target, l.heading, l.target_key, l.rel_key
		FROM links l JOIN files f ON f.id = l.file_id JOIN sections s ON s.id = l.section_id`,
}

// compareWithFreshIndex indexes a copy of the vault's files from scratch
// with `margin status` and compares every index table with the live
// index, which margin kept up to date through the storm. margin must not
// be running.
func compareWithFreshIndex(t *testing.T, dir string) {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := os.CopyFS(fresh, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(fresh, ".margin")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(editortest.Binary(t), "status", "--vault", fresh).CombinedOutput(); err != nil {
		t.Fatalf("margin status on the copy: %v\n%s", err, out)
	}
	// The integrity check is written as an insert, so the live database is
	// opened for writing; it changes nothing.
	live, freshDB := openDB(t, filepath.Join(dir, ".margin/index.db"), ""), openDB(t, filepath.Join(fresh, ".margin/index.db"), "?mode=ro")
	if _, err := live.Exec(`INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')`); err != nil {
		t.Errorf("the live full-text index does not match its sections: %v", err)
	}
	for name, q := range indexQueries {
		a, b := dumpRows(t, live, q), dumpRows(t, freshDB, q)
		if slices.Equal(a, b) {
			continue
		}
		onlyLive, onlyFresh := diffRows(a, b), diffRows(b, a)
		t.Errorf("index table %s differs from a fresh index: %d rows only in the live one, %d only in the fresh one; first:\nlive:  %.300s\nfresh: %.300s",
			name, len(onlyLive), len(onlyFresh), first(onlyLive), first(onlyFresh))
	}
}

func openDB(t *testing.T, path, query string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dumpRows runs q and returns its rows as sorted JSON lines.
func dumpRows(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		line, _ := json.Marshal(vals)
		out = append(out, string(line))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// diffRows returns the rows of a that b lacks (both sorted).
func diffRows(a, b []string) []string {
	var out []string
	for _, r := range a {
		if _, found := slices.BinarySearch(b, r); !found {
			out = append(out, r)
		}
	}
	return out
}

func first(rows []string) string {
	if len(rows) == 0 {
		return "(none)"
	}
	return rows[0]
}
