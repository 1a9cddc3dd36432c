package edit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeEditor holds open buffers with LSP versions. Its ApplyEdit applies an
// edit of the buffer's current version and refuses one of an older
// version, as a client does with a versioned workspace edit.
type fakeEditor struct {
	mu      sync.Mutex
	buffers map[string]string
	version map[string]int
	// beforeApply, when set, runs at the start of ApplyEdit (outside the
	// lock), to stage typing or a close between Open and the edit.
	beforeApply func(f *fakeEditor)
	// refuse makes every ApplyEdit answer applied=false; fail, an error.
	refuse bool
	fail   error
	asked  []string // every newText ApplyEdit was given
}

func newFakeEditor(open map[string]string) *fakeEditor {
	f := &fakeEditor{buffers: map[string]string{}, version: map[string]int{}}
	for p, text := range open {
		f.buffers[p], f.version[p] = text, 7
	}
	return f
}

func (f *fakeEditor) Open(path string) (string, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	text, ok := f.buffers[path]
	return text, f.version[path], ok
}

func (f *fakeEditor) ApplyEdit(_ context.Context, path string, version int, newText string) (bool, error) {
	if f.beforeApply != nil {
		f.beforeApply(f)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, newText)
	switch _, open := f.buffers[path]; {
	case f.fail != nil:
		return false, f.fail
	case f.refuse:
		return false, nil
	case !open:
		return false, ErrNotOpen
	case f.version[path] != version:
		return false, nil
	}
	f.buffers[path] = newText
	f.version[path]++
	return true, nil
}

// typed is the person typing text at the end of the buffer of path.
func (f *fakeEditor) typed(path, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buffers[path] += text
	f.version[path]++
}

func (f *fakeEditor) close(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.buffers, path)
	delete(f.version, path)
}

func (f *fakeEditor) buffer(path string) string {
	text, _, _ := f.Open(path)
	return text
}

func (f *fakeEditor) edits() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

// changeVault is a vault with one note, Tasks/Ship.md.
func changeVault(t *testing.T) (*Root, string) {
	t.Helper()
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "Tasks", "Ship.md"), "# Ship\n")
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

const ship = "Tasks/Ship.md"

// appendLine is a change that adds a line at the end of the note.
func appendLine(line string) func(Current) ([]byte, error) {
	return func(cur Current) ([]byte, error) {
		return append(append([]byte(nil), cur.Content...), line+"\n"...), nil
	}
}

