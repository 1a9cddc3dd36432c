package query_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
)

var logAt = time.Date(2026, 11, 23, 18, 30, 0, 0, time.Local)

const logNote = "Daily/2026-11-23.md" // no such note in the sample vault

func readNote(t *testing.T, dir, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A log call cancelled while a model thinks about it keeps the user's
// words in the daily note: they are appended before any model is asked
// (for query/ask, as soon as the Router says the input logs something).
func TestCancelledLogKeepsTheLine(t *testing.T) {
	for _, tc := range []struct {
		stage string
		ask   bool
	}{{"router", false}, {"parser", false}, {"parser", true}} {
		stage := tc.stage
		t.Run(map[bool]string{false: "log ", true: "ask "}[tc.ask]+stage, func(t *testing.T) {
			v := querytest.SampleVault(t)
			fake, m, client := fakeModel(t, querytest.Replies{
				"router": {querytest.Route("log", "Strength training")},
			})
			reached := make(chan struct{}, 1)
			fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
				if querytest.RoleOf(r) == stage {
					reached <- struct{}{}
					return llmtest.Reply{Delay: time.Minute} // a slow model
				}
				return m.Reply(r)
			})
			e := engine(t, v, client, logAt)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				var err error
				if tc.ask {
					_, err = e.Ask(ctx, "Squat 5x5 @ 100", nil)
				} else {
					_, err = e.Log(ctx, "Squat 5x5 @ 100", logAt, nil)
				}
				done <- err
			}()
			<-reached
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want cancelled", err)
			}
			if got := readNote(t, v.Dir(), logNote); !strings.HasSuffix(got, "## 18:30\nSleep: \n\nSquat 5x5 @ 100\n") {
				t.Errorf("the logged line is not in the daily note:\n%s", got)
			}
		})
	}
}

// A log the Router takes for a correction is appended first as an entry,
// then marked a correction; its parsed data is keyed by that heading.
func TestLogMarkedCorrectionAfterAppend(t *testing.T) {
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.RouteCorrection("the squat weight", "Strength training")},
		"parser": {querytest.ParseCorrection("[[Daily/2026-11-23#18:30]]", "Strength training", map[string]any{})},
	})
	e := engine(t, v, client, querytest.Now)
	if err := os.WriteFile(filepath.Join(v.Dir(), logNote), []byte("## 18:30\nSquat 5x5 @ 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := e.Log(context.Background(), "Actually the squat was 105", logAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Logged == nil || r.Logged.Heading != "18:30 [correction]" {
		t.Fatalf("logged %+v", r.Logged)
	}
	want := "## 18:30\nSquat 5x5 @ 100\n\n## 18:30 [correction]\nActually the squat was 105\n"
	if got := readNote(t, v.Dir(), logNote); got != want {
		t.Errorf("daily note:\n%s\nwant:\n%s", got, want)
	}
}

// A NUL in the text never reaches the daily note, where it would make the
// whole note read as binary and drop out of the index.
func TestLogStripsNUL(t *testing.T) {
	v := querytest.SampleVault(t)
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Log(context.Background(), "Squat\x00 5x5", logAt, nil); err != nil {
		t.Fatal(err)
	}
	if got := readNote(t, v.Dir(), logNote); strings.ContainsRune(got, 0) || !strings.Contains(got, "\nSquat 5x5\n") {
		t.Errorf("daily note %q", got)
	}
	if _, err := e.Log(context.Background(), "\x00\x00", logAt, nil); !errors.Is(err, query.ErrEmptyInput) {
		t.Errorf("only NULs: err = %v, want empty input", err)
	}
}

