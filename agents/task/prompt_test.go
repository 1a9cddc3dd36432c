package task

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/internal/agenttest"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vaulttest"
)

func entriesOf(path string, kv ...string) []index.EntryMeta {
	var out []index.EntryMeta
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, index.EntryMeta{Path: path, Date: "2026-11-20", Time: kv[i], Heading: kv[i], Text: kv[i+1]})
	}
	return out
}

const sampleTask = "---\ntype: task\nstatus: in-progress\npriority: P1\n---\n# Ship export\n\nLong prose the agent read before.\n\n## Checklist\n- [x] Spec the columns\n- [ ] QA on staging\n"

func sampleWake() wakeContext {
	entries := entrySources(append(
		entriesOf("Daily/2026-11-19.md", "10:00", "Started QA on [[Ship export]]. Found a ``` fence in a CSV cell."),
		entriesOf("Daily/2026-11-20.md", "11:00", "Demo of [[Ship export]] went well.")...))
	return wakeContext{
		Now:     time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC),
		Reason:  "linked entry changed",
		Task:    taskSource("Tasks/Ship export.md", []byte(sampleTask)),
		Entries: entries,
		Budget:  8000,
	}
}

func TestUserMessageGolden(t *testing.T) {
	first := sampleWake()
	first.Reason = "created"
	msg, full, _ := userMessage(first)
	if !full {
		t.Error("the first wake is not full-context")
	}
	agenttest.Golden(t, "first_wake.golden", msg)

	next := sampleWake()
	next.Report, next.TLDR = "## Achieved\n- Columns specced\n", "Columns done; QA next."
	next.Journal = []string{"- 2026-11-19 10:05 — QA started late."}
	next.Seen = map[string]Source{}
	for _, s := range append([]Source{next.Task}, next.Entries...) {
		next.Seen[s.ID] = s
	}
	changed := entrySources(entriesOf("Daily/2026-11-20.md", "11:00", "Demo of [[Ship export]] went well. Dana wants a flag."))
	next.Entries[1] = changed[0]
	next.Seen["Daily/2026-11-18.md#17:00"] = entrySources(entriesOf("Daily/2026-11-18.md", "17:00", "Unlinked since."))[0]
	msg, full, _ = userMessage(next)
	if full {
		t.Error("a wake with seen sources is full-context")
	}
	agenttest.Golden(t, "incremental_wake.golden", msg)
	if strings.Contains(msg, "Long prose the agent read before") {
		t.Error("the incremental wake repeats the task's prose")
	}
}

func TestUserMessageBudgetDropsOldestEntriesFirst(t *testing.T) {
	w := sampleWake()
	w.Entries = entrySources(append(entriesOf("Daily/a.md", "08:00", strings.Repeat("old ", 400)), entriesOf("Daily/b.md", "09:00", "newest")...))
	w.Budget = 350
	msg, _, _ := userMessage(w)
	if strings.Contains(msg, "old old") || !strings.Contains(msg, "newest") || !strings.Contains(msg, "1 older linked entries left out") {
		t.Errorf("over budget, the oldest entry should go and say so:\n%s", msg)
	}
}

// Over budget, the related notes go before any linked entry: the task's
// own sources are its evidence, notes near it only hints.
func TestUserMessageBudgetDropsRelatedNotesFirst(t *testing.T) {
	w := sampleWake()
	w.Related = []relatedNote{{RelatedNote: changes.RelatedNote{Path: "Notes/CSV.md", Link: "CSV"}, Heading: "CSV > Quoting", Excerpt: "Quote cells with commas."}}
	msg, _, related := userMessage(w)
	if !related || !strings.Contains(msg, "[data: related note Notes/CSV.md, section CSV > Quoting]\n```\nQuote cells with commas.\n```") {
		t.Fatalf("within budget the related note is shown (%v):\n%s", related, msg)
	}
	w.Budget = estimateTokens(msg) - 1
	msg, _, related = userMessage(w)
	if related || strings.Contains(msg, "Notes/CSV.md") || !strings.Contains(msg, "Demo of [[Ship export]]") || !strings.Contains(msg, "Started QA") {
		t.Errorf("a token over budget, the related notes should go and every entry stay (%v):\n%s", related, msg)
	}
}

