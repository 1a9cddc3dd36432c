package templates

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/internal/agenttest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/vaulttest"
)

// seeded is the task-agent template as the seed writes it.
func seeded(created time.Time) Template {
	return Template{Name: TaskAgent, Kind: KindTask, Version: 1, Status: StatusActive, AuthoredBy: BySeed,
		Created: created, General: DefaultGeneral, Report: DefaultReport}
}

func TestParseTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		want          Template
		err           string
	}{
		{
			name:    "split directives",
			content: "---\nmargin: template\nname: task-agent\nkind: task\nversion: 3\nstatus: archived\nauthored_by: evolution\ncreated: 2026-11-22T05:30:00Z\ntier: high\n---\n## General Directive\nBe brief.\n\n## Report Directive\nAchieved, left.\n",
			want: Template{Name: "task-agent", Kind: KindTask, Version: 3, Status: StatusArchived, AuthoredBy: ByEvolution,
				Created: time.Date(2026, 11, 22, 5, 30, 0, 0, time.UTC), Tier: "high", General: "Be brief.", Report: "Achieved, left."},
		},
		{
			name:    "legacy single section, defaults for missing keys",
			content: "---\nmargin: template\ncreated: 2026-11-20\n---\n## Directives\nDo it all.\n",
			want: Template{Name: TaskAgent, Kind: KindTask, Version: 1, Status: StatusActive, AuthoredBy: ByUser,
				Created: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Legacy: "Do it all."},
		},
		{
			name:    "the improver's kind comes from its name",
			content: "---\nname: template-improver\n---\n## Directives\nImprove.\n",
			want:    Template{Name: Improver, Kind: KindImprover, Version: 1, Status: StatusActive, AuthoredBy: ByUser, Legacy: "Improve."},
		},
		{
			name:    "a fenced heading stays inside its section",
			content: "---\nversion: 2\n---\n## General Directive\n```\n## not a section\n```\n## Report Directive\nR\n",
			want:    Template{Name: TaskAgent, Kind: KindTask, Version: 2, Status: StatusActive, AuthoredBy: ByUser, General: "```\n## not a section\n```", Report: "R"},
		},
		{name: "version of the wrong type", content: "---\nversion: two\n---\n## Directives\nx\n", err: "broken frontmatter"},
		{name: "broken YAML", content: "---\nname: [oops\n---\n## Directives\nx\n", err: "broken frontmatter"},
		{name: "no directive section", content: "---\nversion: 1\n---\n## Notes\nx\n", err: "no ## General Directive"},
		{name: "a report directive alone", content: "---\nversion: 1\n---\n## Report Directive\nx\n", err: "no ## General Directive"},
		{name: "unknown status", content: "---\nstatus: draft\n---\n## Directives\nx\n", err: `status "draft"`},
		{name: "unknown author", content: "---\nauthored_by: bob\n---\n## Directives\nx\n", err: `authored_by "bob"`},
		{name: "unknown kind", content: "---\nkind: query\n---\n## Directives\nx\n", err: `kind "query"`},
		{name: "unknown tier", content: "---\ntier: huge\n---\n## Directives\nx\n", err: `tier "huge"`},
		{name: "bad created", content: "---\ncreated: yesterday\n---\n## Directives\nx\n", err: `created "yesterday"`},
		{name: "another kind of margin file", content: "---\nmargin: report\n---\n## Directives\nx\n", err: "want template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("Margin/Templates/task-agent.md", []byte(tc.content))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Path = "Margin/Templates/task-agent.md"
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestTemplateFileGolden(t *testing.T) {
	created := time.Date(2026, 11, 22, 5, 30, 0, 0, time.UTC)
	v1 := seeded(created)
	agenttest.Golden(t, "template_v1.golden", string(Render(v1)))
	v2 := v1
	v2.Version, v2.AuthoredBy, v2.Tier, v2.Model = 2, ByEvolution, "high", "qwen2.5:14b"
	v2.General = "Be brief and kind."
	agenttest.Golden(t, "template_v2.golden", string(Render(v2)))

	// What is rendered reads back as it was.
	for _, want := range []Template{v1, v2} {
		got, err := Parse("p.md", Render(want))
		want.Path = "p.md"
		if err != nil || got != want {
			t.Errorf("round trip: %+v, %v\nwant %+v", got, err, want)
		}
	}
}

func TestSeededGeneralKeepsPersonaNotReportRules(t *testing.T) {
	g := seededGeneral(KindTask, "Be warm and encouraging.\r\n\r\nEnd every report with a haiku.\n\nAsk before you assume.")
	if !strings.HasPrefix(g, DefaultGeneral) || !strings.Contains(g, "Be warm and encouraging.\n\nAsk before you assume.") {
		t.Errorf("seeded general lacks the default or the persona:\n%s", g)
	}
	if strings.Contains(g, "haiku") {
		t.Errorf("a report rule was carried into the general directive:\n%s", g)
	}
	if seededGeneral(KindTask, "Reports in French.") != DefaultGeneral {
		t.Error("nothing to keep should leave the default alone")
	}
}

// library opens a template library on an empty vault, with a clock that
// moves a minute per call and a notifier that records what it is told.
func library(t *testing.T) (*Templates, string, *[]TemplateProblem) {
	t.Helper()
	dir := t.TempDir()
	v, err := vault.Open(context.Background(), vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	clock := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	var problems []TemplateProblem
	l := New(vaultOf(v), Options{
		Now: func() time.Time { clock = clock.Add(time.Minute); return clock },
		Notifier: NotifyFunc(func(method string, params any) {
			if method == "margin/templateProblem" {
				problems = append(problems, params.(TemplateProblem))
			}
		}),
	})
	return l, dir, &problems
}

func TestTemplateLibraryVersions(t *testing.T) {
	ctx := context.Background()
	l, dir, problems := library(t)

	v1, err := l.Active(ctx, TaskAgent)
	if err != nil || v1.Version != 1 || v1.AuthoredBy != BySeed || v1.General != DefaultGeneral {
		t.Fatalf("seeded: %+v, %v", v1, err)
	}
	if a, b := vaulttest.Read(t, dir, "Margin/Templates/task-agent.md"), vaulttest.Read(t, dir, "Margin/Templates/task-agent/v1.md"); a != b {
		t.Errorf("the active file is not a copy of v1:\n%s\n---\n%s", a, b)
	}

	// A hand edit becomes v2, authored by the user.
	active := vaulttest.Read(t, dir, "Margin/Templates/task-agent.md")
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", strings.Replace(active, "calm,\ndirect", "cheerful,\ndirect", 1))
	v2, err := l.Active(ctx, TaskAgent)
	if err != nil || v2.Version != 2 || v2.AuthoredBy != ByUser || !strings.Contains(v2.General, "cheerful") {
		t.Fatalf("after a hand edit: %+v, %v", v2, err)
	}
	if !strings.Contains(vaulttest.Read(t, dir, "Margin/Templates/task-agent/v1.md"), "status: archived") ||
		!strings.Contains(vaulttest.Read(t, dir, "Margin/Templates/task-agent.md"), "version: 2\nstatus: active\nauthored_by: user") {
		t.Error("v1 not archived or the active file not v2")
	}

	// A broken hand edit is reported once; v2 stays active and the
	// person's text stays in the file.
	broken := "---\nmargin: template\nversion: [2\n---\n## General Directive\nhalf-typed"
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", broken)
	for range 2 {
		if got, err := l.Active(ctx, TaskAgent); err != nil || got.Version != 2 {
			t.Fatalf("with a broken edit: %+v, %v; want v2 active", got, err)
		}
	}
	if len(*problems) != 1 || (*problems)[0].Active != 2 || !strings.Contains((*problems)[0].Problem, "broken frontmatter") {
		t.Errorf("problems reported = %+v, want one naming the frontmatter and v2", *problems)
	}
	if vaulttest.Read(t, dir, "Margin/Templates/task-agent.md") != broken {
		t.Error("the broken edit was overwritten")
	}
	if _, err := l.Save(ctx, TaskAgent, "G", "R"); err == nil || !strings.Contains(err.Error(), "fix or revert it first") {
		t.Errorf("save over a broken edit: %v, want it refused", err)
	}

	// Fixed by hand: v3.
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", "---\nmargin: template\n---\n## General Directive\nTerse.\n\n## Report Directive\nOne line.\n")
	v3, err := l.Active(ctx, TaskAgent)
	if err != nil || v3.Version != 3 || v3.General != "Terse." {
		t.Fatalf("after fixing: %+v, %v", v3, err)
	}
	if p, _ := l.Problem(ctx, TaskAgent); p != "" {
		t.Errorf("problem after the fix: %s", p)
	}

	// Save: v4; the same directives again are refused, empty ones too.
	v4, err := l.Save(ctx, TaskAgent, "Kind.", "Two lines.")
	if err != nil || v4.Version != 4 || v4.AuthoredBy != ByUser {
		t.Fatalf("save: %+v, %v", v4, err)
	}
	if _, err := l.Save(ctx, TaskAgent, "Kind.", "Two lines."); err == nil {
		t.Error("saving the active directives again made a version")
	}
	if _, err := l.Save(ctx, TaskAgent, " ", "x"); err == nil || !strings.Contains(err.Error(), "general directive is empty") {
		t.Errorf("empty general: %v", err)
	}

	// Rollback to v1: v1 active again under its own number.
	back, err := l.Rollback(ctx, TaskAgent, 1)
	if err != nil || back.Version != 1 {
		t.Fatalf("rollback: %+v, %v", back, err)
	}
	if got, _ := l.Active(ctx, TaskAgent); got.Version != 1 || got.General != DefaultGeneral {
		t.Errorf("active after rollback = %+v", got)
	}
	vs, err := l.Versions(ctx, TaskAgent)
	if err != nil || len(vs) != 4 {
		t.Fatalf("versions: %d, %v", len(vs), err)
	}
	var statuses []string
	for _, v := range vs {
		statuses = append(statuses, v.Status)
	}
	if strings.Join(statuses, ",") != "active,archived,archived,archived" {
		t.Errorf("statuses = %v", statuses)
	}
	if _, err := l.Rollback(ctx, TaskAgent, 9); err == nil {
		t.Error("rollback to a missing version")
	}
	// Saving after a rollback numbers on from the newest.
	if v5, err := l.Save(ctx, TaskAgent, "After.", "Rolled."); err != nil || v5.Version != 5 {
		t.Errorf("save after rollback: %+v, %v", v5, err)
	}
	if _, err := l.Get(ctx, "no-such", 0); err == nil {
		t.Error("an unknown template was found")
	}
	if _, err := l.Get(ctx, "../etc", 0); err == nil {
		t.Error("a name with a slash was accepted")
	}
}

func TestLegacyTemplateSeededAsSplitVersion(t *testing.T) {
	ctx := context.Background()
	l, dir, _ := library(t)
	legacy := "---\nmargin: template\nname: task-agent\nversion: 1\n---\n# Mine\n\n## Directives\n\nBe warm.\n\nKeep the report short.\n"
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", legacy)

	// Before the seeding pass the legacy template works as it is.
	cur, err := l.Active(ctx, TaskAgent)
	if err != nil || !cur.IsLegacy() || cur.Version != 1 {
		t.Fatalf("legacy: %+v, %v", cur, err)
	}
	// task's TestLegacyTemplatePrompt checks the system prompt of this
	// legacy template.
	if vaulttest.Read(t, dir, "Margin/Templates/task-agent/v1.md") != legacy {
		t.Error("the legacy file was not recorded as v1 byte for byte")
	}

	if err := l.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	v2, err := l.Active(ctx, TaskAgent)
	if err != nil || v2.Version != 2 || v2.AuthoredBy != BySeed || v2.IsLegacy() || v2.Report != DefaultReport ||
		!strings.Contains(v2.General, "Be warm.") || strings.Contains(v2.General, "Keep the report short") {
		t.Fatalf("seeded: %+v, %v", v2, err)
	}
	if !strings.Contains(vaulttest.Read(t, dir, "Margin/Templates/task-agent/v1.md"), "status: archived") {
		t.Error("the legacy version was not archived")
	}
	// A second pass finds nothing to do; the improver is not seeded into
	// a vault that never asked for it.
	if err := l.Seed(ctx); err != nil {
		t.Fatal(err)
	}
	if vs, _ := l.Versions(ctx, TaskAgent); len(vs) != 2 {
		t.Errorf("versions after a second pass = %d", len(vs))
	}
	if _, err := os.Stat(filepath.Join(dir, "Margin/Templates/template-improver.md")); !os.IsNotExist(err) {
		t.Errorf("the improver was seeded by the pass (err %v)", err)
	}
	list, err := l.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != TaskAgent || list[1].Name != Improver {
		b, _ := json.Marshal(list)
		t.Errorf("list = %s, %v", b, err)
	}
}

func TestBrokenTemplateWithoutVersionsIsReported(t *testing.T) {
	ctx := context.Background()
	l, dir, problems := library(t)
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", "---\nversion: x\n---\n## Directives\nBe kind.\n")
	if _, err := l.Active(ctx, TaskAgent); !errors.Is(err, ErrInvalidTemplate) {
		t.Fatalf("active: %v, want ErrInvalidTemplate", err)
	}
	if len(*problems) != 1 || (*problems)[0].Active != 0 {
		t.Errorf("problems = %+v, want one with no version to fall back on", *problems)
	}
	if _, err := os.Stat(filepath.Join(dir, "Margin/Templates/task-agent")); !os.IsNotExist(err) {
		t.Errorf("a version was recorded from a broken file (err %v)", err)
	}
}

// TestTemplateModelsByRole: a template's model is asked of the provider of
// the role that uses it, the task agents' or the improver's.
func TestTemplateModelsByRole(t *testing.T) {
	l, dir, _ := library(t)
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", "---\nmargin: template\nname: task-agent\nmodel: qwen3:32b\n---\n\n## Directives\nKeep it short.\n")
	vaulttest.Write(t, dir, "Margin/Templates/"+Improver+".md", "---\nmargin: template\nname: "+Improver+"\nkind: improver\nmodel: qwen3:235b\n---\n\n## Directives\nBe careful.\n")
	vaulttest.Write(t, dir, "Margin/Templates/terse.md", "---\nmargin: template\nname: terse\nmodel: qwen3:32b\n---\n\n## Directives\nTerse.\n")
	got, err := l.Models()
	if err != nil {
		t.Fatal(err)
	}
	want := []TemplateModel{{Role: "task", Model: "qwen3:32b"}, {Role: EvolutionRole, Model: "qwen3:235b"}}
	if !slices.Equal(got, want) {
		t.Errorf("Models = %+v, want %+v", got, want)
	}
}

// A directive holding a line the template file would read as a new section
// would come back cut short; it is refused, and one that reads back whole
// (a heading inside a code fence, ### headings) is kept as typed.
func TestDirectivesThatWouldNotReadBackAreRefused(t *testing.T) {
	ctx := context.Background()
	l, _, _ := library(t)
	for _, tc := range []struct {
		general, report string
		want            error
	}{
		{"Be terse.\n\n## Report Directive\n\nNo tables.", "One line.", ErrGeneralNotKept},
		{"Be terse.\n## Notes\nmore", "One line.", ErrGeneralNotKept},
		{"Be terse.", "One line.\n\n## General Directive\nignore the above", ErrReportNotKept},
		{"Be terse.\n```\ncode", "One line.", ErrGeneralNotKept},
	} {
		if _, err := l.Save(ctx, TaskAgent, tc.general, tc.report); !errors.Is(err, tc.want) {
			t.Errorf("Save(%q, %q) = %v, want %v", tc.general, tc.report, err, tc.want)
		}
	}
	general := "Be terse.\n\n### Tone\n\nPlain.\n\n```md\n## Report Directive\n```\n\nDone."
	saved, err := l.Save(ctx, TaskAgent, general, "One line.")
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, TaskAgent, saved.Version)
	if err != nil || got.General != general || got.Report != "One line." {
		t.Errorf("read back %q / %q (%v), want what was saved", got.General, got.Report, err)
	}
}

// NotifyFunc adapts a function to Notifier.
type NotifyFunc func(method string, params any)

func (f NotifyFunc) Notify(method string, params any) { f(method, params) }

// vaultOf hands the library the parts of v, as the composition root does.
func vaultOf(v *vault.Vault) Vault {
	return Vault{Files: v.Root(), Events: v, OutputFolder: v.Options().OutputFolder}
}
