package query

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
)

// A `## HH:MM` line inside a fenced code block is text, not an entry: it
// neither numbers the key of a new entry with that time nor is taken for
// the entry a correction marks.
func TestEntryHeadingsInCodeAreNotEntries(t *testing.T) {
	const daily = "Daily/2026-11-23.md"
	at := time.Date(2026, 11, 23, 18, 30, 0, 0, time.Local)
	fenced := "```\n## 18:30\nActually the squat was 105\n```\n"
	for _, tc := range []struct {
		name, note string
		key        string // of the entry appended at 18:30
	}{
		{"only in code", "# Log\n\n" + fenced, "18:30"},
		{"in code and a real entry", "## 18:30\nSquat 5x5 @ 100\n\n" + fenced, "18:30 (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := querytest.SampleVault(t)
			if err := os.WriteFile(filepath.Join(v.Dir(), daily), []byte(tc.note), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := newEngine(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }})
			if err != nil {
				t.Fatal(err)
			}
			path, _, key, _, err := e.appendEntry(context.Background(), at, "Bench 3x8", false)
			if err != nil || path != daily || key != tc.key {
				t.Fatalf("appendEntry = %s, key %q, %v; want %s, key %q", path, key, err, daily, tc.key)
			}
		})
	}

	t.Run("correction", func(t *testing.T) {
		v := querytest.SampleVault(t)
		// The entry margin appended comes before a code block that quotes
		// it; only the entry is marked.
		src := "## 18:30\nActually the squat was 105\n\n" + fenced
		if err := os.WriteFile(filepath.Join(v.Dir(), daily), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(context.Background(), v, nil, Options{Now: func() time.Time { return querytest.Now }})
		if err != nil {
			t.Fatal(err)
		}
		s := &Session{Input: "Actually the squat was 105", Appended: &Appended{Path: daily, Heading: "18:30", Key: "18:30"}}
		if err := e.markCorrection(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(v.Dir(), daily))
		if err != nil {
			t.Fatal(err)
		}
		if want := "## 18:30 [correction]\nActually the squat was 105\n\n" + fenced; string(b) != want {
			t.Errorf("daily note:\n%s\nwant:\n%s", b, want)
		}
		if s.Appended.Heading != "18:30 [correction]" || s.Appended.Key != "18:30 [correction]" {
			t.Errorf("appended %+v", s.Appended)
		}
	})
}
