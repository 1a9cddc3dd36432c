package history_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/store"
)

type fixture struct {
	dir  string
	root *edit.Root
	h    *history.History
}

// open opens margin's history on a vault at dir, recording root's writes.
func open(t *testing.T, dir string, opts history.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	root, err := edit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := history.Open(ctx, db, root, opts)
	if err != nil {
		t.Fatal(err)
	}
	root.SetRecorder(h)
	t.Cleanup(func() {
		root.SetRecorder(nil)
		h.Close()
		db.Close()
		root.Close()
	})
	return &fixture{dir: dir, root: root, h: h}
}

// openState opens an edit root on a fresh vault directory and a fresh
// state database, both closed when tb ends.
func openState(tb testing.TB) (string, *edit.Root, *sql.DB) {
	tb.Helper()
	dir := tb.TempDir()
	root, err := edit.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { root.Close() })
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return dir, root, db
}

// aging is a fixture whose history keeps an hour, on a clock the test
// moves, with the task note written.
type aging struct {
	fixture
	db  *sql.DB
	now time.Time
}

func openAging(t *testing.T) *aging {
	t.Helper()
	a := &aging{now: time.Now()}
	a.dir, a.root, a.db = openState(t)
	a.open(t)
	t.Cleanup(func() {
		a.root.SetRecorder(nil)
		a.h.Close()
	})
	write(t, a.dir, "Tasks/ship.md", task)
	return a
}

func (a *aging) open(t *testing.T) {
	t.Helper()
	h, err := history.Open(context.Background(), a.db, a.root, history.Options{Git: "-", Keep: time.Hour, Now: func() time.Time { return a.now }})
	if err != nil {
		t.Fatal(err)
	}
	a.h = h
	a.root.SetRecorder(h)
}

// later closes the history, moves the clock two hours on, past
// history.keep, and opens it again, as the next margin would: opening
// prunes.
func (a *aging) later(t *testing.T) {
	t.Helper()
	a.root.SetRecorder(nil)
	a.h.Close()
	a.now = a.now.Add(2 * time.Hour)
	a.open(t)
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// apply changes the note at p as an applied change item would.
func (f *fixture) apply(t *testing.T, p, set, item string, change func(string) string) {
	t.Helper()
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent-1", Task: p, ChangeSet: set, Item: item, Template: "task@3", Model: "m1"})
	if _, err := f.root.Change(ctx, nil, p, func(cur edit.Current) ([]byte, error) {
		return []byte(change(string(cur.Content))), nil
	}); err != nil {
		t.Fatal(err)
	}
}

const task = "---\nstatus: open\nestimate: 1h\n---\n# Ship it\n\nSome words.\n\n## Checklist\n- [ ] Draft\n- [ ] Review\n\nMore words.\n"

func TestUndoEachItemKindByteForByte(t *testing.T) {
	kinds := []struct {
		name   string
		change func(string) string
	}{
		{"field splice", func(s string) string { return strings.Replace(s, "estimate: 1h", "estimate: 2h", 1) }},
		{"field added", func(s string) string {
			return strings.Replace(s, "status: open\n", "status: open\ndue: 2026-12-01\n", 1)
		}},
		{"checkbox flip", func(s string) string { return strings.Replace(s, "- [ ] Review", "- [x] Review", 1) }},
		{"checklist append", func(s string) string { return strings.Replace(s, "- [ ] Review\n", "- [ ] Review\n- [ ] Publish\n", 1) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			f := open(t, t.TempDir(), history.Options{Git: "-"})
			write(t, f.dir, "Tasks/ship.md", task)
			f.apply(t, "Tasks/ship.md", "cs1", "c1", k.change)
			if read(t, f.dir, "Tasks/ship.md") == task {
				t.Fatal("the change did nothing")
			}
			// The person edits elsewhere in the note: the undo applies, and keeps their edit.
			edited := strings.Replace(read(t, f.dir, "Tasks/ship.md"), "More words.", "More words, by hand.", 1)
			write(t, f.dir, "Tasks/ship.md", edited)
			if _, err := f.h.Undo(context.Background(), nil, "cs1", "c1"); err != nil {
				t.Fatal(err)
			}
			want := strings.Replace(task, "More words.", "More words, by hand.", 1)
			if got := read(t, f.dir, "Tasks/ship.md"); got != want {
				t.Fatalf("after undo:\n%s\nwant:\n%s", got, want)
			}
			// Undo of the undo puts margin's change back.
			if _, err := f.h.Undo(context.Background(), nil, "cs1", "c1"); err != nil {
				t.Fatal(err)
			}
			if got := read(t, f.dir, "Tasks/ship.md"); got != k.change(want) {
				t.Fatalf("after undo of the undo:\n%s\nwant:\n%s", got, k.change(want))
			}
		})
	}
}

func TestUndoRefusedWhenThePersonEditedTheSameLines(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	write(t, f.dir, "Tasks/ship.md", task)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", func(s string) string { return strings.Replace(s, "estimate: 1h", "estimate: 2h", 1) })
	edited := strings.Replace(read(t, f.dir, "Tasks/ship.md"), "estimate: 2h", "estimate: 3h", 1)
	write(t, f.dir, "Tasks/ship.md", edited)
	_, err := f.h.Undo(context.Background(), nil, "cs1", "c1")
	var ce *history.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, edit.ErrConflict) {
		t.Fatalf("undo = %v, want a ConflictError", err)
	}
	if ce.Original != task || ce.Current != edited || !strings.Contains(ce.Margin, "estimate: 2h") {
		t.Fatalf("conflict data = %+v", ce)
	}
	if got := read(t, f.dir, "Tasks/ship.md"); got != edited {
		t.Fatal("a refused undo wrote the note")
	}
}

