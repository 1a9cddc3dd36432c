package edit

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVault creates a vault directory beside a secret file outside it, with
// symlinks that lead out (a note and a directory) and one that stays inside.
func testVault(t *testing.T) (r *Root, vault, secret string) {
	t.Helper()
	base := t.TempDir()
	vault = filepath.Join(base, "vault")
	secret = filepath.Join(base, "secret.md")
	mustWrite(t, secret, "secret\n")
	mustWrite(t, filepath.Join(vault, "Tasks", "Ship.md"), "---\nstatus: open\n---\n")
	for link, dest := range map[string]string{
		"out.md":        secret,
		"outdir":        base,
		"Notes/rel.md":  "../../secret.md",
		"Notes/Ship.md": "../Tasks/Ship.md",
	} {
		p := filepath.Join(vault, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(dest, p); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(vault)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, vault, secret
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTempFiles fails if a temp file was left anywhere in the vault.
func noTempFiles(t *testing.T, vault string) {
	t.Helper()
	filepath.WalkDir(vault, func(p string, d fs.DirEntry, err error) error {
		if err == nil && IsTempName(d.Name()) {
			t.Errorf("temp file left behind: %s", p)
		}
		return nil
	})
}

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
		outside  bool // error must match ErrOutsideVault
		invalid  bool // other error
	}{
		{in: "Tasks/Ship v2.md", want: "Tasks/Ship v2.md"},
		{in: "./Tasks//Ship.md/", want: "Tasks/Ship.md"},
		{in: "Tasks/../Daily/2026-11-22.md", want: "Daily/2026-11-22.md"},
		{in: "Tâches/Été.md", want: "Tâches/Été.md"},
		{in: "../x.md", outside: true},
		{in: "Tasks/../../x.md", outside: true},
		{in: "..", outside: true},
		{in: "/etc/passwd", outside: true},
		{in: "", invalid: true},
		{in: ".", invalid: true},
		{in: "a\x00b", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Clean(tt.in)
			switch {
			case tt.outside || tt.invalid:
				if err == nil || errors.Is(err, ErrOutsideVault) != tt.outside {
					t.Fatalf("Clean(%q) = %q, %v; want error (outside %v)", tt.in, got, err, tt.outside)
				}
			case err != nil || got != tt.want:
				t.Fatalf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRel(t *testing.T) {
	base := t.TempDir()
	vault := filepath.Join(base, "My Vault")
	if err := os.Mkdir(vault, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(vault, link); err != nil {
		t.Fatal(err)
	}
	r, err := Open(link) // opened through a symlink, as /tmp is on macOS
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tests := []struct {
		name, in, want string
		outside        bool
	}{
		{"path via the link", filepath.Join(link, "Tasks", "a.md"), "Tasks/a.md", false},
		{"real path", filepath.Join(vault, "Tasks", "a.md"), "Tasks/a.md", false},
		{"file URI with escapes", "file://" + filepath.ToSlash(vault) + "/Daily/2026%2D11%2D22%20x.md", "Daily/2026-11-22 x.md", false},
		{"file URI via localhost", "file://localhost" + filepath.ToSlash(link) + "/n.md", "n.md", false},
		{"already relative", "Tasks/./a.md", "Tasks/a.md", false},
		{"outside", filepath.Join(base, "other.md"), "", true},
		{"sibling with a common prefix", vault + "2/x.md", "", true},
		{"dot-dot out of the vault", filepath.Join(vault, "..", "x.md"), "", true},
		{"URI of another host", "file://server/share/x.md", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Rel(tt.in)
			if tt.outside {
				if !errors.Is(err, ErrOutsideVault) {
					t.Fatalf("Rel(%q) = %q, %v; want ErrOutsideVault", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Rel(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestEscapesAreRefused(t *testing.T) {
	r, vault, secret := testVault(t)
	paths := []string{
		"../secret.md",
		"Tasks/../../secret.md",
		secret,         // absolute
		"out.md",       // symlink to a file outside
		"outdir/x.md",  // symlinked directory pointing out
		"Notes/rel.md", // relative symlink climbing out
	}
	for _, p := range []string{"..", "outdir", secret} {
		if _, err := r.ReadDir(p); !errors.Is(err, ErrOutsideVault) {
			t.Errorf("ReadDir(%q): %v, want ErrOutsideVault", p, err)
		}
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			if _, err := r.Read(p); !errors.Is(err, ErrOutsideVault) {
				t.Errorf("Read: %v, want ErrOutsideVault", err)
			}
			if _, err := r.ReadFile(p); !errors.Is(err, ErrOutsideVault) {
				t.Errorf("ReadFile: %v, want ErrOutsideVault", err)
			}
			if _, err := r.Stat(p); !errors.Is(err, ErrOutsideVault) {
				t.Errorf("Stat: %v, want ErrOutsideVault", err)
			}
			if _, err := r.Write(p, FingerprintOf([]byte("secret\n")), []byte("pwned")); !errors.Is(err, ErrOutsideVault) {
				t.Errorf("Write: %v, want ErrOutsideVault", err)
			}
			if _, err := r.Create(p, []byte("pwned")); !errors.Is(err, ErrOutsideVault) {
				t.Errorf("Create: %v, want ErrOutsideVault", err)
			}
		})
	}
	if got := readString(t, secret); got != "secret\n" {
		t.Fatalf("file outside the vault changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(vault), "x.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file was created outside the vault: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(vault, "out.md")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("out.md is no longer a symlink: %v", err)
	}
	noTempFiles(t, vault)
}

func TestWriteCompareAndSwap(t *testing.T) {
	r, vault, _ := testVault(t)
	const p = "Tasks/Ship.md"
	snap, err := r.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Path != p || string(snap.Content) != "---\nstatus: open\n---\n" || snap.Fingerprint != FingerprintOf(snap.Content) {
		t.Fatalf("Read = %+v", snap)
	}
	fp, err := r.Write(p, snap.Fingerprint, []byte("---\nstatus: done\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	if fp != FingerprintOf([]byte("---\nstatus: done\n---\n")) {
		t.Fatal("Write returned the wrong fingerprint")
	}

	// The user edits the note; margin's next write, based on the old read,
	// must be refused and leave the user's text alone.
	user := "---\nstatus: blocked\n---\nuser text\n"
	mustWrite(t, filepath.Join(vault, p), user)
	tests := []struct {
		name    string
		path    string
		base    Fingerprint
		current Fingerprint
	}{
		{"changed since read", p, fp, FingerprintOf([]byte(user))},
		{"create over an existing file", p, "", FingerprintOf([]byte(user))},
		{"removed since read", "Tasks/Gone.md", fp, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Write(tt.path, tt.base, []byte("margin's version\n"))
			var ce *ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
				t.Fatalf("Write = %v, want a *ConflictError", err)
			}
			if ce.Path != tt.path || ce.Base != tt.base || ce.Current != tt.current {
				t.Fatalf("conflict = %+v", ce)
			}
		})
	}
	if got := readString(t, filepath.Join(vault, p)); got != user {
		t.Fatalf("user's edit clobbered: %q", got)
	}
	if b, err := r.ReadFile("./" + p); err != nil || string(b) != user {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if info, err := r.Stat(p); err != nil || info.Size() != int64(len(user)) {
		t.Fatalf("Stat = %v, %v", info, err)
	}
	if _, err := r.Stat("Tasks/Gone.md"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(vault, "Tasks", "Gone.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a conflicting write created a file: %v", err)
	}
	noTempFiles(t, vault)
}

func TestCreate(t *testing.T) {
	r, vault, _ := testVault(t)
	fp, err := r.Create("Margin/Reports/Ship v2.md", []byte("report\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(vault, "Margin", "Reports", "Ship v2.md")); got != "report\n" {
		t.Fatalf("created %q", got)
	}
	if !r.IsOwnWrite("Margin/Reports/Ship v2.md", fp) {
		t.Fatal("own create not recognised")
	}
	if _, err := r.Create("Margin/Reports/Ship v2.md", []byte("again\n")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second Create = %v, want ErrConflict", err)
	}
	// A parent that is a file: nothing may be created.
	if _, err := r.Create("Tasks/Ship.md/child.md", []byte("x")); err == nil {
		t.Fatal("Create under a file succeeded")
	}
	noTempFiles(t, vault)
}

func TestWriteKeepsModeAndLinks(t *testing.T) {
	r, vault, _ := testVault(t)
	full := filepath.Join(vault, "Tasks", "Ship.md")
	if err := os.Chmod(full, 0o600); err != nil {
		t.Fatal(err)
	}
	// Write through Notes/Ship.md, a symlink to Tasks/Ship.md.
	snap, err := r.Read("Notes/Ship.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write("Notes/Ship.md", snap.Fingerprint, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, full); got != "new\n" {
		t.Fatalf("target holds %q", got)
	}
	fi, err := os.Lstat(filepath.Join(vault, "Notes", "Ship.md"))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the link was replaced by a file: %v", err)
	}
	if fi, err := os.Stat(full); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
	}
	if !r.IsOwnWrite("Tasks/Ship.md", FingerprintOf([]byte("new\n"))) {
		t.Fatal("write through a link not recognised under the target's path")
	}
}

func TestWriteFailuresLeaveOriginal(t *testing.T) {
	const p = "Tasks/Ship.md"
	tests := []struct {
		name string
		hook func(vault string) error
		want error
	}{
		{"user saves while margin writes", func(vault string) error {
			return os.WriteFile(filepath.Join(vault, p), []byte("user saved\n"), 0o644)
		}, ErrConflict},
		{"failure at the last moment", func(string) error {
			return errInjected
		}, errInjected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, vault, _ := testVault(t)
			snap, err := r.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			var want string // what the file holds when margin would commit
			testHookBeforeCommit = func() error {
				err := tt.hook(vault)
				want = readString(t, filepath.Join(vault, p))
				return err
			}
			defer func() { testHookBeforeCommit = nil }()

			content := []byte("margin\n")
			if _, err := r.Write(p, snap.Fingerprint, content); !errors.Is(err, tt.want) {
				t.Fatalf("Write = %v, want %v", err, tt.want)
			}
			if got := readString(t, filepath.Join(vault, p)); got != want {
				t.Fatalf("file holds %q, want %q", got, want)
			}
			if r.IsOwnWrite(p, FingerprintOf(content)) {
				t.Fatal("a failed write is remembered as margin's own")
			}
			noTempFiles(t, vault)
		})
	}
}

var errInjected = errors.New("injected failure")

func TestConcurrentWritersOneWins(t *testing.T) {
	r, vault, _ := testVault(t)
	const p = "Tasks/Ship.md"
	snap, err := r.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex // guards wins
		wins   []string
		others int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			content := string(rune('a'+i)) + "\n"
			_, err := r.Write(p, snap.Fingerprint, []byte(content))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, content)
			case errors.Is(err, ErrConflict):
				others++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(wins) != 1 || others != n-1 {
		t.Fatalf("%d writes won, %d conflicted; want exactly one winner", len(wins), others)
	}
	if got := readString(t, filepath.Join(vault, p)); got != wins[0] {
		t.Fatalf("file holds %q, winner wrote %q", got, wins[0])
	}
	noTempFiles(t, vault)
}

func TestIsOwnWrite(t *testing.T) {
	r, _, _ := testVault(t)
	r.own.perPath, r.own.ttl = 2, time.Minute
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	r.own.now = func() time.Time { return now }

	const p = "Margin/Journal/Ship.md"
	var fps []Fingerprint
	var base Fingerprint
	for _, c := range []string{"one\n", "two\n", "three\n"} {
		fp, err := r.Write(p, base, []byte(c))
		if err != nil {
			t.Fatal(err)
		}
		fps, base = append(fps, fp), fp
	}
	tests := []struct {
		name  string
		path  string
		fp    Fingerprint
		after time.Duration
		want  bool
	}{
		{"latest write", p, fps[2], 0, true},
		{"previous write", p, fps[1], 0, true},
		{"path spelled differently", "./Margin//Journal/Ship.md", fps[2], 0, true},
		{"beyond the per-path bound", p, fps[0], 0, false},
		{"a user edit", p, FingerprintOf([]byte("user\n")), 0, false},
		{"same content at another path", "Tasks/Ship.md", fps[2], 0, false},
		{"after expiry", p, fps[2], 2 * time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saved := now
			now = now.Add(tt.after)
			defer func() { now = saved }()
			if got := r.IsOwnWrite(tt.path, tt.fp); got != tt.want {
				t.Fatalf("IsOwnWrite = %v, want %v", got, tt.want)
			}
		})
	}
	// Expired entries are dropped from memory on the next write.
	now = now.Add(2 * time.Minute)
	if _, err := r.Write("Margin/Other.md", "", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.own.byPath[p]; ok {
		t.Fatal("expired writes still held")
	}
}

func TestIsTempName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{tempName(), true},
		{".margin-0123.tmp", true},
		{"margin-0123.tmp", false},
		{".margin-notes.md", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTempName(tt.name); got != tt.want {
				t.Fatalf("IsTempName(%q) = %v", tt.name, got)
			}
		})
	}
}

// A Reader opens what Root.OpenRead opens, and fails where it fails, also
// through symlinks that leave the file's folder or the vault.
func TestReaderOpensAsRoot(t *testing.T) {
	r, _, _ := testVault(t)
	rd := r.NewReader()
	defer rd.Close()
	read := func(open func(string) (*os.File, error), name string) (string, error) {
		f, err := open(name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		return string(b), err
	}
	for range 2 { // the second time from the folders the Reader kept
		for _, name := range []string{"Tasks/Ship.md", "Notes/Ship.md", "Notes/rel.md", "out.md",
			"outdir/secret.md", "outdir/vault/Tasks/Ship.md", "Tasks/missing.md", "Nowhere/x.md", "../secret.md", "Tasks/../Tasks/Ship.md"} {
			want, werr := read(r.OpenRead, name)
			got, gerr := read(rd.OpenRead, name)
			if got != want || (werr == nil) != (gerr == nil) ||
				errors.Is(gerr, ErrOutsideVault) != errors.Is(werr, ErrOutsideVault) ||
				errors.Is(gerr, fs.ErrNotExist) != errors.Is(werr, fs.ErrNotExist) {
				t.Errorf("%s: Reader gave %q, %v; Root gave %q, %v", name, got, gerr, want, werr)
			}
		}
	}
	if err := rd.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadDirListsInsideTheVault(t *testing.T) {
	r, _, _ := testVault(t)
	entries, err := r.ReadDir("Notes")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, ","), "Ship.md,rel.md"; got != want {
		t.Fatalf("ReadDir(Notes) = %s, want %s", got, want)
	}
	if _, err := r.ReadDir("Nowhere"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadDir(Nowhere) = %v, want fs.ErrNotExist", err)
	}
}
