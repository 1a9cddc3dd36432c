package note

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testOptions is the configuration the tests and benchmarks parse with.
var testOptions = Options{Daily: DefaultDailyFormat(), TaskFolders: []string{"Tasks"}}

// goldenPaths gives each testdata note the vault path it is parsed under,
// which decides its kind.
var goldenPaths = map[string]string{
	"bench": "Tasks/Migrate billing.md",
	"daily": "Daily/2026-11-22.md",
	"task":  "Tasks/Ship v2 importer.md",
}

func TestGolden(t *testing.T) {
	for name, notePath := range goldenPaths {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", name+".md"))
			if err != nil {
				t.Fatal(err)
			}
			n := Parse(notePath, src, testOptions)
			checkOffsets(t, src, n)
			got, err := json.MarshalIndent(n, "", "\t")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Parse(%s) differs from %s (run go test -update and review the diff):\n%s", name, golden, firstDiff(string(got), string(want)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + g[i] + "\nwant: " + w[i]
		}
	}
	return "lengths differ"
}

// TestParseConcurrently shares the package-level goldmark parser and scratch
// pool between goroutines; run with -race.
func TestParseConcurrently(t *testing.T) {
	want := map[string]*Note{}
	srcs := map[string][]byte{}
	for name, notePath := range goldenPaths {
		src, err := os.ReadFile(filepath.Join("testdata", name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		srcs[name], want[name] = src, Parse(notePath, src, testOptions)
	}
	var wg sync.WaitGroup
	for range 4 {
		for name, notePath := range goldenPaths {
			wg.Go(func() {
				if got := Parse(notePath, srcs[name], testOptions); !reflect.DeepEqual(got, want[name]) {
					t.Errorf("concurrent Parse(%s) differs from a sequential one", name)
				}
			})
		}
	}
	wg.Wait()
}
