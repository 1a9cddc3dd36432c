package server_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// hostileVault is the sample vault with a note that cost goldmark minutes
// before the parse budget: blockquotes nested a million deep on one line
// (300 KB took 47 s, and the cost grows with the square). Its one word
// shows whether its text is searchable.
func hostileVault(t *testing.T) string {
	t.Helper()
	dir := editortest.SampleVault(t)
	src := append(bytes.Repeat([]byte(">"), 1<<20), " quokka\n"...)
	if err := os.WriteFile(filepath.Join(dir, "Inbox", "deep.md"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestShutdownDuringFirstScanOfHostileVault: shutdown and exit sent while
// the first scan reads a pathological note end margin within the editor's
// timeout, not after the note is parsed.
func TestShutdownDuringFirstScanOfHostileVault(t *testing.T) {
	dir := hostileVault(t)
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	if code := e.Exit(); code != 0 {
		t.Errorf("exit code %d, want 0\n%s", code, e.StderrText())
	}
}

// TestHostileNoteIsPlainTextInCoverage: the pathological note does not hold
// the vault back; its text is searchable and coverage says why it has no
// structure.
func TestHostileNoteIsPlainTextInCoverage(t *testing.T) {
	dir := hostileVault(t)
	e := editortest.Start(t, []string{"MARGIN_AGENTS_AUTO_CREATE=false"})
	e.Initialize(dir)
	var cov protocol.CoverageResult
	e.MustCall("vault/coverage", map[string]any{"state": "failed"}, &cov)
	var reason string
	for _, f := range cov.Files {
		if f.Path == "Inbox/deep.md" {
			reason = f.Reason
		}
	}
	if !strings.Contains(reason, "plain text") || !strings.Contains(reason, "nested") {
		t.Errorf("coverage of the hostile note = %q, want indexed as plain text because it nests too deep", reason)
	}
	hits := searchHits(e, "quokka")
	if len(hits) != 1 || hits[0].Path != "Inbox/deep.md" {
		t.Errorf("search quokka = %+v, want the hostile note", hits)
	}
}