func TestChangeOnDisk(t *testing.T) {
	r, dir := changeVault(t)
	ed := newFakeEditor(map[string]string{"Other.md": "open elsewhere\n"})
	res, err := r.Change(context.Background(), ed, "Tasks/./Ship.md", appendLine("- margin"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Ship\n- margin\n"
	if got := readString(t, filepath.Join(dir, ship)); got != want {
		t.Errorf("on disk %q, want %q", got, want)
	}
	if !res.Written || res.InEditor || string(res.Content) != want || res.Fingerprint != FingerprintOf([]byte(want)) {
		t.Errorf("Changed = %+v, want written on disk with its content and fingerprint", res)
	}
	if !r.IsOwnWrite(ship, res.Fingerprint) {
		t.Error("the write is not remembered as margin's own")
	}
	if ed.edits() != 0 {
		t.Error("the editor was asked to edit a note it does not have open")
	}
	noTempFiles(t, dir)
}

func TestChangeCreatesMissingNote(t *testing.T) {
	r, dir := changeVault(t)
	var sawExists bool
	res, err := r.Change(context.Background(), nil, "Journal/New.md", func(cur Current) ([]byte, error) {
		sawExists = cur.Exists || cur.Content != nil || cur.InEditor || !cur.Fingerprint().IsZero()
		return []byte("# New\n"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sawExists {
		t.Error("a missing note was given as existing")
	}
	if got := readString(t, filepath.Join(dir, "Journal", "New.md")); got != "# New\n" || !res.Written {
		t.Errorf("created %q (Changed %+v), want \"# New\\n\"", got, res)
	}
}

func TestChangeInOpenBuffer(t *testing.T) {
	r, dir := changeVault(t)
	buffer := "# Ship\ntyped, not saved\n"
	ed := newFakeEditor(map[string]string{ship: buffer})
	res, err := r.Change(context.Background(), ed, ship, func(cur Current) ([]byte, error) {
		if string(cur.Content) != buffer || !cur.Exists || !cur.InEditor || cur.Fingerprint() != FingerprintOf([]byte(buffer)) {
			t.Errorf("change got %+v, want the buffer", cur)
		}
		return append(append([]byte(nil), cur.Content...), "- margin\n"...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := buffer + "- margin\n"
	if got := ed.buffer(ship); got != want {
		t.Errorf("buffer %q, want %q", got, want)
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n" {
		t.Errorf("the file on disk became %q while the note is open in the editor", got)
	}
	if !res.Written || !res.InEditor || string(res.Content) != want || res.Fingerprint != FingerprintOf([]byte(want)) {
		t.Errorf("Changed = %+v, want written in the editor", res)
	}
}

// CurrentOf finds what Change would be given: the buffer of an open note,
// else the file, else nothing; and writes nothing.
func TestCurrentOf(t *testing.T) {
	r, dir := changeVault(t)
	buffer := "# Ship\ntyped, not saved\n"
	ed := newFakeEditor(map[string]string{ship: buffer})
	for _, tc := range []struct {
		name string
		ed   Editor
		path string
		want Current
	}{
		{"open in the editor", ed, ship, Current{Content: []byte(buffer), Exists: true, InEditor: true}},
		{"no editor", nil, ship, Current{Content: []byte("# Ship\n"), Exists: true}},
		{"closed in the editor", newFakeEditor(nil), "Tasks/./Ship.md", Current{Content: []byte("# Ship\n"), Exists: true}},
		{"missing", ed, "Tasks/New.md", Current{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := r.CurrentOf(tc.ed, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(cur.Content) != string(tc.want.Content) || cur.Exists != tc.want.Exists || cur.InEditor != tc.want.InEditor {
				t.Errorf("CurrentOf(%s) = %+v, want %+v", tc.path, cur, tc.want)
			}
		})
	}
	if _, err := r.CurrentOf(nil, "../outside.md"); !errors.Is(err, ErrInvalidPath) && !errors.Is(err, ErrOutsideVault) {
		t.Errorf("a path out of the vault: %v", err)
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n" || ed.edits() != 0 {
		t.Errorf("CurrentOf wrote: file %q, %d edits", got, ed.edits())
	}
}

func TestChangeLeavesNoteAlone(t *testing.T) {
	same := func(cur Current) ([]byte, error) { return append([]byte(nil), cur.Content...), nil }
	none := func(Current) ([]byte, error) { return nil, nil }
	for name, change := range map[string]func(Current) ([]byte, error){"same text": same, "nil": none} {
		t.Run(name, func(t *testing.T) {
			r, dir := changeVault(t)
			res, err := r.Change(context.Background(), nil, ship, change)
			if err != nil || res.Written || string(res.Content) != "# Ship\n" || res.Fingerprint != FingerprintOf([]byte("# Ship\n")) {
				t.Errorf("Change = %+v, %v; want the note as it was, not written", res, err)
			}
			if r.IsOwnWrite(ship, FingerprintOf([]byte("# Ship\n"))) {
				t.Error("the unchanged note was written anyway")
			}
			ed := newFakeEditor(map[string]string{ship: "buffer\n"})
			if res, err := r.Change(context.Background(), ed, ship, change); err != nil || res.Written || !res.InEditor {
				t.Errorf("in the editor: Change = %+v, %v; want left alone", res, err)
			}
			if ed.edits() != 0 {
				t.Error("the editor was asked for an edit that changes nothing")
			}
			if res, err := r.Change(context.Background(), nil, "Gone.md", none); err != nil || res.Written || res.Content != nil || !res.Fingerprint.IsZero() {
				t.Errorf("missing note: Change = %+v, %v; want nothing", res, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "Gone.md")); !os.IsNotExist(err) {
				t.Errorf("a nil change created the note: %v", err)
			}
		})
	}
}

// TestChangeRetriesLostRace: a person saves between margin's read and its
// write; the write loses, and the change is made again to their version.
func TestChangeRetriesLostRace(t *testing.T) {
	r, dir := changeVault(t)
	var got []string
	res, err := r.Change(context.Background(), nil, ship, func(cur Current) ([]byte, error) {
		if cur.InEditor {
			t.Error("a file on disk was given as the editor's buffer")
		}
		got = append(got, string(cur.Content))
		if len(got) == 1 {
			mustWrite(t, filepath.Join(dir, ship), "# Ship\nthe person's save\n")
		}
		return append(append([]byte(nil), cur.Content...), "- margin\n"...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "# Ship\nthe person's save\n- margin\n"
	if disk := readString(t, filepath.Join(dir, ship)); disk != want || string(res.Content) != want {
		t.Errorf("on disk %q, Changed %q; want %q", disk, res.Content, want)
	}
	if len(got) != 2 || got[1] != "# Ship\nthe person's save\n" {
		t.Errorf("change saw %q; want the note as read, then the person's save", got)
	}
	noTempFiles(t, dir)
}

// TestChangePersistentConflictWritesNothing: a note saved again before
// every write is left with the person's last save, and the error says so.
func TestChangePersistentConflictWritesNothing(t *testing.T) {
	r, dir := changeVault(t)
	calls := 0
	_, err := r.Change(context.Background(), nil, ship, func(cur Current) ([]byte, error) {
		calls++
		mustWrite(t, filepath.Join(dir, ship), strings.Repeat("save\n", calls))
		return append(append([]byte(nil), cur.Content...), "- margin\n"...), nil
	})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "kept changing") || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("err = %v, want a conflict that says the note kept changing and nothing was written", err)
	}
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Path != ship {
		t.Errorf("err = %v, want the last attempt's *ConflictError for %s", err, ship)
	}
	if calls != changeAttempts {
		t.Errorf("change ran %d times, want %d", calls, changeAttempts)
	}
	if got := readString(t, filepath.Join(dir, ship)); got != strings.Repeat("save\n", calls) {
		t.Errorf("on disk %q, want the person's last save", got)
	}
	noTempFiles(t, dir)
}

func TestChangeErrorWritesNothing(t *testing.T) {
	errNo := errors.New("the caller's reason")
	fail := func(Current) ([]byte, error) { return []byte("never written\n"), errNo }
	r, dir := changeVault(t)
	if _, err := r.Change(context.Background(), nil, ship, fail); err != errNo {
		t.Errorf("on disk: err = %v, want the change's own error as it is", err)
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n" {
		t.Errorf("on disk %q after a failed change", got)
	}
	ed := newFakeEditor(map[string]string{ship: "buffer\n"})
	if _, err := r.Change(context.Background(), ed, ship, fail); err != errNo {
		t.Errorf("in the editor: err = %v, want the change's own error as it is", err)
	}
	if ed.edits() != 0 || ed.buffer(ship) != "buffer\n" {
		t.Error("a failed change reached the editor")
	}
}

func TestChangeEditorRefuses(t *testing.T) {
	r, dir := changeVault(t)
	ed := newFakeEditor(map[string]string{ship: "buffer\n"})
	ed.refuse = true
	_, err := r.Change(context.Background(), ed, ship, appendLine("- margin"))
	if !errors.Is(err, ErrEditorRefused) || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("err = %v, want ErrEditorRefused and that nothing was written", err)
	}
	if ed.edits() != 1 {
		t.Errorf("the editor was asked %d times; a refusal of the buffer as it is is its answer", ed.edits())
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n" || ed.buffer(ship) != "buffer\n" {
		t.Errorf("a refused edit changed something: disk %q, buffer %q", got, ed.buffer(ship))
	}
}

func TestChangeEditorFails(t *testing.T) {
	r, dir := changeVault(t)
	ed := newFakeEditor(map[string]string{ship: "buffer\n"})
	ed.fail = context.DeadlineExceeded
	_, err := r.Change(context.Background(), ed, ship, appendLine("- margin"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "open in the editor") {
		t.Errorf("err = %v, want the editor's error, saying the note is open there", err)
	}
	if ed.edits() != 1 {
		t.Errorf("the editor was asked %d times, want once", ed.edits())
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n" {
		t.Errorf("a failed editor edit went to disk: %q", got)
	}
}

// TestChangeBufferMovedOn: the person types between margin's Open and its
// edit; the editor refuses the stale version, and the change is made again
// to the buffer with their typing.
func TestChangeBufferMovedOn(t *testing.T) {
	r, _ := changeVault(t)
	ed := newFakeEditor(map[string]string{ship: "buffer\n"})
	ed.beforeApply = func(f *fakeEditor) {
		if f.edits() == 0 {
			f.typed(ship, "typing\n")
		}
	}
	res, err := r.Change(context.Background(), ed, ship, appendLine("- margin"))
	if err != nil {
		t.Fatal(err)
	}
	want := "buffer\ntyping\n- margin\n"
	if got := ed.buffer(ship); got != want || string(res.Content) != want || !res.InEditor {
		t.Errorf("buffer %q (Changed %+v), want %q: the typing kept and the change made to it", got, res, want)
	}
	if ed.edits() != 2 {
		t.Errorf("the editor was asked %d times, want 2", ed.edits())
	}
}

// TestChangeBufferKeepsMoving: typing before every edit refuses the
// change after changeAttempts, leaving the buffer as the person has it.
func TestChangeBufferKeepsMoving(t *testing.T) {
	r, _ := changeVault(t)
	ed := newFakeEditor(map[string]string{ship: "buffer\n"})
	ed.beforeApply = func(f *fakeEditor) { f.typed(ship, "x") }
	_, err := r.Change(context.Background(), ed, ship, appendLine("- margin"))
	if !errors.Is(err, ErrEditorRefused) || !strings.Contains(err.Error(), "kept changing") {
		t.Errorf("err = %v, want the editor's refusal of a buffer that kept changing", err)
	}
	if got := ed.buffer(ship); got != "buffer\nxxx" {
		t.Errorf("buffer %q, want the person's typing alone", got)
	}
}

// TestChangeNoteClosedMeanwhile: a note closed between Open and the edit
// is changed on disk instead, as the disk is then the truth.
func TestChangeNoteClosedMeanwhile(t *testing.T) {
	for name, refuse := range map[string]bool{"ApplyEdit says not open": false, "refused, then closed": true} {
		t.Run(name, func(t *testing.T) {
			r, dir := changeVault(t)
			ed := newFakeEditor(map[string]string{ship: "unsaved buffer\n"})
			ed.refuse = refuse
			ed.beforeApply = func(f *fakeEditor) { f.close(ship) }
			res, err := r.Change(context.Background(), ed, ship, appendLine("- margin"))
			if err != nil {
				t.Fatal(err)
			}
			if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\n- margin\n" || res.InEditor {
				t.Errorf("on disk %q (Changed %+v), want the change made to the file", got, res)
			}
		})
	}
}

// TestChangeNoteCreatedMeanwhile: a note the person creates between
// margin's read (no note) and its write is not replaced: the change is
// made again to what they wrote.
func TestChangeNoteCreatedMeanwhile(t *testing.T) {
	r, dir := changeVault(t)
	var seen []bool
	_, err := r.Change(context.Background(), nil, "Log.md", func(cur Current) ([]byte, error) {
		seen = append(seen, cur.Exists)
		text := cur.Content
		if !cur.Exists {
			mustWrite(t, filepath.Join(dir, "Log.md"), "the person's note\n")
			text = []byte("margin's header\n")
		}
		return append(append([]byte(nil), text...), "- margin\n"...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, filepath.Join(dir, "Log.md")); got != "the person's note\n- margin\n" {
		t.Errorf("on disk %q, want the person's note with the change", got)
	}
	if len(seen) != 2 || seen[0] || !seen[1] {
		t.Errorf("change saw exists = %v, want [false true]", seen)
	}
}

// TestChangeNoteRemovedMeanwhile: a note removed between margin's read and
// its write is not brought back by a change that only edits notes.
func TestChangeNoteRemovedMeanwhile(t *testing.T) {
	r, dir := changeVault(t)
	var seen []bool
	res, err := r.Change(context.Background(), nil, ship, func(cur Current) ([]byte, error) {
		seen = append(seen, cur.Exists)
		if !cur.Exists {
			return nil, nil
		}
		if err := os.Remove(filepath.Join(dir, ship)); err != nil {
			t.Fatal(err)
		}
		return append(append([]byte(nil), cur.Content...), "- margin\n"...), nil
	})
	if err != nil || res.Written {
		t.Errorf("Change = %+v, %v; want nothing written, no error", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ship)); !os.IsNotExist(err) {
		t.Errorf("the removed note came back: %v", err)
	}
	if len(seen) != 2 || !seen[0] || seen[1] {
		t.Errorf("change saw exists = %v, want [true false]", seen)
	}
}

func TestChangeRefusesBeforeChanging(t *testing.T) {
	r, _, _ := testVault(t)
	called := false
	change := func(Current) ([]byte, error) { called = true; return []byte("x"), nil }
	for _, p := range []string{"../secret.md", "/etc/passwd", "out.md", "Notes/rel.md"} {
		if _, err := r.Change(context.Background(), nil, p, change); !errors.Is(err, ErrOutsideVault) {
			t.Errorf("Change(%q) = %v, want ErrOutsideVault", p, err)
		}
	}
	if _, err := r.Change(context.Background(), nil, "", change); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("Change(\"\") = %v, want ErrInvalidPath", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Change(ctx, nil, "Tasks/Ship.md", change); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if called {
		t.Error("change ran for a path or context it should refuse")
	}
}

// TestChangeAgainstWhatWasRead: a caller that must not change a note other
// than the one it read earlier (a report the agent was shown) compares the
// fingerprint, and its refusal is returned at once with nothing written.
func TestChangeAgainstWhatWasRead(t *testing.T) {
	r, dir := changeVault(t)
	snap, err := r.Read(ship)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, ship), "# Ship\nedited by hand\n")
	calls := 0
	_, err = r.Change(context.Background(), nil, ship, func(cur Current) ([]byte, error) {
		calls++
		if cur.Fingerprint() != snap.Fingerprint {
			return nil, &ConflictError{Path: ship, Base: snap.Fingerprint, Current: cur.Fingerprint()}
		}
		return []byte("# Ship\nmargin's version\n"), nil
	})
	if !errors.Is(err, ErrConflict) || calls != 1 {
		t.Errorf("err = %v after %d calls, want the caller's conflict at once", err, calls)
	}
	if got := readString(t, filepath.Join(dir, ship)); got != "# Ship\nedited by hand\n" {
		t.Errorf("on disk %q, want the hand edit", got)
	}
	var missing Current
	if !missing.Fingerprint().IsZero() || (Current{Exists: true}).Fingerprint() != FingerprintOf(nil) {
		t.Error("Current.Fingerprint: zero is for a missing note only")
	}
}
