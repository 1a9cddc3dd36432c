package vault

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/store"
	"github.com/margin-md/margin/vault/vaultgen"
	"github.com/margin-md/margin/vault/vaulttest"
)

func sampleVault(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dst, os.DirFS("../testdata/vault")); err != nil {
		t.Fatal(err)
	}
	return dst
}

func open(t *testing.T, dir string) *Vault {
	t.Helper()
	v, err := Open(context.Background(), Options{Dir: dir, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestScanAccountsForEveryFile(t *testing.T) {
	dir := sampleVault(t)
	v := open(t, dir)
	res, err := v.Scan(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != res.Updated+res.Skipped+res.Failed || res.Unchanged != 0 {
		t.Errorf("first scan %+v: every file should be read once", res)
	}
	cov, err := v.Index().Coverage(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(cov) != res.Files {
		t.Errorf("coverage has %d files, scan saw %d", len(cov), res.Files)
	}
	st, _ := v.Status(context.Background())
	if st.DailyNotes != 23 || st.Tasks != 10 || st.Failed != 1 || st.Skipped != 1 {
		t.Errorf("status %+v: want 23 daily notes, 10 tasks, 1 failed (broken frontmatter), 1 skipped (png)", st)
	}
}

func TestRestartReadsOnlyWhatChanged(t *testing.T) {
	dir := sampleVault(t)
	ctx := context.Background()
	v := open(t, dir)
	first, err := v.Scan(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()

	// One edit, one touch (same content, new mtime), one new note, one delete.
	edited := filepath.Join(dir, "Tasks", "Renew passport.md")
	data, _ := os.ReadFile(edited)
	os.WriteFile(edited, append(data, "\nAlso bring the old passport.\n"...), 0o644)
	touched := filepath.Join(dir, "Reference", "Sleep.md")
	later := time.Now().Add(time.Hour)
	os.Chtimes(touched, later, later)
	os.WriteFile(filepath.Join(dir, "Inbox", "new idea.md"), []byte("# New idea\n"), 0o644)
	os.Remove(filepath.Join(dir, "Reference", "Nutrition.md"))

	var changes []Change
	v = open(t, dir)
	v.Subscribe(func(cs []Change) { changes = append(changes, cs...) })
	res, err := v.Scan(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated != 2 || res.Touched != 1 || res.Removed != 1 || res.Unchanged != first.Files-3 {
		t.Errorf("restart scan %+v, want 2 updated, 1 touched, 1 removed, %d unchanged", res, first.Files-3)
	}
	// Skipped and failed are the index's state, the unread files' too.
	if first.Skipped != 1 || first.Failed != 1 || res.Skipped != first.Skipped || res.Failed != first.Failed {
		t.Errorf("skipped and failed: first scan %d and %d, restart %d and %d; want 1 and 1 both times", first.Skipped, first.Failed, res.Skipped, res.Failed)
	}
	got := map[string]string{}
	for _, c := range changes {
		switch {
		case c.Removed():
			got[c.Path] = "removed"
		case c.Old.IsZero():
			got[c.Path] = "created"
		default:
			got[c.Path] = "changed"
		}
	}
	want := map[string]string{"Tasks/Renew passport.md": "changed", "Inbox/new idea.md": "created", "Reference/Nutrition.md": "removed"}
	if len(got) != len(want) {
		t.Errorf("changes %v, want %v (a touch is not a change)", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %q, want %q", p, got[p], w)
		}
	}
}

// run runs v until the test ends.
func run(t *testing.T, v *Vault) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// watchChanges runs the vault and returns its changes as they come.
func watchChanges(t *testing.T, v *Vault) <-chan Change {
	t.Helper()
	ch := make(chan Change, 64)
	v.Subscribe(func(cs []Change) {
		for _, c := range cs {
			ch <- c
		}
	})
	run(t, v)
	select {
	case <-v.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("first scan never finished")
	}
	// The first scan reports every note as created; drain those.
	for {
		select {
		case <-ch:
		default:
			return ch
		}
	}
}

func next(t *testing.T, ch <-chan Change, path string) Change {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if c.Path == path {
				return c
			}
		case <-deadline:
			t.Fatalf("no change for %s", path)
		}
	}
}

func TestRunDeliversEditsWithFingerprints(t *testing.T) {
	dir := sampleVault(t)
	v := open(t, dir)
	ch := watchChanges(t, v)
	ctx := context.Background()
	task := "Tasks/Renew passport.md"
	abs := filepath.Join(dir, filepath.FromSlash(task))
	before, _ := os.ReadFile(abs)

	// An editor's rename-save: temp file, then rename over the note.
	after := append(before, "\n- [ ] Ask about the zanzibarquux form\n"...)
	tmp := abs + ".tmp-save"
	os.WriteFile(tmp, after, 0o644)
	if err := os.Rename(tmp, abs); err != nil {
		t.Fatal(err)
	}
	c := next(t, ch, task)
	if c.Old != edit.FingerprintOf(before) || c.New != edit.FingerprintOf(after) || c.Own || c.Kind != "task" {
		t.Errorf("rename-save change %+v: want old/new fingerprints, a user edit of a task", c)
	}
	hits, _ := v.Index().Search(ctx, index.Query{Text: "zanzibarquux"})
	if len(hits) != 1 || hits[0].Path != task {
		t.Errorf("index after the save: hits %+v", hits)
	}

	// margin's own write is recognised as such.
	snap, err := v.Root().Read(task)
	if err != nil {
		t.Fatal(err)
	}
	mine := append(snap.Content, "margin was here\n"...)
	if _, err := v.Root().Write(task, snap.Fingerprint, mine); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch, task); !c.Own || c.New != edit.FingerprintOf(mine) {
		t.Errorf("own write change %+v: want Own", c)
	}

	os.Remove(abs)
	if c := next(t, ch, task); !c.Removed() {
		t.Errorf("delete change %+v: want removed", c)
	}
	if _, err := v.Index().Note(ctx, task); err == nil {
		t.Errorf("deleted note still in the index")
	}
}

// The state dir ignores itself; the vault's .gitignore is the user's.
func TestStateDirIgnoresItself(t *testing.T) {
	dir := sampleVault(t)
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.tmp"), 0o644)
	open(t, dir).Close()
	if data, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(data) != "*.tmp" {
		t.Errorf("vault .gitignore = %q, want it untouched", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, ".margin", ".gitignore")); string(data) != "*\n" {
		t.Errorf(".margin/.gitignore = %q, want *", data)
	}
}

// A cloned vault whose state dir and .gitignore are symlinks out of it: margin
// refuses, naming the link, and changes nothing outside, not even an index
// it would otherwise delete and rebuild (damaged, or its cold build cut short).
func TestSymlinkedStateIsRefused(t *testing.T) {
	for _, link := range []string{".margin", ".margin/index.db"} {
		t.Run(link, func(t *testing.T) {
			dir, elsewhere := sampleVault(t), t.TempDir()
			os.Mkdir(filepath.Join(dir, ".git"), 0o755)
			// A damaged index, and the marker of a cold build that died.
			outside := map[string]string{"gitignore": "*.log\n", "state/index.db": "not a database, damaged", "state/index.db-cold": ""}
			for name, content := range outside {
				os.MkdirAll(filepath.Join(elsewhere, filepath.Dir(name)), 0o755)
				os.WriteFile(filepath.Join(elsewhere, name), []byte(content), 0o644)
			}
			os.Symlink(filepath.Join(elsewhere, "gitignore"), filepath.Join(dir, ".gitignore"))
			target := filepath.Join(elsewhere, "state")
			if link != ".margin" {
				os.Mkdir(filepath.Join(dir, ".margin"), 0o755)
				target = filepath.Join(target, "index.db")
			}
			os.Symlink(target, filepath.Join(dir, link))

			v, err := Open(context.Background(), Options{Dir: dir})
			if err == nil {
				v.Scan(context.Background(), nil)
				v.Close()
				t.Error("opened a vault whose state is a symlink out of it")
			} else if want := filepath.Join(dir, link) + " is a symbolic link to " + target; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			vaulttest.Unchanged(t, elsewhere, outside)
		})
	}
}

func TestRemoveOldIgnoreLine(t *testing.T) {
	const block = "# margin's state (index, agents, ledger)\n/.margin/\n"
	for _, tt := range []struct{ name, before, after string }{
		{"margin's own file", block, ""},
		{"after the user's lines", "*.tmp\n" + block, "*.tmp\n"},
		{"between the user's lines", "*.tmp\n" + block + "build/\n", "*.tmp\nbuild/\n"},
		{"the user's own line", "/.margin/\n", "/.margin/\n"},
		{"a line the user changed", "# margin's state (index, agents, ledger)\n/.margin/ # mine\n", "# margin's state (index, agents, ledger)\n/.margin/ # mine\n"},
		{"inside another line", "x" + block, "x" + block},
		{"with CRLF", strings.ReplaceAll(block, "\n", "\r\n"), strings.ReplaceAll(block, "\n", "\r\n")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := sampleVault(t)
			gi := filepath.Join(dir, ".gitignore")
			os.WriteFile(gi, []byte(tt.before), 0o644)
			removed, err := open(t, dir).RemoveOldIgnoreLine()
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(gi)
			if string(data) != tt.after || removed != (tt.before != tt.after) {
				t.Errorf("removed %v, .gitignore %q; want %q", removed, data, tt.after)
			}
		})
	}
	dir := sampleVault(t)
	if removed, err := open(t, dir).RemoveOldIgnoreLine(); removed || err != nil {
		t.Errorf("no .gitignore: removed %v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".gitignore")); err == nil {
		t.Errorf("a .gitignore was created")
	}
	// One that leads out of the vault is neither read nor written.
	elsewhere := filepath.Join(t.TempDir(), "gitignore")
	os.WriteFile(elsewhere, []byte(block), 0o644)
	os.Symlink(elsewhere, filepath.Join(dir, ".gitignore"))
	if _, err := open(t, dir).RemoveOldIgnoreLine(); !errors.Is(err, edit.ErrOutsideVault) {
		t.Errorf("a .gitignore linked out of the vault: %v, want ErrOutsideVault", err)
	}
	if data, _ := os.ReadFile(elsewhere); string(data) != block {
		t.Errorf("the file outside the vault changed: %q", data)
	}
}

func TestVanishedFileIsRemovedNotFailed(t *testing.T) {
	dir := sampleVault(t)
	v := open(t, dir)
	u, c := v.examine("Daily/1999-01-01.md", index.FileStat{Hash: "abc", State: index.StateIndexed})
	if !u.Remove || c == nil || !c.Removed() {
		t.Errorf("examine of a vanished indexed file = %+v, %+v; want a removal", u, c)
	}
}

func TestOversizeAndBinaryNotesAreSkipped(t *testing.T) {
	dir := sampleVault(t)
	os.WriteFile(filepath.Join(dir, "Inbox", "huge.md"), []byte(strings.Repeat("x", 2048)), 0o644)
	os.WriteFile(filepath.Join(dir, "Inbox", "binary.md"), []byte("abc\x00def"), 0o644)
	v, err := Open(context.Background(), Options{Dir: dir, MaxFileSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	cov, _ := v.Index().Coverage(context.Background(), index.StateSkipped)
	reasons := map[string]string{}
	for _, f := range cov {
		reasons[f.Path] = f.Reason
	}
	if !strings.Contains(reasons["Inbox/huge.md"], "size cap") || !strings.Contains(reasons["Inbox/binary.md"], "binary") {
		t.Errorf("skipped = %v, want huge.md over the size cap and binary.md binary", reasons)
	}
}

// TestLinkedTasksIsTheReverseOfLinkedEntries checks the one-pass lookup
// against the per-task one over the whole sample vault, whose links use
// names, paths, aliases, headings and markdown links.
func TestLinkedTasksIsTheReverseOfLinkedEntries(t *testing.T) {
	ctx := context.Background()
	v := open(t, sampleVault(t))
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	tasks, err := v.Index().Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]bool{} // daily note → tasks its entries link
	pairs := 0
	for _, task := range tasks {
		entries, err := v.Index().LinkedEntries(ctx, task.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if want[e.Path] == nil {
				want[e.Path] = map[string]bool{}
			}
			if !want[e.Path][task.Path] {
				pairs++
			}
			want[e.Path][task.Path] = true
		}
	}
	if pairs < 10 {
		t.Fatalf("only %d note→task links in the sample vault; the test would prove little", pairs)
	}
	days, err := v.Index().Search(ctx, index.Query{Glob: "Daily/*.md", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range days {
		if seen[d.Path] {
			continue
		}
		seen[d.Path] = true
		got, err := v.Index().LinkedTasks(ctx, d.Path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want[d.Path]) {
			t.Errorf("%s: LinkedTasks = %v, LinkedEntries says %v", d.Path, got, want[d.Path])
			continue
		}
		for _, task := range got {
			if !want[d.Path][task] {
				t.Errorf("%s: LinkedTasks has %s, which LinkedEntries does not", d.Path, task)
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("checked %d daily notes, want all of the sample vault's", len(seen))
	}
}

// TestRunMergesTheSearchTableAfterAColdIndex: a cold index leaves the
// search table in several segments; Run merges them after its first scan.
func TestRunMergesTheSearchTableAfterAColdIndex(t *testing.T) {
	dir := t.TempDir()
	if _, err := vaultgen.Generate(dir, vaultgen.Options{Notes: 3000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	v := open(t, dir)
	run(t, v)
	<-v.Ready()
	db, err := store.OpenRebuildable(context.Background(), filepath.Join(dir, ".margin", "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	segments := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(DISTINCT segid) FROM notes_fts_idx`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	deadline := time.Now().Add(10 * time.Second)
	for segments() > 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the search table still has %d segments 10 s after the first scan, want 1", segments())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenMovesTheIndexOutOfTheStateDatabase: margin kept the index in
// state.db before it had a file of its own; opening the vault drops those
// tables, keeps the others, and indexes into index.db.
func TestOpenMovesTheIndexOutOfTheStateDatabase(t *testing.T) {
	ctx := context.Background()
	dir := sampleVault(t)
	statePath := filepath.Join(dir, ".margin", "state.db")
	old, err := index.Open(ctx, statePath) // the old layout: the index's tables in state.db
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	db, err := store.Open(ctx, statePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, db, "agents", []string{`CREATE TABLE agents (id INTEGER PRIMARY KEY)`}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	v := open(t, dir)
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var tables []string
	rows, err := v.DB().QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if want := []string{"agents", "schema_migrations"}; !slices.Equal(tables, want) {
		t.Errorf("state.db tables = %q, want %q", tables, want)
	}
	if hits, err := v.Index().Search(ctx, index.Query{Text: "bench"}); err != nil || len(hits) == 0 {
		t.Errorf("search after the move = %d hits, %v; want some", len(hits), err)
	}
}

// TestOpenRebuildsADamagedIndex: a damaged index.db must not keep margin
// from starting; it is removed and the vault indexed again.
func TestOpenRebuildsADamagedIndex(t *testing.T) {
	for name, damage := range map[string]func(b []byte){
		"not a database": func(b []byte) { copy(b, "this is not an SQLite database") },
		"schema garbled": func(b []byte) {
			for i := 100; i < store.RebuildablePageSize; i++ { // the rest of page 1: the schema
				b[i] = 0xa5
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := sampleVault(t)
			v := open(t, dir)
			if _, err := v.Scan(ctx, nil); err != nil {
				t.Fatal(err)
			}
			v.Close()
			indexDB := filepath.Join(dir, ".margin", "index.db")
			b, err := os.ReadFile(indexDB)
			if err != nil {
				t.Fatal(err)
			}
			damage(b)
			if err := os.WriteFile(indexDB, b, 0o644); err != nil {
				t.Fatal(err)
			}
			v = open(t, dir)
			if _, err := v.Scan(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if hits, err := v.Index().Search(ctx, index.Query{Text: "bench"}); err != nil || len(hits) == 0 {
				t.Errorf("search after the rebuild = %d hits, %v; want some", len(hits), err)
			}
			if err := v.Index().Check(ctx); err != nil {
				t.Errorf("rebuilt index: %v", err)
			}
		})
	}
}

// Before any rescan, status has no lastRescan, rather than the year 1.
func TestStatusOmitsLastRescanBeforeAny(t *testing.T) {
	v := open(t, sampleVault(t))
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	st, err := v.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "lastRescan") {
		t.Errorf("status before any rescan: %s", b)
	}
}

// A closed vault leaves no empty index.db-journal beside the index.
func TestCloseLeavesNoIndexJournal(t *testing.T) {
	dir := sampleVault(t)
	v, err := Open(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, ".margin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-journal") {
			t.Errorf("%s left in the state dir after Close", e.Name())
		}
	}
}

// TestWaitReadySaysWhyTheFirstScanNeverCame: when Run stops before its
// first scan (here the watcher cannot start: the vault directory is gone),
// a caller waiting for the scan hears why instead of waiting for ever, and
// Ready stays open, as the index is not current.
func TestWaitReadySaysWhyTheFirstScanNeverCame(t *testing.T) {
	dir := sampleVault(t)
	v := open(t, dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- v.WaitReady(context.Background()) }()
	runErr := v.Run(context.Background())
	if runErr == nil {
		t.Fatal("Run on a removed vault returned nil")
	}
	select {
	case err := <-waited:
		if err == nil || err.Error() != runErr.Error() {
			t.Errorf("WaitReady = %v, want Run's error %v", err, runErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitReady still waits after Run stopped")
	}
	if err := v.Err(); err == nil || err.Error() != runErr.Error() {
		t.Errorf("Err = %v, want %v", err, runErr)
	}
	select {
	case <-v.Ready():
		t.Error("Ready is closed, but no scan finished")
	default:
	}
	if st, err := v.Status(context.Background()); err != nil || st.Watching || !strings.Contains(st.Degraded, runErr.Error()) {
		t.Errorf("status = %+v, %v; want not watching, saying why", st, err)
	}
}

// TestWaitReadyWhenTheFirstScanFails: a first scan that fails (here the
// index cannot be read) stops Run with its error, WaitReady says so, and
// the watcher Run started stops with it.
func TestWaitReadyWhenTheFirstScanFails(t *testing.T) {
	v := open(t, sampleVault(t))
	if err := v.Index().Close(); err != nil {
		t.Fatal(err)
	}
	runErr := v.Run(context.Background())
	if runErr == nil || !strings.Contains(runErr.Error(), "reading index state") {
		t.Fatalf("Run = %v, want the scan's error", runErr)
	}
	if err := v.WaitReady(context.Background()); err == nil || err.Error() != runErr.Error() {
		t.Errorf("WaitReady = %v, want Run's error %v", err, runErr)
	}
	if ws := v.watcher.Status(); ws.Watching {
		t.Error("the watcher still runs after Run returned")
	}
}

// TestWaitReadyAfterAFirstScan: once the first scan is done, WaitReady
// returns nil, also after Run has stopped.
func TestWaitReadyAfterAFirstScan(t *testing.T) {
	v := open(t, sampleVault(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	if err := v.WaitReady(context.Background()); err != nil {
		t.Fatalf("WaitReady = %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if err := v.WaitReady(context.Background()); err != nil || v.Err() != nil {
		t.Errorf("after Run stopped: WaitReady = %v, Err = %v; want nil", err, v.Err())
	}
}

// Once Run is past its first scan, Watched says so to every process on
// the vault, and stops saying so when Run returns.
func TestWatchedWhileRunWatches(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Note.md"), []byte("# Note\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := open(t, dir)
	watched := func() bool {
		t.Helper()
		w, err := v.Watched()
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	if watched() {
		t.Fatal("watched before Run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	<-v.Ready()
	deadline := time.Now().Add(10 * time.Second)
	for !watched() {
		if time.Now().After(deadline) {
			t.Fatal("not watched after the first scan")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if watched() {
		t.Error("still watched after Run returned")
	}
}

// TestRestartStatsEveryKnownFile: the stats of a warm scan are taken in
// chunks on every core; the files changed in any chunk are read again,
// and only those (the last file of a chunk, unchanged, is not).
func TestRestartStatsEveryKnownFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const n = 600
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("n%03d.md", i)), []byte(fmt.Sprintf("# Note %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v := open(t, dir)
	if _, err := v.Scan(ctx, nil); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	changed := []int{0, 256, 300, 599}
	for _, i := range changed {
		if err := os.Chtimes(filepath.Join(dir, fmt.Sprintf("n%03d.md", i)), later, later); err != nil {
			t.Fatal(err)
		}
	}
	res, err := v.Scan(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != n || res.Touched != len(changed) || res.Unchanged != n-len(changed) || res.Updated != 0 {
		t.Errorf("restart scan %+v, want %d files, %d touched, the rest unchanged", res, n, len(changed))
	}
}
