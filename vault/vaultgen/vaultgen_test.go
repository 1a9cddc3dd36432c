package vaultgen

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// readVault returns every file under dir by slash-separated relative path.
func readVault(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func generate(t *testing.T, opts Options) (string, Stats) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	st, err := Generate(dir, opts)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", opts, err)
	}
	return dir, st
}

// frontmatter returns the YAML between the opening and closing --- lines, and
// whether the note has any.
func frontmatter(data []byte) (string, bool) {
	s := string(data)
	if !strings.HasPrefix(s, "---\n") {
		return "", false
	}
	end := strings.Index(s[4:], "\n---\n")
	if end < 0 {
		return "", false
	}
	return s[4 : 4+end+1], true
}

var (
	entryHeading = regexp.MustCompile(`(?m)^## \d\d:\d\d( \[correction\])?$`)
	wikiTarget   = regexp.MustCompile(`\[\[([^\]|#]+)`)
)

func TestGenerateProportionsAndShape(t *testing.T) {
	dir, st := generate(t, Options{Notes: 200, Seed: 1})
	files := readVault(t, dir)

	if st.Notes != 200 || st.Daily != 120 || st.Tasks != 20 || st.Other != 60 {
		t.Errorf("stats: notes %d = daily %d + tasks %d + other %d, want 200 = 120 + 20 + 60",
			st.Notes, st.Daily, st.Tasks, st.Other)
	}
	if len(st.Broken) != 1 || st.NonNotes < 1 {
		t.Errorf("stats: %d broken notes, %d non-notes, want 1 and at least 1", len(st.Broken), st.NonNotes)
	}
	if st.LastDay != DefaultEnd.Format(dateLayout) {
		t.Errorf("last day %s, want %s", st.LastDay, DefaultEnd.Format(dateLayout))
	}

	var daily, tasks, other, nonNotes, entries int
	var total int64
	taskStems := map[string]bool{}
	linkedTasks := map[string]bool{}
	for p, data := range files {
		total += int64(len(data))
		switch {
		case p == ".obsidian/daily-notes.json":
			continue
		case !strings.HasSuffix(p, ".md"):
			nonNotes++
			continue
		}
		if n := len(data); n < 300 || n > 4600 {
			t.Errorf("%s: %d bytes, want a note of about 0.5 to 4 KB", p, n)
		}
		fm, hasFM := frontmatter(data)
		var v map[string]any
		yamlErr := yaml.Unmarshal([]byte(fm), &v)
		if broken := slices.Contains(st.Broken, p); broken != (yamlErr != nil) {
			t.Errorf("%s: listed as broken %v, but YAML error is %v\n%s", p, broken, yamlErr, fm)
		}
		switch {
		case strings.HasPrefix(p, "Daily/"):
			daily++
			n := len(entryHeading.FindAll(data, -1))
			entries += n
			if n < 2 || n > 7 {
				t.Errorf("%s: %d entries, want 2 to 6 (and perhaps a correction)", p, n)
			}
			for _, m := range wikiTarget.FindAllSubmatch(data, -1) {
				linkedTasks[string(m[1])] = true
			}
		case strings.HasPrefix(p, "Tasks/"):
			tasks++
			taskStems[strings.TrimSuffix(filepath.Base(p), ".md")] = true
			if !bytes.Contains(data, []byte("\n## Checklist\n- [")) {
				t.Errorf("%s: no checklist section", p)
			}
			if !hasFM {
				t.Errorf("%s: task without frontmatter", p)
			}
		default:
			other++
		}
	}
	if daily != st.Daily || tasks != st.Tasks || other != st.Other || nonNotes != st.NonNotes {
		t.Errorf("on disk: %d daily, %d tasks, %d other, %d non-notes; stats say %d, %d, %d, %d",
			daily, tasks, other, nonNotes, st.Daily, st.Tasks, st.Other, st.NonNotes)
	}
	if entries != st.Entries || total != st.Bytes {
		t.Errorf("on disk: %d entries, %d bytes; stats say %d, %d", entries, total, st.Entries, st.Bytes)
	}

	// Tasks are linked from the daily log, by name or by path.
	linked := 0
	for stem := range taskStems {
		for target := range linkedTasks {
			if target == stem || strings.HasSuffix(target, "/"+stem) {
				linked++
				break
			}
		}
	}
	if linked < len(taskStems)*7/10 {
		t.Errorf("%d of %d tasks are linked from a daily note, want at least 70%%", linked, len(taskStems))
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	dirA, stA := generate(t, Options{Notes: 200, Seed: 7})
	dirB, stB := generate(t, Options{Notes: 200, Seed: 7})
	a, b := readVault(t, dirA), readVault(t, dirB)
	if len(a) != len(b) {
		t.Fatalf("same seed: %d files vs %d", len(a), len(b))
	}
	for p, data := range a {
		if !bytes.Equal(data, b[p]) {
			t.Errorf("same seed: %s differs", p)
		}
	}
	if stA.Bytes != stB.Bytes || stA.Links != stB.Links || stA.Entries != stB.Entries {
		t.Errorf("same seed, different stats: %+v vs %+v", stA, stB)
	}

	dirC, _ := generate(t, Options{Notes: 200, Seed: 8})
	c := readVault(t, dirC)
	same := 0
	for p, data := range a {
		if bytes.Equal(data, c[p]) {
			same++
		}
	}
	if same > 1 { // .obsidian/daily-notes.json is always the same
		t.Errorf("seeds 7 and 8 share %d identical files", same)
	}
}

func TestGenerateSizes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 49, 1000} {
		t.Run("n="+strconv.Itoa(n), func(t *testing.T) {
			dir, st := generate(t, Options{Notes: n, Seed: 1})
			if st.Notes != n || st.Daily+st.Tasks+st.Other != n {
				t.Errorf("stats: %d notes (%d daily, %d tasks, %d other), want %d", st.Notes, st.Daily, st.Tasks, st.Other, n)
			}
			md := 0
			for p := range readVault(t, dir) {
				if strings.HasSuffix(p, ".md") {
					md++
				}
			}
			if md != n {
				t.Errorf("%d markdown files on disk, want %d", md, n)
			}
		})
	}
}