func TestUndoOneOfSeveralItemsOfOneWrite(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	write(t, f.dir, "Tasks/ship.md", task)
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent-1", ChangeSet: "cs1"})
	if _, err := f.root.ChangeParts(ctx, nil, "Tasks/ship.md", func(cur edit.Current) ([]byte, []edit.Part, error) {
		one := []byte(strings.Replace(string(cur.Content), "estimate: 1h", "estimate: 2h", 1))
		two := []byte(strings.Replace(string(one), "- [ ] Draft", "- [x] Draft", 1))
		return two, []edit.Part{{Item: "c1", Before: cur.Content, After: one}, {Item: "c2", Before: one, After: two}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Undo(context.Background(), nil, "cs1", "c1"); err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, f.dir, "Tasks/ship.md"), strings.Replace(task, "- [ ] Draft", "- [x] Draft", 1); got != want {
		t.Fatalf("undo of c1 alone:\n%s\nwant:\n%s", got, want)
	}
}

func TestSplice(t *testing.T) {
	for _, c := range []struct{ name, before, after, cur, want string }{
		{"untouched", "a\nb\n", "a\nB\n", "a\nB\n", "a\nb\n"},
		{"deleted line comes back", "a\nb\nc\n", "a\nc\n", "x\na\nc\n", "x\na\nb\nc\n"},
		{"duplicate lines told apart by context", "a\nz\n- [ ] x\nb\n- [ ] x\n", "a\nz\n- [x] x\nb\n- [ ] x\n", "a\nz\n- [x] x\nb\n- [x] x\n", "a\nz\n- [ ] x\nb\n- [x] x\n"},
		{"no final newline", "a\nb", "a\nb\n- [ ] c\n", "new\na\nb\n- [ ] c\n", "new\na\nb"},
	} {
		got, ok := history.Splice([]byte(c.before), []byte(c.after), []byte(c.cur))
		if !ok || string(got) != c.want {
			t.Errorf("%s: Splice = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
	if _, ok := history.Splice([]byte("a\nb\n"), []byte("a\nB\n"), []byte("a\nC\n")); ok {
		t.Error("Splice of a line the person changed succeeded")
	}
}

func TestHistoryListsWritesWithTheirCause(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	write(t, f.dir, "Tasks/ship.md", task)
	f.apply(t, "Tasks/ship.md", "cs1", "c1", func(s string) string { return strings.Replace(s, "1h", "2h", 1) })
	if _, err := f.root.Create("Margin/Reports/ship.md", []byte("report\n")); err != nil {
		t.Fatal(err)
	}
	es, err := f.h.List(context.Background(), history.Filter{Task: "Tasks/ship.md"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Actor != "agent-1" || es[0].ChangeSet != "cs1" || len(es[0].Items) != 1 || es[0].Items[0] != "c1" ||
		es[0].Template != "task@3" || es[0].Model != "m1" {
		t.Fatalf("history of the task = %+v", es)
	}
	if all, _ := f.h.List(context.Background(), history.Filter{}); len(all) != 2 || !all[0].Created || all[0].Actor != "margin" {
		t.Fatalf("history = %+v", all)
	} // The undo names the person, and the item's template version and model.
	if _, err := f.h.Undo(context.Background(), nil, "cs1", "c1"); err != nil {
		t.Fatal(err)
	}
	if es, _ := f.h.List(context.Background(), history.Filter{Limit: 1}); len(es) != 1 || es[0].Actor != "person" || es[0].UndoOf == 0 ||
		es[0].Template != "task@3" || es[0].Model != "m1" {
		t.Fatalf("history of the undo = %+v", es)
	}
}

func TestPruneKeepsTheLatestRecordOfEachItem(t *testing.T) {
	a := openAging(t)
	a.apply(t, "Tasks/ship.md", "cs1", "c1", func(s string) string { return strings.Replace(s, "1h", "2h", 1) })
	a.apply(t, "Tasks/ship.md", "cs1", "c1", func(s string) string { return strings.Replace(s, "2h", "3h", 1) })
	a.root.Create("Margin/Journal/ship.md", []byte("j\n"))
	a.later(t)
	es, _ := a.h.List(context.Background(), history.Filter{})
	if len(es) != 1 || es[0].ChangeSet != "cs1" {
		t.Fatalf("after pruning: %+v, want the latest write of cs1/c1 alone", es)
	}
	if _, err := a.h.Undo(context.Background(), nil, "cs1", "c1"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(read(t, a.dir, "Tasks/ship.md"), "estimate: 2h") {
		t.Fatal("undo after pruning did not put back what the latest write replaced")
	}
}

func hasGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@x", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@x", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// repoState is what margin's history must never move in a repository.
type repoState struct{ head, refs, index, status string }

func stateOf(t *testing.T, top string) repoState {
	t.Helper()
	idx, _ := os.ReadFile(filepath.Join(top, ".git", "index"))
	head, _ := gitOK(t, top, "rev-parse", "-q", "--verify", "HEAD^{commit}")
	return repoState{
		head:   git(t, top, "symbolic-ref", "-q", "HEAD") + head,
		refs:   git(t, top, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"),
		index:  string(idx),
		status: git(t, top, "status", "--porcelain=v1", "--untracked-files=all", "--ignored"),
	}
}

func gitOK(t *testing.T, dir string, args ...string) (string, bool) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return string(out), err == nil
}

// storm writes n times into the vault at dir and returns the files as
// margin last wrote them.
func storm(t *testing.T, f *fixture, n int) map[string]string {
	t.Helper()
	last := map[string]string{}
	for i := range n {
		p := []string{"Margin/Reports/a.md", "Margin/Journal/a.md", "Tasks/ship.md"}[i%3]
		ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "agent-1", ChangeSet: "cs1", Item: "c" + string(rune('1'+i%3)), Template: "task@2", Model: "m"})
		res, err := f.root.Change(ctx, nil, p, func(cur edit.Current) ([]byte, error) {
			return append(cur.Content, []byte("line "+string(rune('a'+i%26))+"\n")...), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		last[p] = string(res.Content)
	}
	return last
}

// checkHistory checks that the work tree at top has every write of margin
// in the vault (at prefix in it) on the history ref, with its trailers,
// and the last commit's files as margin last wrote them.
func checkHistory(t *testing.T, top, prefix string, writes int, last map[string]string) {
	t.Helper()
	log := git(t, top, "log", "--format=%(trailers:key=Margin-Write,valueonly)", history.Ref)
	if got := len(strings.Fields(log)); got != writes {
		t.Fatalf("%d commits of margin's writes on %s, want %d", got, history.Ref, writes)
	}
	msg := git(t, top, "log", "-1", "--format=%B", history.Ref)
	for _, k := range []string{"Margin-Agent: agent-1", "Margin-Change-Set: cs1", "Margin-Item: c", "Margin-Template: task@2", "Margin-Model: m"} {
		if !strings.Contains(msg, k) {
			t.Errorf("the last history commit lacks %q:\n%s", k, msg)
		}
	}
	for p, want := range last {
		if got := git(t, top, "show", history.Ref+":"+prefix+p); got != want {
			t.Errorf("%s on %s = %q, want %q", p, history.Ref, got, want)
		}
	}
}

func TestGitHistoryTouchesNothingOfTheRepository(t *testing.T) {
	hasGit(t)
	for _, c := range []struct {
		name    string
		sub     string // the vault's folder in the repository
		commits bool
	}{
		{"vault is the repository", "", true},
		{"vault inside a larger repository", "notes/vault", true},
		{"repository with no commits yet", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			git(t, top, "init", "-q", "-b", "main")
			dir := filepath.Join(top, filepath.FromSlash(c.sub))
			write(t, dir, "Tasks/ship.md", task)
			write(t, top, "README.md", "the repository\n")
			if c.commits {
				git(t, top, "add", "-A")
				git(t, top, "commit", "-q", "-m", "first")
				write(t, top, "README.md", "changed, not staged\n")
				write(t, top, "staged.md", "staged\n")
				git(t, top, "add", "staged.md")
			}
			before := stateOf(t, top)
			f := open(t, dir, history.Options{})
			last := storm(t, f, 30)
			f.h.Close()
			after := stateOf(t, top)
			if after.head != before.head || after.refs != before.refs || after.index != before.index {
				t.Fatalf("HEAD, a branch or the index moved:\nbefore %+v\nafter  %+v", before, after)
			}
			// The work tree holds what margin wrote, and nothing else changed.
			for p, want := range last {
				if got := read(t, dir, p); got != want {
					t.Fatalf("%s = %q, want margin's write", p, got)
				}
			}
			if !c.commits {
				if _, ok := gitOK(t, top, "rev-parse", "-q", "--verify", "HEAD"); ok {
					t.Fatal("HEAD was born")
				}
			}
			prefix := ""
			if c.sub != "" {
				prefix = c.sub + "/"
			}
			checkHistory(t, top, prefix, 30, last)
		})
	}
}

func TestGitHistoryWhileThePersonCommitsAndSwitchesBranches(t *testing.T) {
	hasGit(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "Tasks/ship.md", task)
	write(t, dir, "User/notes.md", "mine\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "first")
	f := open(t, dir, history.Options{})
	done := make(chan map[string]string)
	go func() {
		defer close(done)
		for i := range 10 {
			branch := []string{"main", "side"}[i%2]
			if i == 1 {
				git(t, dir, "checkout", "-q", "-b", "side")
			} else if i > 1 {
				git(t, dir, "checkout", "-q", branch)
			}
			write(t, dir, "User/notes.md", "mine "+string(rune('a'+i))+"\n")
			git(t, dir, "add", "User")
			git(t, dir, "commit", "-q", "-m", "person's commit")
		}
	}()
	last := storm(t, f, 30)
	<-done
	f.h.Close()
	if got := strings.TrimSpace(git(t, dir, "symbolic-ref", "HEAD")); got != "refs/heads/side" {
		t.Fatalf("HEAD = %s, want the person's last branch", got)
	}
	if got := git(t, dir, "log", "--format=%s", "main"); strings.Count(got, "person's commit") != 5 || strings.Contains(got, "agent-1") {
		t.Fatalf("main's log:\n%s", got)
	}
	if got := git(t, dir, "ls-files", "Margin"); got != "" {
		t.Fatalf("margin's files are in the person's index: %s", got)
	}
	if got := git(t, dir, "diff", "--cached", "--name-only"); got != "" {
		t.Fatalf("the index differs from HEAD: %s", got)
	}
	checkHistory(t, dir, "", 30, last)
}

func TestNoRepositoryNoGit(t *testing.T) {
	for _, g := range []string{"", "/nonexistent/git"} {
		f := open(t, t.TempDir(), history.Options{Git: g})
		storm(t, f, 3)
		f.h.Close()
		es, err := f.h.List(context.Background(), history.Filter{})
		if err != nil || len(es) != 3 || es[0].Commit != "" {
			t.Fatalf("history without a repository = %+v, %v", es, err)
		}
	}
}

func TestOpenSettlesWritesAKilledProcessLeftUnknown(t *testing.T) {
	dir, root, db := openState(t)
	h, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task)
	write(t, dir, "Tasks/other.md", task)
	// Killed after the write landed: recorded, never settled.
	cause, ctx := edit.Cause{ChangeSet: "cs1", Item: "c1"}, context.Background()
	if _, err := h.Begin(ctx, edit.Record{Path: "Tasks/ship.md", Before: []byte(task), Existed: true, After: []byte(task + "x\n"), Cause: cause}); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "Tasks/ship.md", task+"x\n")
	// Killed before the write landed.
	if _, err := h.Begin(ctx, edit.Record{Path: "Tasks/other.md", Before: []byte(task), Existed: true, After: []byte(task + "y\n"), Cause: cause}); err != nil {
		t.Fatal(err)
	}
	if es, _ := h.List(context.Background(), history.Filter{}); len(es) != 0 {
		t.Fatalf("unsettled writes listed: %+v", es)
	}
	h.Close()
	if h, err = history.Open(context.Background(), db, root, history.Options{Git: "-"}); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	es, _ := h.List(context.Background(), history.Filter{})
	if len(es) != 1 || es[0].Path != "Tasks/ship.md" {
		t.Fatalf("after settling: %+v, want the write that landed alone", es)
	}
	if _, err := h.Undo(context.Background(), nil, "cs1", "c1"); err != nil || read(t, dir, "Tasks/ship.md") != task {
		t.Fatalf("undo of a settled write: %v", err)
	}
}

// A margin starting beside another that is writing leaves that write's
// record alone: it is settled by the process that made it.
func TestOpenLeavesTheWritesOfALiveProcess(t *testing.T) {
	dir, root, db := openState(t)
	h, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	write(t, dir, "Tasks/ship.md", task)
	done, err := h.Begin(context.Background(), edit.Record{Path: "Tasks/ship.md", Before: []byte(task), Existed: true, After: []byte(task + "x\n")})
	if err != nil {
		t.Fatal(err)
	}
	// The record is another live process's: this test's parent.
	start, _ := history.Started(os.Getppid())
	if _, err := db.Exec(`UPDATE history SET pid = ?, pid_start = ?`, os.Getppid(), start); err != nil {
		t.Fatal(err)
	}
	other, err := history.Open(context.Background(), db, root, history.Options{Git: "-"})
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	write(t, dir, "Tasks/ship.md", task+"x\n")
	done(true)
	if es, _ := h.List(context.Background(), history.Filter{}); len(es) != 1 {
		t.Fatalf("the live process's write = %+v, want it recorded", es)
	}
}

// An item that created a note (an MCP client's proposal) is undone by
// removing the note, when it is still what margin wrote; undoing that
// creates it again.
func TestUndoOfACreation(t *testing.T) {
	f := open(t, t.TempDir(), history.Options{Git: "-"})
	const note = "# Meeting notes\n\nWritten by margin.\n"
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "claude-code", ChangeSet: "cs9", Item: "c1"})
	if _, err := f.root.Change(ctx, nil, "Notes/meeting.md", func(edit.Current) ([]byte, error) { return []byte(note), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Undo(context.Background(), nil, "cs9", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "Notes/meeting.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the created note is still there: %v", err)
	}
	if _, err := f.h.Undo(context.Background(), nil, "cs9", "c1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, f.dir, "Notes/meeting.md"); got != note {
		t.Fatalf("undo of the undo = %q, want the note again", got)
	}
	if es, _ := f.h.List(context.Background(), history.Filter{}); len(es) != 3 || !es[1].Removed || !es[2].Created {
		t.Fatalf("history = %+v, want the creation, its removal and its creation again", es)
	}
	// The person wrote in it since: margin does not remove their words.
	write(t, f.dir, "Notes/meeting.md", note+"Mine.\n")
	_, err := f.h.Undo(context.Background(), nil, "cs9", "c1")
	var ce *history.ConflictError
	if !errors.As(err, &ce) || ce.Current != note+"Mine.\n" {
		t.Fatalf("undo of a creation the person wrote in = %v, want a ConflictError", err)
	}
	if got := read(t, f.dir, "Notes/meeting.md"); got != note+"Mine.\n" {
		t.Fatalf("a note the person wrote in was changed: %q", got)
	}
}

func TestRemoveContextRemovesOnlyWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	root, _ := edit.Open(dir)
	defer root.Close()
	write(t, dir, "a.md", "mine\n")
	err := root.RemoveContext(context.Background(), "a.md", edit.FingerprintOf([]byte("margin's\n")))
	if !errors.Is(err, edit.ErrConflict) || read(t, dir, "a.md") != "mine\n" {
		t.Fatalf("RemoveContext of a changed note = %v", err)
	}
	if err := root.RemoveContext(context.Background(), "a.md", edit.FingerprintOf([]byte("mine\n"))); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left in the folder: %v", entries)
	}
	if err := os.Symlink("b.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "b.md", "x")
	if err := root.RemoveContext(context.Background(), "link.md", edit.FingerprintOf([]byte("x"))); err == nil {
		t.Fatal("RemoveContext removed a symlink")
	}
}

func TestGitHistoryOfARemoval(t *testing.T) {
	hasGit(t)
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	f := open(t, dir, history.Options{})
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "claude-code", ChangeSet: "cs9", Item: "c1"})
	if _, err := f.root.Change(ctx, nil, "Notes/meeting.md", func(edit.Current) ([]byte, error) { return []byte("hi\n"), nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Undo(context.Background(), nil, "cs9", "c1"); err != nil {
		t.Fatal(err)
	}
	f.h.Close()
	if got := git(t, dir, "log", "--format=%s", history.Ref); got != "person undid write 1 in Notes/meeting.md\nclaude-code created Notes/meeting.md\n" {
		t.Fatalf("history log:\n%s", got)
	}
	if got := git(t, dir, "ls-tree", "-r", "--name-only", history.Ref); got != "" {
		t.Fatalf("the removed note is still in the history's tree: %s", got)
	}
}

// TestGitRunsOnlyWhenThereIsAWriteToCommit: a margin that writes nothing
// (margin status, search) runs no git; the first write does.
func TestGitRunsOnlyWhenThereIsAWriteToCommit(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	ran := filepath.Join(bin, "ran")
	git := filepath.Join(bin, "git")
	// A git that notes each call and says the vault is no work tree.
	if err := os.WriteFile(git, []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\nexit 128\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := open(t, dir, history.Options{Git: git})
	if err := f.h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("git ran with nothing to commit (%v)", err)
	}
	f = open(t, dir, history.Options{Git: git})
	f.apply(t, "Tasks/a.md", "c1", "1", func(string) string { return "x\n" })
	if err := f.h.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(ran); err != nil || !strings.Contains(string(b), "rev-parse") {
		t.Fatalf("git after a write: %q, %v; want rev-parse", b, err)
	}
}
