package note

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/vaulttest"
)

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// hostileSize is the size of each pathological note in the tests: large
// enough that a superlinear cost shows (before the budget, 1 MiB of `[`
// allocated 500 MB and nested blockquotes took minutes).
const hostileSize = 1 << 20

// TestParseHostileWithinBudget parses each pathological note and checks
// that it allocates no more than the parse budget allows.
func TestParseHostileWithinBudget(t *testing.T) {
	for _, h := range vaulttest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			src := h.Make(hostileSize)
			var n *Note
			got := allocated(func() { n = Parse("Daily/2026-11-22.md", src, testOptions) })
			if limit := uint64(maxParseBytes + 4*len(src)); got > limit && !raceEnabled {
				t.Errorf("parsing %d bytes allocated %d MB, want at most %d MB (plain: %q)", len(src), got>>20, limit>>20, n.Plain)
			}
			checkOffsets(t, src, n)
		})
	}
}

// TestPlainNote checks what a note over the budget keeps: its frontmatter,
// title and kind, and says why its body is plain text.
func TestPlainNote(t *testing.T) {
	src := "---\ntitle: Deep\ntags: [a]\n---\n" + strings.Repeat(">", 100) + " [[x]] #t\n"
	n := Parse("Deep.md", []byte(src), testOptions)
	if n.Plain == "" || !strings.Contains(n.Plain, "nested") {
		t.Fatalf("Plain = %q, want why the body was not parsed", n.Plain)
	}
	if n.Title != "Deep" || len(n.Tags) != 1 || n.Tags[0] != "a" || len(n.Links) != 0 || n.BodyLine != 5 {
		t.Errorf("plain note: title %q tags %v links %v body line %d", n.Title, n.Tags, n.Links, n.BodyLine)
	}
	checkOffsets(t, []byte(src), n)
}

// TestHeaderOverBudget: a header nested deeper than the budget allows is
// not decoded, says why, and the body is still parsed.
func TestHeaderOverBudget(t *testing.T) {
	src := "---\nk: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n---\n# Body\n"
	n := Parse("Deep.md", []byte(src), testOptions)
	if n.Frontmatter != nil || !strings.Contains(n.FrontmatterError, "nested") {
		t.Errorf("frontmatter %v, error %q: want it not read because it nests too deep", n.Frontmatter, n.FrontmatterError)
	}
	if len(n.Headings) != 1 || n.Plain != "" {
		t.Errorf("headings %v plain %q: want the body parsed", n.Headings, n.Plain)
	}
}

// TestBudgetKeepsRealNotes checks that the budget leaves ordinary notes to
// goldmark, long ones included.
func TestBudgetKeepsRealNotes(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.md")
	var long strings.Builder
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := Parse(name, src, testOptions); n.Plain != "" {
			t.Errorf("%s kept as plain text: %s", name, n.Plain)
		}
		long.Write(src)
		long.WriteString("\n\n")
	}
	// A long note of the same shapes, about 512 KB.
	one := long.String()
	big := strings.Repeat(one, (512<<10)/len(one)+1)
	if n := Parse("Long.md", []byte(big), testOptions); n.Plain != "" {
		t.Errorf("a %d-byte note of ordinary markdown kept as plain text: %s", len(big), n.Plain)
	}
}

func TestAddTagManyTags(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("#t")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(" #T")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('A' + i%26)))
		b.WriteString("\n")
	}
	n := Parse("Tags.md", []byte(b.String()), testOptions)
	if len(n.Tags) != 7*26 {
		t.Errorf("%d tags, want %d: case variants meet", len(n.Tags), 7*26)
	}
	if n.Tags[0] != "ta" {
		t.Errorf("first tag %q, want the first spelling ta", n.Tags[0])
	}
}

// estimate is the allocation Parse budgets for src: its header's and its
// body's.
func estimate(src []byte) int {
	if h, ok, _ := FindHeader(string(src)); ok {
		header, _ := headerBudget(src[h.Start:h.End])
		rest, _ := budget(src[h.Body:])
		return header + rest
	}
	cost, _ := budget(src)
	return cost
}

// FuzzParseBudget: the input is the attack. Parsing it must allocate no
// more than the budget estimated (which is what keeps a vault's memory
// bounded), and the offsets must hold whether or not the body was parsed.
func FuzzParseBudget(f *testing.F) {
	for _, h := range vaulttest.Hostile {
		f.Add(string(h.Make(2048)))
	}
	f.Add("> - [ ] a [[b]] *c* _d_ `e` <f> ![g](h)\n\n# i\n")
	f.Add(strings.Repeat("a\r", 32<<10)) // lines to margin, not to goldmark
	f.Fuzz(func(t *testing.T, src string) {
		body := []byte(src)
		cost := estimate(body)
		// Once first, so that what goldmark sets up on first use is not
		// counted; then the least of three parses, as a collection can empty
		// the scratch pool between two and make one parse build it anew.
		Parse("Daily/2026-11-22.md", body, testOptions)
		var n *Note
		got := uint64(math.MaxUint64)
		for range 3 {
			got = min(got, allocated(func() { n = Parse("Daily/2026-11-22.md", body, testOptions) }))
		}
		// The estimate is of goldmark's and the note's own allocation; the
		// copy of src and a few fixed allocations come on top.
		if raceEnabled {
			got = 0
		}
		if n.Plain == "" && got > uint64(cost+2*len(src)+64<<10) {
			t.Errorf("parsing %d bytes allocated %d, estimated %d", len(src), got, cost)
		}
		if n.Plain != "" && got > uint64(10*len(src)+64<<10) {
			t.Errorf("keeping %d bytes as plain text allocated %d", len(src), got)
		}
		checkOffsets(t, body, n)
	})
}