func TestGenerateCorrectionsAndWorkouts(t *testing.T) {
	dir, st := generate(t, Options{Notes: 2000, Seed: 3})
	if st.Corrections == 0 {
		t.Fatal("no correction entries in 1,200 daily notes")
	}
	files := readVault(t, dir)
	var workouts, heavy int
	for p, data := range files {
		if !strings.HasPrefix(p, "Daily/") {
			continue
		}
		s := string(data)
		if strings.Contains(s, "#training") {
			workouts++
		}
		if strings.Contains(s, "heavy") && strings.Contains(s, "probably the sleep") {
			heavy++
		}
	}
	if workouts < st.Daily/4 || heavy == 0 {
		t.Errorf("%d workouts and %d heavy-after-bad-sleep days in %d daily notes", workouts, heavy, st.Daily)
	}
}

func TestGenerateStart(t *testing.T) {
	start := time.Date(2021, time.March, 1, 15, 4, 0, 0, time.FixedZone("x", 3600))
	dir, st := generate(t, Options{Notes: 50, Seed: 2, Start: start})
	if st.FirstDay != "2021-03-01" {
		t.Errorf("first day %s, want 2021-03-01", st.FirstDay)
	}
	if _, err := os.Stat(filepath.Join(dir, "Daily", "2021-03-01.md")); err != nil {
		t.Error(err)
	}
}

func TestGenerateRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		opts  Options
		want  string
	}{
		{"zero notes", func(t *testing.T) string { return t.TempDir() }, Options{Notes: 0}, "must be positive"},
		{"negative notes", func(t *testing.T) string { return t.TempDir() }, Options{Notes: -5}, "must be positive"},
		{"non-empty dir", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "mine.md"), []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
			return dir
		}, Options{Notes: 10}, "not empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(tt.setup(t), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate: error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestYAMLString(t *testing.T) {
	for _, s := range []string{"plain", "Dana W.", "1-1 with Dana", "yes", "key: value", "a #b", "[x]", "", "Tomás", "\"q\"", "50"} {
		t.Run(s, func(t *testing.T) {
			var v map[string]string
			if err := yaml.Unmarshal([]byte("k: "+yamlString(s)+"\n"), &v); err != nil || v["k"] != s {
				t.Errorf("yamlString(%q) = %s, reads back as %q (%v)", s, yamlString(s), v["k"], err)
			}
		})
	}
}

func TestMistype(t *testing.T) {
	for in, want := range map[string]string{"270": "207", "185": "158", "225": "252", "255": "25", "95": "59"} {
		if got := mistype(in); got != want {
			t.Errorf("mistype(%s) = %s, want %s", in, got, want)
		}
	}
}

func BenchmarkGenerate1k(b *testing.B) {
	for b.Loop() {
		dir := filepath.Join(b.TempDir(), "vault")
		if _, err := Generate(dir, Options{Notes: 1000, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBrokenFrontmatterFailsYAML(t *testing.T) {
	shapes := map[string]bool{}
	for stream := range uint64(64) {
		w := newWriter(1, stream)
		writeBrokenFrontmatter(w, otherPlan{title: "Gym playlist ideas"})
		fm, ok := frontmatter(w.bytes())
		if !ok {
			t.Fatalf("no frontmatter block in\n%s", w.bytes())
		}
		shapes[strings.Split(fm, "\n")[1]] = true
		var v map[string]any
		if err := yaml.Unmarshal([]byte(fm), &v); err == nil {
			t.Errorf("broken frontmatter parses as YAML:\n%s", fm)
		}
	}
	if len(shapes) < 4 {
		t.Errorf("%d kinds of broken frontmatter, want 4", len(shapes))
	}
}