func setDailyTemplate(t *testing.T, dir, template string) {
	t.Helper()
	cfg := `{"folder": "Daily", "format": "YYYY-MM-DD", "template": "` + template + `"}`
	if err := os.WriteFile(filepath.Join(dir, ".obsidian", "daily-notes.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A vault whose daily format gained the weekday after its first notes
// were named keeps a day's entries in that day's note: a log backdated to
// a day whose note has its older name goes into that note, not into a
// second one named by the format; a day without a note gets one named by
// the format.
func TestLogBackdatedToADailyNoteOfAnOlderFormat(t *testing.T) {
	v0 := querytest.SampleVault(t)
	dir := v0.Dir()
	v0.Close()
	cfg := `{"folder": "Daily", "format": "YYYY-MM-DD dddd", "template": "Templates/Daily"}`
	if err := os.WriteFile(filepath.Join(dir, ".obsidian", "daily-notes.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	v := querytest.IndexedVault(t, dir)
	if len(v.DailyFormat().Older) == 0 {
		t.Fatal("the sample's daily notes are not read as named in an older format")
	}
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training"), querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false), querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	const older = "Daily/2026-11-20.md"
	before := readNote(t, dir, older)
	r, err := e.Log(context.Background(), "Squat 5x5", time.Date(2026, 11, 20, 18, 30, 0, 0, time.Local), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Logged == nil || r.Logged.Path != older {
		t.Errorf("logged %+v, want it in %s", r.Logged, older)
	}
	if got := readNote(t, dir, older); !strings.HasPrefix(got, before) || !strings.HasSuffix(got, "\n## 18:30\nSquat 5x5\n") {
		t.Errorf("%s:\n%s\nwant the entry appended", older, got)
	}
	if _, err := os.Stat(filepath.Join(dir, "Daily", "2026-11-20 Friday.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a second note of the day by the format: %v", err)
	}

	r, err = e.Log(context.Background(), "Bench 3x5", logAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Logged == nil || r.Logged.Path != "Daily/2026-11-23 Monday.md" {
		t.Errorf("logged %+v, want a new note named by the format", r.Logged)
	}
}

// A daily template margin cannot read does not stop the log: the note is
// made without it, and the result says so.
func TestLogWithATemplateOutsideTheVault(t *testing.T) {
	v := querytest.SampleVault(t)
	outside := filepath.Join(t.TempDir(), "Daily template.md")
	if err := os.WriteFile(outside, []byte("# secret {{date}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(v.Dir(), strings.TrimSuffix(outside, ".md"))
	if err != nil {
		t.Fatal(err)
	}
	setDailyTemplate(t, v.Dir(), filepath.ToSlash(rel))
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	r, err := e.Log(context.Background(), "Squat 5x5", logAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readNote(t, v.Dir(), logNote); got != "## 18:30\nSquat 5x5\n" {
		t.Errorf("daily note %q, want the entry without the template", got)
	}
	if r.Logged == nil || !strings.Contains(r.Logged.Note, "without its template") {
		t.Errorf("logged %+v, want a note that the template was not used", r.Logged)
	}
}

// A Templater template gives a new daily note its text and the values
// margin can know, not its code; a line margin cannot fill is left out,
// so no property is empty and no link points nowhere.
func TestTemplaterCodeIsNotCopied(t *testing.T) {
	v := querytest.SampleVault(t)
	tpl := "---\ncreated: <% tp.date.now(\"YYYY-MM-DD\") %>\nmood: <% tp.system.prompt(\"Mood?\") %>\n---\n<%* const mood = await tp.system.prompt(\"Mood?\") %>\n" +
		"[[<% tp.date.now(\"YYYY-MM-DD\", -1, tp.file.title, \"YYYY-MM-DD\") %>|↶ Previous Day]]\n[[<% tp.user.next() %>|Next Day ↷]]\n" +
		"# <% tp.file.title %> {{date}}\n<%*\n  tR += \"multi-line\"\n-%>\nPlan:\n"
	if err := os.WriteFile(filepath.Join(v.Dir(), "Templates", "Templater daily.md"), []byte(tpl), 0o644); err != nil {
		t.Fatal(err)
	}
	setDailyTemplate(t, v.Dir(), "Templates/Templater daily")
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Log(context.Background(), "Squat 5x5", logAt, nil); err != nil {
		t.Fatal(err)
	}
	want := "---\ncreated: 2026-11-23\n---\n[[2026-11-22|↶ Previous Day]]\n# 2026-11-23 2026-11-23\nPlan:\n\n## 18:30\nSquat 5x5\n"
	if got := readNote(t, v.Dir(), logNote); got != want {
		t.Errorf("daily note:\n%q\nwant\n%q", got, want)
	}
}

// Without daily-note settings in the vault, margin's config places the
// daily note, and the log says where, so a new folder is no surprise;
// with them, nothing needs saying.
func TestLogSaysWhereItWritesWithoutDailySettings(t *testing.T) {
	v0 := querytest.SampleVault(t)
	dir := v0.Dir()
	v0.Close()
	if err := os.Remove(filepath.Join(dir, ".obsidian", "daily-notes.json")); err != nil {
		t.Fatal(err)
	}
	v := querytest.IndexedVault(t, dir)
	_, _, client := fakeModel(t, querytest.Replies{
		"router": {querytest.Route("log", "Strength training")},
		"parser": {querytest.Parse("Strength training", map[string]any{}, false)},
	})
	e := engine(t, v, client, querytest.Now)
	r, err := e.Log(context.Background(), "Squat 5x5", logAt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Logged == nil || r.Logged.Path != logNote || !strings.Contains(r.Logged.Note, "a new daily note in Daily/") || !strings.Contains(r.Logged.Note, "no .obsidian/daily-notes.json") {
		t.Errorf("logged %+v, want a note saying where the daily note went and why", r.Logged)
	}
	if !strings.Contains(r.Answer, "Logged to "+logNote+" as ## 18:30. A new daily note in Daily/") {
		t.Errorf("answer %q does not say where the daily note went", r.Answer)
	}
	// The note exists now: the next log adds to it and says nothing.
	r, err = e.Log(context.Background(), "Bench 3x5", logAt.Add(time.Minute), nil)
	if err != nil || r.Logged == nil || r.Logged.Note != "" {
		t.Errorf("second log: %+v, %v; want no note", r.Logged, err)
	}
}
