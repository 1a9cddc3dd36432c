package server_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault/vaulttest"
)

// storage makes the filesystem under a vault run out of space or turn
// read-only, and back. With root it is a small tmpfs of its own (full: a
// filler file takes the rest; read-only: a remount); without, the vault is
// on the test's filesystem and margin's file size limit stands in for a
// full disk (writes fail with EFBIG) and permissions for a read-only one.
type storage struct {
	t     *testing.T
	root  string // the mount point or plain directory holding the vault
	mount bool
	pid   int // margin, for the file size limit
}

func newStorage(t *testing.T) *storage {
	s := &storage{t: t, root: t.TempDir()}
	err := syscall.Mount("tmpfs", s.root, "tmpfs", 0, "size=16m")
	if err == nil {
		s.mount = true
		t.Cleanup(func() {
			if err := syscall.Unmount(s.root, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", s.root, err)
			}
		})
		return s
	}
	t.Logf("no tmpfs (%v): a file size limit stands in for a full disk, permissions for a read-only one", err)
	if os.Geteuid() == 0 {
		t.Fatalf("running as root, mounting a tmpfs failed: %v", err)
	}
	return s
}

func (s *storage) fill() {
	if !s.mount {
		s.setFileSizeLimit(0)
		return
	}
	// Appending, so that a second call takes what margin freed meanwhile
	// (a rolled-back SQLite journal, a removed temp file).
	f, err := os.OpenFile(filepath.Join(s.root, "filler"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				s.t.Fatal(err)
			}
			break
		}
	}
	// Small writes may still fit in the last partial page: take it too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

func (s *storage) free() {
	if !s.mount {
		s.setFileSizeLimit(^uint64(0)) // RLIM_INFINITY
		return
	}
	if err := os.Remove(filepath.Join(s.root, "filler")); err != nil {
		s.t.Fatal(err)
	}
}

// readOnly makes the vault's folders read-only, or writable again; the
// state dir stays writable, as when the notes live on a read-only share.
// With root each folder gets a read-only bind mount of itself (margin's
// open vault directory resolves paths through it); without, the folders
// lose their write permission.
func (s *storage) readOnly(vault string, on bool) {
	entries, err := os.ReadDir(vault)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, d := range entries {
		p := filepath.Join(vault, d.Name())
		if !d.IsDir() || d.Name() == ".margin" {
			continue
		}
		switch {
		case s.mount && on:
			if err := syscall.Mount(p, p, "", syscall.MS_BIND, ""); err != nil {
				s.t.Fatalf("bind-mounting %s: %v", p, err)
			}
			if err := syscall.Mount("", p, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
				s.t.Fatalf("making %s read-only: %v", p, err)
			}
		case s.mount:
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				s.t.Fatalf("unmounting %s: %v", p, err)
			}
		default:
			mode := os.FileMode(0o755)
			if on {
				mode = 0o555
			}
			filepath.WalkDir(p, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					os.Chmod(p, mode)
				}
				return nil
			})
		}
	}
}

// setFileSizeLimit sets margin's RLIMIT_FSIZE (prlimit(2)).
func (s *storage) setFileSizeLimit(n uint64) {
	lim := syscall.Rlimit{Cur: n, Max: ^uint64(0)}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(s.pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); errno != 0 {
		s.t.Fatalf("prlimit: %v", errno)
	}
}

// fullText and roText are what the error of a write says on a full disk
// and in a read-only folder.
func fullText(st *storage) string {
	if st.mount {
		return "no space left on device"
	}
	return "file too large"
}

func roText(st *storage) string {
	if st.mount {
		return "read-only file system"
	}
	return "permission denied"
}

// TestDiskFullAndReadOnlyVault runs margin on a vault whose filesystem
// fills up and later turns read-only. While it cannot write, every write
// must fail with the storage error code and a message that says why, reads
// must keep working, and nothing may be half-written; once it can write
// again, the same requests succeed and the agents catch up.
func TestDiskFullAndReadOnlyVault(t *testing.T) {
	st := newStorage(t)
	dir := filepath.Join(st.root, "vault")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "vault"))); err != nil {
		t.Fatal(err)
	}
	broken := brokenNotes(t, dir)
	fake := llmtest.NewOllama(t, taskModel)
	proposingModel(fake)
	e := editortest.Start(t, agentEnv(fake.URL))
	st.pid = e.Process().Pid
	e.Initialize(dir)
	a := createAgent(t, e, shipTask)
	var cs protocol.ChangeSet
	json.Unmarshal(waitNth(e, "the change set", "margin/changeSetCreated", 1, forTask(shipTask)), &cs)
	waitWakes(t, e, a.ID, 1)
	before := vaulttest.UserFiles(t, dir)

	for _, fault := range []struct {
		name       string
		on, off    func()
		hold       func() // before each write: keep the fault whole
		wantInText string
	}{
		{"disk full", st.fill, st.free, st.fill, fullText(st)},
		{"read-only", func() { st.readOnly(dir, true) }, func() { st.readOnly(dir, false) }, func() {}, roText(st)},
	} {
		// margin is idle, so nothing it finishes meanwhile frees space.
		settle(t, e, dir)
		fault.on()
		// Writes fail, saying why.
		for _, req := range []struct {
			method string
			params any
		}{
			{"log/append", map[string]any{"text": "Bench 3x5 @ 200 while the disk was " + fault.name}},
			{"changes/confirmAll", map[string]any{"id": cs.ID}},
		} {
			fault.hold()
			err := e.Call(req.method, req.params, nil)
			if err == nil || err.Code != server.CodeStorage || !strings.Contains(err.Message, fault.wantInText) {
				t.Errorf("%s: %s = %v, want error %d saying %q", fault.name, req.method, err, server.CodeStorage, fault.wantInText)
			}
		}
		// Reads work.
		if hits := searchHits(e, "bench"); len(hits) == 0 {
			t.Errorf("%s: search found nothing", fault.name)
		}
		var rep struct{ Path, TLDR string }
		e.MustCall("reports/get", map[string]any{"task": shipTask}, &rep)
		var stat struct{ Notes int }
		e.MustCall("vault/status", nil, &stat)
		if stat.Notes == 0 {
			t.Errorf("%s: status = %+v", fault.name, stat)
		}
		fault.off()
	}

	// Space is back: the writes that failed succeed.
	var logged struct{ Path string }
	e.MustCall("log/append", map[string]any{"text": "Bench 3x5 @ 200 after the disk was freed"}, &logged)
	var after protocol.ChangeSet
	e.MustCall("changes/confirmAll", map[string]any{"id": cs.ID}, &after)
	if after.Status != "resolved" {
		t.Errorf("change set after recovery: %+v, want resolved", after)
	}
	settle(t, e, dir)
	checkNotesWhole(t, dir, broken)
	checkLedgerAgrees(t, e, dir)
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
	now := vaulttest.UserFiles(t, dir)
	for rel, h := range before {
		if rel != logged.Path && rel != shipTask && now[rel] != h {
			t.Errorf("%s changed", rel)
		}
	}

	var down any
	e.MustCall("shutdown", nil, &down)
	e.Notify("exit", nil)
	if code := e.Exit(); code != 0 {
		t.Fatalf("margin exited %d after shutdown", code)
	}
	for _, db := range []string{"state.db", "index.db"} {
		var integrity string
		if err := openDB(t, filepath.Join(dir, ".margin", db), "?mode=ro").QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
			t.Errorf("%s integrity: %q, %v", db, integrity, err)
		}
	}
}
