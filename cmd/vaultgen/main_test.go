package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "vault")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"writes a vault", []string{"-n", "30", "-seed", "4", "-start", "2024-01-01", "-out", out}, 0, "wrote 30 notes (18 daily 2024-01-01.."},
		{"refuses to overwrite", []string{"-n", "30", "-out", out}, 1, "not empty"},
		{"needs -out", []string{"-n", "30"}, 2, "usage:"},
		{"bad date", []string{"-start", "1/2/2024", "-out", t.TempDir()}, 2, "-start"},
		{"bad flag", []string{"-x"}, 2, "flag provided but not defined"},
		{"zero notes", []string{"-n", "0", "-out", filepath.Join(t.TempDir(), "v")}, 1, "must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := run(tt.args, &stderr); code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.wantCode, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(out, "Daily", "2024-01-01.md")); err != nil {
		t.Error(err)
	}
}
