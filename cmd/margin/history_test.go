package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/margin-md/margin/server/editortest"
)

func TestDifferingShowsTheLinesThatDiffer(t *testing.T) {
	at, got := differing("a\nb\nc\nd\ne\n", "a\nb\nC\nd\ne\n", "a\nb\nX\nd\ne\n")
	if want := []string{"b\nc\nd\n", "b\nC\nd\n", "b\nX\nd\n"}; at != 2 || !slices.Equal(got, want) {
		t.Errorf("differing = %d %q, want 2 %q", at, got, want)
	}
	// A line added at the end, and texts that are prefixes of each other.
	if _, got := differing("a\n", "a\nb\n", "a\nb\n"); !slices.Equal(got, []string{"a\n", "a\nb\n", "a\nb\n"}) {
		t.Errorf("differing at the end = %q", got)
	}
}

// Any write of margin's is undone by its id from margin history: a log
// entry here. An entry the person edited since is refused with the three
// versions, and the note is left as they wrote it.
func TestUndoAWriteByItsID(t *testing.T) {
	vault := editortest.SampleVault(t)
	offline := []string{"OLLAMA_HOST=http://127.0.0.1:1", "MARGIN_LLM_RETRY_LLM_RETRY=0"}
	daily := filepath.Join(vault, "Daily", "2026-11-21.md")
	before, err := os.ReadFile(daily)
	if err != nil {
		t.Fatal(err)
	}
	logged := func(text string) int64 {
		t.Helper()
		if out, stderr, code := runMargin(t, offline, "log", "--vault", vault, "--time", "2026-11-21T07:05", text); code != 0 {
			t.Fatalf("log: exit %d\n%s\n%s", code, out, stderr)
		}
		out, stderr, code := runMargin(t, nil, "history", "--vault", vault, "--json", "--limit", "1")
		var es []struct {
			ID   int64
			Path string
		}
		if code != 0 || json.Unmarshal([]byte(out), &es) != nil || len(es) != 1 || es[0].Path != "Daily/2026-11-21.md" {
			t.Fatalf("history --json: exit %d, %s %s", code, out, stderr)
		}
		return es[0].ID
	}

	id := logged("Slept 8h.")
	if out, _, _ := runMargin(t, nil, "history", "--vault", vault); !strings.HasPrefix(out, "WRITE") || !strings.Contains(out, "\n"+strconv.FormatInt(id, 10)+" ") {
		t.Errorf("history does not show write %d's id:\n%s", id, out)
	}
	out, stderr, code := runMargin(t, nil, "undo", strconv.FormatInt(id, 10), "--vault", vault)
	if code != 0 || !strings.Contains(out, "undid write "+strconv.FormatInt(id, 10)+": Daily/2026-11-21.md") {
		t.Fatalf("undo: exit %d\n%s\n%s", code, out, stderr)
	}
	if got, _ := os.ReadFile(daily); string(got) != string(before) {
		t.Errorf("after undo the daily note is\n%s\nwant\n%s", got, before)
	}

	id = logged("Slept 7h.")
	now, err := os.ReadFile(daily)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(now), "Slept 7h.", "Slept 7h, woke twice.", 1)
	if err := os.WriteFile(daily, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runMargin(t, nil, "undo", strconv.FormatInt(id, 10), "--vault", vault)
	if code == 0 || !strings.Contains(stderr, "nothing was undone") || !strings.Contains(stderr, "--- what margin wrote\n") || !strings.Contains(stderr, "woke twice") {
		t.Errorf("undo of an edited entry: exit %d\n%s", code, stderr)
	}
	if got, _ := os.ReadFile(daily); string(got) != edited {
		t.Errorf("a refused undo wrote the daily note:\n%s", got)
	}
}
