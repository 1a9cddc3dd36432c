package vault

import (
	"context"
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

func TestStateDirAddedToGitignore(t *testing.T) {
	dir := sampleVault(t)
	os.Mkdir(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.tmp"), 0o644)
	open(t, dir).Close()
	open(t, dir).Close() // twice: added once
	data, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if got := strings.Count(string(data), "/.margin/"); got != 1 || !strings.HasPrefix(string(data), "*.tmp\n") {
		t.Errorf(".gitignore = %q, want the user's line kept and /.margin/ added once", data)
	}

	plain := sampleVault(t)
	open(t, plain).Close()
	if _, err := os.Stat(filepath.Join(plain, ".gitignore")); err == nil {
		t.Errorf("a vault that is not a git repository got a .gitignore")
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
