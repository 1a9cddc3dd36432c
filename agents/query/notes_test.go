package query

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
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
		e, err := New(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }, Editor: ed})
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
		case !applied && !errors.Is(err, ErrEditorRefused):
			t.Errorf("a refused edit: %v, want ErrEditorRefused", err)
		}
	}
}
