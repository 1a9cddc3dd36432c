package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestGeneratedFilesAreCurrent fails when a plugin's protocol.gen.ts is not
// what gen writes from server/protocol today.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	want, err := typeScript(filepath.Join(root, "server", "protocol"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range outputs {
		got, err := os.ReadFile(filepath.Join(root, out))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is out of date: run go generate ./server/protocol", out)
		}
	}
}

type inner struct {
	Shared string `json:"shared"`
	Deep   int    `json:"deep"`
}

type outer struct {
	inner
	Shared   bool              `json:"shared"` // shadows inner's
	Name     string            `json:"name"`
	Note     string            `json:"note,omitempty"`
	When     time.Time         `json:"when,omitzero"`
	Ptr      *inner            `json:"ptr"`
	OptPtr   *inner            `json:"optPtr,omitempty"`
	List     []string          `json:"list"`
	OptList  []int             `json:"optList,omitempty"`
	Nested   [][]string        `json:"nested"`
	Map      map[string]any    `json:"map"`
	Raw      json.RawMessage   `json:"raw"`
	Bytes    []byte            `json:"bytes"`
	Anon     struct{ X int }   `json:"anon"`
	Untagged string            //
	Skipped  string            `json:"-"`
	Odd      string            `json:"odd-name"`
	ByID     map[string]*inner `json:"byId,omitempty"`
	hidden   string
}

func TestTypeScriptFollowsEncodingJSON(t *testing.T) {
	w := newWriter()
	if got := w.ref(reflect.TypeFor[outer](), false); got != "outer" {
		t.Fatalf("ref = %q, want the interface's name", got)
	}
	got, err := w.interfaces()
	if err != nil {
		t.Fatal(err)
	}
	want := `/** gen.inner */
export interface inner {
  shared: string;
  deep: number;
}

/** gen.outer */
export interface outer {
  deep: number;
  shared: boolean;
  name: string;
  note?: string;
  when?: string;
  ptr: inner | null;
  optPtr?: inner;
  list: string[] | null;
  optList?: number[];
  nested: (string[] | null)[] | null;
  map: Record<string, unknown> | null;
  raw: unknown;
  bytes: string | null;
  anon: { X: number; };
  Untagged: string;
  "odd-name": string;
  byId?: Record<string, inner | null>;
}

`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	_ = outer{}.hidden
}

type a struct{ X int }

type textual struct{}

func (textual) MarshalText() ([]byte, error) { return nil, nil }

func TestTypeScriptRefusesWhatItCannotName(t *testing.T) {
	w := newWriter()
	w.ref(reflect.TypeFor[a](), false)
	type a struct{ Y string } // another a, in another scope
	w.ref(reflect.TypeFor[a](), false)
	if _, err := w.interfaces(); err == nil || !strings.Contains(err.Error(), "are both a") {
		t.Errorf("two types named a: err = %v", err)
	}

	w = newWriter()
	w.ref(reflect.TypeFor[struct{ T textual }](), false)
	if _, err := w.interfaces(); err == nil || !strings.Contains(err.Error(), "encoding of its own") {
		t.Errorf("a type with MarshalText: err = %v", err)
	}
}

// TestProtocolIsALeaf: protocol declares its wire types itself, so gen
// refuses a package that imports margin's own or aliases a type.
func TestProtocolIsALeaf(t *testing.T) {
	for _, c := range []struct{ name, src, err string }{
		{"std imports", "package protocol\n\nimport \"time\"\n\ntype Own struct{ At time.Time }\ntype unexported struct{}\n", ""},
		{"a margin import", "package protocol\n\nimport \"github.com/margin-md/margin/vault\"\n\ntype Own struct{ S vault.Status }\n", "protocol imports github.com/margin-md/margin/vault"},
		{"an alias", "package protocol\n\nimport \"time\"\n\ntype When = time.Time\n", "When is an alias"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			wire, err := declared(dir)
			switch {
			case c.err == "" && (err != nil || strings.Join(wire, ",") != "Own"):
				t.Errorf("wire %v, err %v; want [Own]", wire, err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("err = %v, want one saying %q", err, c.err)
			}
		})
	}
}
