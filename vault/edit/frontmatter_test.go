package edit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/<name>, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs\n got: %q\nwant: %q", p, got, want)
	}
}

func readInput(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSetFrontmatterGolden(t *testing.T) {
	tests := []struct {
		name  string // also the golden file: testdata/frontmatter/<name>.golden
		input string // testdata/frontmatter/<input>.md
		key   string
		value any
	}{
		{"comments-set-status", "comments", "status", "done"},
		{"comments-set-title", "comments", "title", "Ship v3"},
		{"comments-add-key", "comments", "estimate", "2h"},
		{"comments-delete-priority", "comments", "priority", nil},
		{"comments-set-flow-list", "comments", "tags", []string{"work", "urgent, now"}},
		{"comments-set-date", "comments", "due", "2026-12-01"},
		{"quoted-keep-double", "quoted", "title", "New title"},
		{"quoted-keep-single", "quoted", "alias", "it's"},
		{"quoted-plain-needs-quotes", "quoted", "note", "yes"},
		{"quoted-plain-colon", "quoted", "note", "a: b"},
		{"quoted-int", "quoted", "code", 7},
		{"quoted-bool", "quoted", "note", true},
		{"lists-block-stays-block", "lists", "tags", []string{"work", "urgent"}},
		{"lists-indentless-block", "lists", "aliases", []string{"Launch"}},
		{"lists-flow-stays-flow", "lists", "labels", []string{"c"}},
		{"lists-empty-becomes-flow", "lists", "empty", []string{"x", "y"}},
		{"lists-block-to-scalar", "lists", "tags", "single"},
		{"lists-block-to-empty", "lists", "tags", []string{}},
		{"lists-delete-block", "lists", "tags", nil},
		{"crlf-set", "crlf", "status", "done"},
		{"crlf-add", "crlf", "language", "fr"},
		{"crlf-block-list", "crlf", "tags", []string{"b", "c"}},
		{"crlf-delete", "crlf", "title", nil},
		{"nofm-create-block", "nofm", "status", "open"},
		{"nofm-delete-is-noop", "nofm", "status", nil},
		{"empty-add", "empty", "status", "open"},
		{"hr-body-set", "hr-body", "status", "done"},
		{"hr-body-add", "hr-body", "language", "en"},
		{"case-set-keeps-spelling", "case", "status", "done"},
		{"case-set-title", "case", "TITLE", "Other"},
		{"case-list", "case", "tags", []string{"Two"}},
		{"unicode-set-after-unicode-key", "unicode", "clé", "nouvelle valeur"},
		{"unicode-set-emoji", "unicode", "émoji", "✨ brillant"},
		{"unicode-set-double", "unicode", "titre", "Thé 🍵"},
		{"multiline-to-literal", "multiline", "summary", "New one\nNew two\n"},
		{"multiline-to-inline", "multiline", "summary", "short"},
		{"multiline-folded", "multiline", "folded", "plain"},
		{"multiline-delete", "multiline", "summary", nil},
		{"multiline-add-literal", "multiline", "notes", "first\nsecond"},
		{"bom-set", "bom", "title", "Still BOM"},
		{"nested-set-items", "nested", "items", []map[string]string{{"id": "c1", "status": "confirmed"}, {"id": "c2", "status": "pending"}}},
		{"nested-set-after-items", "nested", "status", "partially-resolved"},
		{"noeol-add", "noeol", "language", "de"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := readInput(t, "frontmatter/"+tt.input+".md")
			in := bytes.Clone(src)
			got, err := SetFrontmatter(src, tt.key, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(src, in) {
				t.Fatal("input modified")
			}
			golden(t, "frontmatter/"+tt.name+".golden", got)
		})
	}
}

func TestSetFrontmatterRefuses(t *testing.T) {
	tests := []struct {
		name, src, key string
		want           string // part of the error
	}{
		{"broken yaml", "---\ntitle: [unclosed\n---\nbody\n", "status", "parsing frontmatter"},
		{"tab indentation", "---\ntags:\n\t- a\n---\n", "status", "parsing frontmatter"},
		{"unterminated block", "---\ntitle: x\nbody\n", "status", "no closing ---"},
		{"not a mapping", "---\n- a\n- b\n---\n", "status", "not a mapping"},
		{"flow mapping", "---\n{title: x}\n---\n", "status", "flow mapping"},
		{"two documents", "---\na: 1\n--- b\n---\n", "status", "more than one YAML document"},
		{"ambiguous key", "---\nStatus: open\nstatus: done\n---\n", "status", "more than once"},
		{"empty key", "---\na: 1\n---\n", "", "empty key"},
		{"key with newline", "---\na: 1\n---\n", "a\nb", "spans lines"},
		{"key too long", "---\na: 1\n---\n", strings.Repeat("k", 1001), "longer than"},
		{"alias would dangle", "---\nbase: &b open\nstatus: *b\n---\n", "base", "unknown anchor"},
		{"explicit key", "---\n? status\n: open\n---\n", "status", "not a simple block key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(tt.src)
			got, err := SetFrontmatter(src, tt.key, "done")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, %v; want an error containing %q", got, err, tt.want)
			}
			if string(src) != tt.src {
				t.Fatal("input modified")
			}
		})
	}
}

func TestDeleteLastKeyLeavesEmptyBlock(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"plain", "---\nstatus: open\n---\nbody\n", "---\n---\nbody\n"},
		{"empty literal", "---\nstatus: | \n---", "---\n---"},
		{"indented mapping", "---\n    Status:\n---\n", "---\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DeleteFrontmatter([]byte(tt.src), "status")
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestKeysThatNeedQuoting(t *testing.T) {
	tests := []struct{ name, key, want string }{
		{"document end marker", "... later", "---\n\"... later\": x\n---\n"},
		{"colon", "a: b", "---\n\"a: b\": x\n---\n"},
		{"number", "2026", "---\n\"2026\": x\n---\n"},
		{"unicode", "clé", "---\nclé: x\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetFrontmatter(nil, tt.key, "x")
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDeleteFrontmatterMissingKey(t *testing.T) {
	src := []byte("---\ntitle: x # keep\n---\nbody\n")
	got, err := DeleteFrontmatter(src, "status")
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("got %q, %v; want the note unchanged", got, err)
	}
}

func TestSetFrontmatterIsIdempotent(t *testing.T) {
	tests := []struct {
		name, input, key string
		value            any
	}{
		{"string", "comments", "status", "done"},
		{"block list", "lists", "tags", []string{"a", "b"}},
		{"literal", "multiline", "summary", "a\nb\n"},
		{"crlf new key", "crlf", "language", "fr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			once, err := SetFrontmatter(readInput(t, "frontmatter/"+tt.input+".md"), tt.key, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			twice, err := SetFrontmatter(once, tt.key, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(once, twice) {
				t.Fatalf("second set changed the note:\n%q\n%q", once, twice)
			}
		})
	}
}