// An excerpt is the nearest section's text up to the next heading, on one
// line, cut at a word.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("seeds and plants ", 30)
	src := "---\ntitle: x\n---\nIntro line\nmore intro.\n# Seeds\n\nWhat to order.\n\n## Sowing\n\n" + long + "\n## Later\n\nnot this\n"
	for _, tc := range []struct {
		name    string
		line    int
		heading bool
		want    string
	}{
		{"the beginning, after the frontmatter", 4, false, "Intro line more intro."},
		{"a section, up to the next heading of any level", 6, true, "What to order."},
		{"a long section, cut at a word", 10, true, strings.TrimSpace(long)[:strings.LastIndexByte(strings.TrimSpace(long)[:excerptRunes], ' ')] + " …"},
		{"a heading line that is not there", 99, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := excerpt([]byte(src), tc.line, tc.heading); got != tc.want {
				t.Errorf("excerpt = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSystemPromptIsStableAndSplit(t *testing.T) {
	tmpl, err := templates.Parse("Margin/Templates/task-agent.md", templates.Render(seeded(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	sys := systemPrompt(tmpl)
	agenttest.Golden(t, "system_prompt.golden", sys)
	crlf, err := templates.Parse("x.md", []byte(strings.ReplaceAll(string(templates.Render(seeded(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))), "\n", "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if systemPrompt(crlf) != sys {
		t.Error("line endings or the created date change the system prompt")
	}
	legacy, err := templates.Parse("x.md", []byte("---\nmargin: template\nversion: 3\n---\n## Directives\n\nBe terse.\n"))
	if err != nil || legacy.Version != 3 || !strings.Contains(systemPrompt(legacy), "Be terse.") {
		t.Errorf("legacy template: %+v, %v", legacy, err)
	}
	if _, err := templates.Parse("x.md", []byte("---\nmargin: template\n---\nno sections\n")); err == nil {
		t.Error("a template without directives parsed")
	}
}

// seeded is the task-agent template as the seed writes it.
func seeded(created time.Time) templates.Template {
	return templates.Template{Name: templates.TaskAgent, Kind: templates.KindTask, Version: 1, Status: templates.StatusActive, AuthoredBy: templates.BySeed,
		Created: created, General: templates.DefaultGeneral, Report: templates.DefaultReport}
}

// A legacy template (one ## Directives section) works as it is until the
// seeding pass: its directives and the default report rules make the
// system prompt. (templates' TestLegacyTemplateSeededAsSplitVersion
// seeds the same file.)
func TestLegacyTemplatePrompt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	l := templates.New(templates.Vault{Files: v.Root(), Events: v, OutputFolder: v.Options().OutputFolder}, templates.Options{})
	legacy := "---\nmargin: template\nname: task-agent\nversion: 1\n---\n# Mine\n\n## Directives\n\nBe warm.\n\nKeep the report short.\n"
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", legacy)
	cur, err := l.Active(ctx, templates.TaskAgent)
	if err != nil || !cur.IsLegacy() || cur.Version != 1 {
		t.Fatalf("legacy: %+v, %v", cur, err)
	}
	if sys := systemPrompt(cur); !strings.Contains(sys, "## Your Personality & Directives\n\nBe warm.") || !strings.Contains(sys, "## Report Format\n\n"+templates.DefaultReport[:30]) {
		t.Errorf("legacy system prompt:\n%s", sys)
	}
}

// The outline an incremental wake reads has the task's open checklist
// items as note parses them: a checkbox in a code block is an example,
// not an item, and an item in a callout or a numbered list is one.
func TestTaskOutlineHasTheParsedChecklist(t *testing.T) {
	src := "---\ntype: task\n---\n# Ship\n\n" +
		"- [ ] QA on staging\n- [x] Spec the columns\n- [/] Write docs\n" +
		"1. [ ] Tell support\n> [!todo]\n> - [ ] Flag on\n" +
		"```md\n- [ ] not an item\n- [x] nor this\n```\n"
	want := "---\ntype: task\n---\n" +
		"- [ ] QA on staging\n- [/] Write docs\n1. [ ] Tell support\n> - [ ] Flag on\n" +
		"(1 done or cancelled checklist items not shown)\n"
	if got := taskOutline(src); got != want {
		t.Errorf("outline:\n%s\nwant:\n%s", got, want)
	}
}
