package query

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault/edit"
)

// fakeEditor has notes open and answers every edit with applied.
type fakeEditor struct {
	mu      sync.Mutex
	open    map[string]string // path → buffer, all at version 7
	applied bool
	edits   map[string]string // path → the text it was asked for
}

func (f *fakeEditor) Open(path string) (string, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	text, ok := f.open[path]
	return text, 7, ok
}

func (f *fakeEditor) ApplyEdit(_ context.Context, path string, version int, newText string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if version != 7 {
		return false, nil
	}
	f.edits[path] = newText
	return f.applied, nil
}

func TestContextOpenInTheEditorIsWrittenThroughIt(t *testing.T) {
	for _, applied := range []bool{true, false} {
		v := querytest.SampleVault(t)
		buffer := "---\nlast_updated: 2026-11-01\nversion: 3\n---\n# Global Context\n\n## Preferences\n- units: kg (certain) — typed, not saved\n"
		ed := &fakeEditor{open: map[string]string{"Margin/Context.md": buffer}, applied: applied, edits: map[string]string{}}
		e, err := newEngine(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }, Editor: ed})
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.writeContext(context.Background(), []ContextUpdate{{Category: "fact", Key: "bench_top_triple", Value: "190 lbs 5x3", Confidence: "certain"}})
		if _, statErr := os.Stat(filepath.Join(v.Dir(), "Margin", "Context.md")); !errors.Is(statErr, os.ErrNotExist) {
			t.Errorf("applied=%v: Context.md was written on disk while open in the editor", applied)
		}
		got := ed.edits["Margin/Context.md"]
		if !strings.Contains(got, "units: kg") || !strings.Contains(got, "190 lbs 5x3") {
			t.Errorf("applied=%v: the editor was asked for\n%s\nwant the buffer's preference kept and the fact added", applied, got)
		}
		switch {
		case applied && (err != nil || n != 1):
			t.Errorf("writeContext = %d, %v; want 1 update through the editor", n, err)
		case !applied && !errors.Is(err, edit.ErrEditorRefused):
			t.Errorf("a refused edit: %v, want ErrEditorRefused", err)
		}
	}
}

// typingEditor has Context.md open; the person types into it as margin's
// first edit arrives, so the editor refuses that edit of the older version
// and the change runs again on the buffer with their typing.
type typingEditor struct {
	mu      sync.Mutex
	path    string
	text    string
	version int
	edits   int
}

func (f *typingEditor) Open(path string) (string, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text, f.version, path == f.path
}

func (f *typingEditor) ApplyEdit(_ context.Context, path string, version int, newText string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.edits++; f.edits == 1 {
		f.text += "- typed: by hand (certain)\n"
		f.version++
	}
	if path != f.path || version != f.version {
		return false, nil
	}
	f.text, f.version = newText, f.version+1
	return true, nil
}

// TestContextArchivesEachItemOnce: the items a context update moves out
// to the archive are archived once, even when the update of the context
// itself is made twice (the buffer moved on under the first).
func TestContextArchivesEachItemOnce(t *testing.T) {
	v := querytest.SampleVault(t)
	gc := globalContext{Version: 3}
	for i := range 6 {
		gc.Items = append(gc.Items, contextItem{Category: "insight", Key: fmt.Sprintf("idea_%d", i),
			Value: strings.Repeat("a thought ", 8), Confidence: "tentative", Date: fmt.Sprintf("2026-10-%02d", i+1)})
	}
	buffer := gc.render("2026-11-01")
	ed := &typingEditor{path: "Margin/Context.md", text: buffer, version: 7}
	e, err := newEngine(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }, Editor: ed, ContextMaxTokens: (len(buffer) + 3) / 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.writeContext(context.Background(), []ContextUpdate{{Category: "fact", Key: "bench", Value: strings.Repeat("heavy ", 12), Confidence: "certain"}}); err != nil {
		t.Fatal(err)
	}
	if ed.edits != 2 || !strings.Contains(ed.text, "typed: by hand") {
		t.Fatalf("%d edits, buffer\n%s\nwant the update made again to the buffer with the typing", ed.edits, ed.text)
	}
	archive, err := os.ReadFile(filepath.Join(v.Dir(), "Margin", "Context Archive.md"))
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for i := range 6 {
		switch n := strings.Count(string(archive), fmt.Sprintf(" idea_%d:", i)); {
		case n > 1:
			t.Errorf("idea_%d archived %d times:\n%s", i, n, archive)
		case n == 1:
			moved++
			if strings.Contains(ed.text, fmt.Sprintf("idea_%d:", i)) {
				t.Errorf("idea_%d is both archived and in the context", i)
			}
		}
	}
	if moved == 0 {
		t.Errorf("nothing was archived:\n%s", archive)
	}
}

// TestCorrectionKeyIsCountedOnTheBufferItMarks: when the person's typing
// makes margin mark a correction a second time, the entry's key is
// counted on the buffer it was marked in, not kept from the first try.
func TestCorrectionKeyIsCountedOnTheBufferItMarks(t *testing.T) {
	v := querytest.SampleVault(t)
	const daily = "Daily/2026-11-23.md"
	// The first try sees an older correction at 18:30, so it would number
	// this one (2); the person deletes that older one as margin edits.
	ed := &rewritingEditor{path: daily, version: 3,
		text:  "## 18:30 [correction]\nan older fix\n\n## 18:30\nActually the squat was 105\n",
		typed: "## 18:30\nActually the squat was 105\n"}
	e, err := newEngine(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }, Editor: ed})
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{Input: "Actually the squat was 105", Appended: &Appended{Path: daily, Heading: "18:30", Key: "18:30"}}
	if err := e.markCorrection(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if want := "## 18:30 [correction]\nActually the squat was 105\n"; ed.text != want {
		t.Fatalf("buffer:\n%s\nwant:\n%s", ed.text, want)
	}
	if s.Appended.Key != "18:30 [correction]" {
		t.Errorf("key %q, want %q: the buffer it was marked in has no other correction at 18:30", s.Appended.Key, "18:30 [correction]")
	}
}

// rewritingEditor has one note open; the person replaces its text with
// typed as margin's first edit arrives, so that edit is refused and made
// again on the new buffer.
type rewritingEditor struct {
	mu                sync.Mutex
	path, text, typed string
	version, edits    int
}

func (f *rewritingEditor) Open(path string) (string, int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.text, f.version, path == f.path
}

func (f *rewritingEditor) ApplyEdit(_ context.Context, path string, version int, newText string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.edits++; f.edits == 1 {
		f.text, f.version = f.typed, f.version+1
	}
	if path != f.path || version != f.version {
		return false, nil
	}
	f.text, f.version = newText, f.version+1
	return true, nil
}
