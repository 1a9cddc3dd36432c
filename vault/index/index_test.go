package index

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault/note"
)

// vault is a small vault covering the query forms.
var vault = []fixture{
	{path: "Daily/2026-11-20.md", kind: note.KindDaily, content: `Slept badly.

## 07:30
Standup with the release team about the Café launch. See [[Tasks/Ship v2]].

## 12:00
Lunch. Deploy went fine; latency is down.

### Details
Kubernetes cluster upgraded to 1.31.

## 12:00 [correction]
It was the staging deploy, not production.
`, tags: []string{"ops"}},
	{path: "Daily/2026-11-21.md", kind: note.KindDaily, content: `## 09:00
Worked on [[Ship v2#Plan]] with the team.

## 10:00
Shipping notes drafted, see [[shipping]].

## 11:00
Read the [[Report]] again.
`},
	{path: "Daily/2026-10-05.md", kind: note.KindDaily, content: `## 16:45
Invoice sent to client ACME. Résumé updated. C++ and node.js notes: 50% done (v2.1).
`},
	{path: "Daily/2026-10/2026-10-06.md", kind: note.KindDaily, content: `## 08:00
Nested daily folder, release prep.
`},
	{path: "Tasks/Ship v2.md", kind: note.KindTask, content: `Ship the second release.

## Plan
- [ ] Write release notes
- [x] Freeze branch
`, tags: []string{"task", "Project/Margin"}, aliases: []string{"shipping", "v2 launch"},
		task: &note.Task{Title: "Ship v2", Status: "in-progress", Priority: "P1", Due: "2026-11-25", Estimate: 120, Labels: []string{"project/margin"}},
		check: []note.ChecklistItem{
			{Line: 4, State: ' ', Text: "Write release notes", Due: "2026-11-24"},
			{Line: 5, State: 'x', Text: "Freeze branch", Done: "2026-11-19"},
		}},
	{path: "Tasks/Fix login.md", kind: note.KindTask, content: `Login fails after the deploy.
`, tags: []string{"bug"}, task: &note.Task{Title: "Fix login", Status: "open", Priority: "P3", Due: "2026-12-01", Labels: []string{"bug"}}},
	{path: "Tasks/Someday.md", kind: note.KindTask, content: `No due date, about the deploy.
`, task: &note.Task{Title: "Someday", Status: "open", Priority: "P2"}},
	{path: "Notes/Report.md", kind: note.KindNote, content: "Quarterly report.\n"},
	{path: "Reference/Glacier trip.md", kind: note.KindNote, content: "# Glacier trip\nWe saw a fjord.\n\n## Gear\nCrampons.\n"},
	{path: "Archive/Report.md", kind: note.KindNote, content: "Old report.\n"},
	{path: "Notes/Deploy guide.md", kind: note.KindNote, content: `How we deploy.

## Rollback
Use kubernetes rollback; check the dashboard.

## Naïve approach
Just restart everything.
`, tags: []string{"ops", "howto"}},
}

func loadVault(t testing.TB) *Index {
	t.Helper()
	ix, _ := openIndex(t)
	us := make([]Update, len(vault))
	for i, f := range vault {
		us[i] = f.update()
	}
	apply(t, ix, us...)
	return ix
}

// hitKeys renders hits as "path#heading" for comparison.
func hitKeys(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Path + "#" + h.Heading
	}
	return out
}

func TestSearch(t *testing.T) {
	ix := loadVault(t)
	tests := []struct {
		name    string
		q       Query
		want    []string // path#heading; sorted unless ordered
		ordered bool
	}{
		{name: "single word", q: Query{Text: "kubernetes"},
			want: []string{"Daily/2026-11-20.md#12:00", "Notes/Deploy guide.md#Rollback"}},
		{name: "all words", q: Query{Text: "deploy latency"},
			want: []string{"Daily/2026-11-20.md#12:00"}},
		{name: "all is default and case-insensitive mode", q: Query{Text: "deploy latency", Mode: "ALL"},
			want: []string{"Daily/2026-11-20.md#12:00"}},
		{name: "any word", q: Query{Text: "latency invoice", Mode: "Any"},
			want: []string{"Daily/2026-10-05.md#16:45", "Daily/2026-11-20.md#12:00"}},
		{name: "phrase", q: Query{Text: "release team", Mode: ModePhrase},
			want: []string{"Daily/2026-11-20.md#07:30"}},
		{name: "phrase not adjacent", q: Query{Text: "team release", Mode: ModePhrase}},
		{name: "quoted phrase in all mode", q: Query{Text: `"staging deploy" production`},
			want: []string{"Daily/2026-11-20.md#12:00 [correction]"}},
		{name: "case-insensitive text", q: Query{Text: "KUBERNETES Cluster"},
			want: []string{"Daily/2026-11-20.md#12:00"}},
		{name: "diacritics folded in query", q: Query{Text: "cafe"},
			want: []string{"Daily/2026-11-20.md#07:30"}},
		{name: "diacritics folded in text", q: Query{Text: "résumé"},
			want: []string{"Daily/2026-10-05.md#16:45"}},
		{name: "heading matches", q: Query{Text: "naive"},
			want: []string{"Notes/Deploy guide.md#Naïve approach"}},
		{name: "title matches preamble", q: Query{Text: "someday"},
			want: []string{"Tasks/Someday.md#"}},
		{name: "title of a note opening with a heading matches that section", q: Query{Text: "trip"},
			want: []string{"Reference/Glacier trip.md#Glacier trip"}},
		{name: "no text: a note opening with a heading is listed by it", ordered: true, q: Query{Glob: "Reference/*.md"},
			want: []string{"Reference/Glacier trip.md#Glacier trip"}},
		{name: "alias matches preamble", q: Query{Text: "launch"},
			want: []string{"Daily/2026-11-20.md#07:30", "Tasks/Ship v2.md#"}},
		{name: "prefix", q: Query{Text: "kube*"},
			want: []string{"Daily/2026-11-20.md#12:00", "Notes/Deploy guide.md#Rollback"}},
		{name: "expansion", q: Query{Text: "k8s", Expand: map[string][]string{"K8S": {"kubernetes"}}},
			want: []string{"Daily/2026-11-20.md#12:00", "Notes/Deploy guide.md#Rollback"}},
		{name: "expansion multiword synonym", q: Query{Text: "freeze", Expand: map[string][]string{"freeze": {"release team"}}},
			want: []string{"Daily/2026-11-20.md#07:30", "Tasks/Ship v2.md#Plan"}},
		{name: "expansion in all mode keeps other words", q: Query{Text: "k8s rollback", Expand: map[string][]string{"k8s": {"kubernetes"}}},
			want: []string{"Notes/Deploy guide.md#Rollback"}},
		{name: "expansion of a phrase", q: Query{Text: "code review", Mode: ModePhrase, Expand: map[string][]string{"Code Review": {"invoice"}}},
			want: []string{"Daily/2026-10-05.md#16:45"}},
		// A hit is a note, at its best section: the earliest of equals.
		{name: "date range", q: Query{Text: "deploy", From: "2026-11-01", To: "2026-11-30"},
			want: []string{"Daily/2026-11-20.md#12:00"}},
		{name: "date from only", q: Query{Text: "release", From: "2026-10-06"},
			want: []string{"Daily/2026-10/2026-10-06.md#08:00", "Daily/2026-11-20.md#07:30"}},
		{name: "date range without matches", q: Query{Text: "deploy", From: "2030-01-01"}},
		{name: "glob star stays in folder", q: Query{Text: "release", Glob: "Daily/2026-1*.md"},
			want: []string{"Daily/2026-11-20.md#07:30"}},
		{name: "glob double star", q: Query{Text: "release", Glob: "Daily/**.md"},
			want: []string{"Daily/2026-10/2026-10-06.md#08:00", "Daily/2026-11-20.md#07:30"}},
		{name: "glob double star slash matches zero folders", q: Query{Text: "release", Glob: "**/2026-1?-*.md"},
			want: []string{"Daily/2026-10/2026-10-06.md#08:00", "Daily/2026-11-20.md#07:30"}},
		{name: "glob class", q: Query{Text: "report", Glob: "[AN]*/Report.md"},
			want: []string{"Archive/Report.md#", "Notes/Report.md#"}},
		{name: "glob negated class", q: Query{Text: "report", Glob: "[!N]*/*.md"},
			want: []string{"Archive/Report.md#", "Daily/2026-11-21.md#11:00"}},
		{name: "glob literal path", q: Query{Text: "report", Glob: "Notes/Report.md"},
			want: []string{"Notes/Report.md#"}},
		{name: "tag", q: Query{Text: "deploy", Tags: []string{"#OPS"}},
			want: []string{"Daily/2026-11-20.md#12:00", "Notes/Deploy guide.md#"}},
		{name: "tags all required", q: Query{Text: "deploy", Tags: []string{"ops", "howto"}},
			want: []string{"Notes/Deploy guide.md#"}},
		{name: "parent tag matches nested", q: Query{Text: "release", Tags: []string{"project"}},
			want: []string{"Tasks/Ship v2.md#"}},
		{name: "tag prefix is not a parent", q: Query{Text: "release", Tags: []string{"proj"}}},
		// Obsidian's tag: operator, in the text, is the same filter.
		{name: "tag: operator", q: Query{Text: "deploy tag:#OPS"},
			want: []string{"Daily/2026-11-20.md#12:00", "Notes/Deploy guide.md#"}},
		{name: "tag: operators all required", q: Query{Text: "tag:ops deploy tag:howto"},
			want: []string{"Notes/Deploy guide.md#"}},
		{name: "tag: operator matches nested", q: Query{Text: "release tag:project"},
			want: []string{"Tasks/Ship v2.md#"}},
		{name: "tag: operator prefix is not a parent", q: Query{Text: "release tag:proj"}},
		{name: "task status", q: Query{Text: "deploy", Fields: TaskFilter{Status: []string{"OPEN"}}},
			want: []string{"Tasks/Fix login.md#", "Tasks/Someday.md#"}},
		{name: "task priority folded", q: Query{Text: "deploy", Fields: TaskFilter{Priority: []string{"low"}}},
			want: []string{"Tasks/Fix login.md#"}},
		{name: "task due range excludes undated", q: Query{Text: "deploy", Fields: TaskFilter{DueTo: "2026-12-31"}},
			want: []string{"Tasks/Fix login.md#"}},
		{name: "no text: date range lists entries by date", ordered: true, q: Query{From: "2026-11-20", To: "2026-11-21"},
			want: []string{"Daily/2026-11-20.md#07:30", "Daily/2026-11-20.md#12:00", "Daily/2026-11-20.md#12:00 [correction]",
				"Daily/2026-11-21.md#09:00", "Daily/2026-11-21.md#10:00", "Daily/2026-11-21.md#11:00"}},
		{name: "no text: glob lists notes by path", ordered: true, q: Query{Glob: "*/Report.md"},
			want: []string{"Archive/Report.md#", "Notes/Report.md#"}},
		{name: "no text: tag", ordered: true, q: Query{Tags: []string{"ops"}},
			want: []string{"Daily/2026-11-20.md#07:30", "Daily/2026-11-20.md#12:00", "Daily/2026-11-20.md#12:00 [correction]", "Notes/Deploy guide.md#"}},
		{name: "no text: task fields", ordered: true, q: Query{Fields: TaskFilter{Status: []string{"open", "in-progress"}, DueFrom: "2026-11-01"}},
			want: []string{"Tasks/Fix login.md#", "Tasks/Ship v2.md#"}},
		{name: "limit", q: Query{Text: "deploy", Limit: 1}, want: []string{"*"}},
		{name: "no text limit", ordered: true, q: Query{From: "2026-11-20", Limit: 2},
			want: []string{"Daily/2026-11-20.md#07:30", "Daily/2026-11-20.md#12:00"}},
		{name: "punctuation only", q: Query{Text: `*** -- "" ::`}},
		{name: "filter tokens are not searchable", q: Query{Text: "kdtask " + metaToken(metaTag, "ops"), Mode: ModeAny}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := ix.Search(context.Background(), tt.q)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			got := hitKeys(hits)
			if slices.Equal(tt.want, []string{"*"}) {
				if len(got) != 1 {
					t.Fatalf("got %d hits %v, want 1", len(got), got)
				}
				return
			}
			if !tt.ordered {
				slices.Sort(got)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("hits\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSearchHitFields(t *testing.T) {
	ix := loadVault(t)
	ctx := context.Background()
	hits, err := ix.Search(ctx, Query{Text: "kubernetes", Glob: "Daily/*.md"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search: %v, %v", hits, err)
	}
	h := hits[0]
	// The line of the match, under the entry's nested heading.
	if h.Line != 10 || h.Date != "2026-11-20" || h.Heading != "12:00" || h.Rank <= 0 {
		t.Errorf("hit = %+v", h)
	}
	if !strings.Contains(h.Snippet, "**Kubernetes**") {
		t.Errorf("snippet %q does not mark the match", h.Snippet)
	}
	if !strings.Contains(h.Snippet, "Details") {
		t.Errorf("snippet %q lost the nested heading's text", h.Snippet)
	}

	hits, err = ix.Search(ctx, Query{Glob: "Notes/Deploy guide.md"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Search: %v, %v", hits, err)
	}
	if hits[0].Snippet != "How we deploy." || hits[0].Line != 1 {
		t.Errorf("listed hit = %+v", hits[0])
	}

	// A title match outranks a body match.
	hits, err = ix.Search(ctx, Query{Text: "report"})
	if err != nil || len(hits) != 3 {
		t.Fatalf("Search: %v, %v", hitKeys(hits), err)
	}
	if hits[2].Path != "Daily/2026-11-21.md" {
		t.Errorf("body match ranked above title matches: %q", hitKeys(hits))
	}
}

func TestSearchBadQuery(t *testing.T) {
	ix := loadVault(t)
	tests := []struct {
		name string
		q    Query
	}{
		{"unknown mode", Query{Text: "x", Mode: "fuzzy"}},
		{"bad from", Query{From: "2026/11/01"}},
		{"bad to", Query{Text: "x", To: "yesterday"}},
		{"bad due", Query{Fields: TaskFilter{DueFrom: "soon"}}},
		{"bad glob class", Query{Glob: "[z-a]*.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ix.Search(context.Background(), tt.q); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestSearchHostile checks that nothing a user types is an FTS5 syntax error.
func TestSearchHostile(t *testing.T) {
	ix := loadVault(t)
	inputs := []string{
		`"`, `""`, `"unclosed phrase`, `*`, `**`, `a*b`, `*deploy`, `-deploy`, `deploy -`, `NOT deploy`,
		`deploy AND`, `OR`, `AND OR NOT`, `NEAR(deploy latency)`, `NEAR`, `body:deploy`, `title:`, `:`, `{title body}: x`,
		`^deploy`, `deploy^`, `(deploy`, `deploy)`, `()`, `+deploy`, `deploy + latency`, `'deploy'`, `\"deploy\"`,
		`deploy;DROP TABLE files;--`, "tab\tand\nnewline", "\x00nul", "\xff\xfe bad utf8", `C++`, `node.js`, `50%`, `v2.1`,
		`#ops`, `[[Ship v2]]`, `deploy"latency`, `"deploy" "`, strings.Repeat("deploy ", 300), `🚀 launch`, `日本語`,
		`how do I deploy the latency fix?`, `what is status:done about?`, `why "release team" kube* broke?`, `会議のメモはどこ`,
		strings.Repeat("why deploy latency ", 100) + "?",
	}
	for _, mode := range []Mode{ModeAuto, ModeAll, ModeAny, ModePhrase} {
		for _, in := range inputs {
			t.Run(fmt.Sprintf("%s/%.20q", mode, in), func(t *testing.T) {
				q := Query{Text: in, Mode: mode, Expand: map[string][]string{in: {in, `"`, "x*"}}}
				if _, err := ix.Search(context.Background(), q); err != nil {
					t.Errorf("Search(%q): %v", in, err)
				}
			})
		}
	}
}

func FuzzMatchExpr(f *testing.F) {
	for _, s := range []string{`deploy "release team" kube*`, `"`, `-x`, `a:b`, `NEAR(a b)`, `*`} {
		f.Add(s, s)
	}
	ix := loadVault(f)
	f.Fuzz(func(t *testing.T, text, syn string) {
		for _, mode := range []Mode{ModeAll, ModeAny, ModePhrase} {
			q := Query{Text: text, Mode: mode, Expand: map[string][]string{text: {syn}}}
			if _, err := ix.Search(context.Background(), q); err != nil {
				t.Fatalf("Search(%q, %s): %v", text, mode, err)
			}
		}
	})
}

func TestMatchExpr(t *testing.T) {
	tests := []struct {
		text string
		mode Mode
		exp  map[string][]string
		want string
	}{
		{"Deploy latency", ModeAll, nil, `"deploy" AND "latency"`},
		{"deploy latency", ModeAny, nil, `"deploy" OR "latency"`},
		{"release  team", ModePhrase, nil, `"release team"`},
		{"kube*", ModeAll, nil, `"kube"*`},
		{`"code review"* done`, ModeAll, nil, `"code review"* AND "done"`},
		{"node.js", ModeAll, nil, `"node js"`},
		{`say "hi`, ModeAll, nil, `"say" AND "hi"`},
		{"k8s up", ModeAll, map[string][]string{"K8s": {"kubernetes", "kube cluster"}}, `("k8s" OR "kubernetes" OR "kube cluster") AND "up"`},
		{`"k8s"`, ModeAll, map[string][]string{"k8s": {"kubernetes"}}, `"k8s"`},
		{"-- ::", ModeAll, nil, ``},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			if got, _, _ := matchExpr(tt.text, tt.mode, tt.exp); got != tt.want {
				t.Errorf("matchExpr(%q) = %s, want %s", tt.text, got, tt.want)
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	long := "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega."
	tests := []struct {
		name  string
		body  string
		query string
		mode  Mode
		want  string
	}{
		{"marks each match", "Deploy went fine;\nlatency is down.", "deploy latency", ModeAll, "**Deploy** went fine; **latency** is down."},
		{"folds case and diacritics", "Le Café est fermé.", "CAFE ferme", ModeAll, "Le **Café** est **fermé**."},
		{"prefix", "Kubernetes and kubectl, not kube.", "kube*", ModeAll, "**Kubernetes** and **kubectl**, not **kube**."},
		{"synonyms marked", "We use k8s daily.", "kubernetes", ModeAll, "We use **k8s** daily."},
		{"window around the match", long, "upsilon", ModeAll, "…rho sigma tau **upsilon** phi chi psi omega."},
		{"window at the start", long, "beta", ModeAll, "Alpha **beta** gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi…"},
		{"no match falls back to the start", "Just text.", "missing", ModeAll, "Just text."},
		{"phrase words marked", "the release team met", "release team", ModePhrase, "the **release** **team** met"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, terms, _ := matchExpr(tt.query, tt.mode, map[string][]string{"kubernetes": {"k8s"}})
			if got, _ := snippet(tt.body, terms); got != tt.want {
				t.Errorf("snippet = %q\nwant      %q", got, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	ship := vault[4]
	shipEdited := ship
	shipEdited.content = "Ship the second release, now with rollback plans.\n"
	shipEdited.check = nil
	tests := []struct {
		name       string
		batches    [][]Update
		wantStat   map[string]State
		wantSearch map[string]int // query text → hits
		wantCounts Counts
	}{
		{
			name:       "upsert",
			batches:    [][]Update{{ship.update()}},
			wantStat:   map[string]State{"Tasks/Ship v2.md": StateIndexed},
			wantSearch: map[string]int{"freeze": 1},
			wantCounts: Counts{Notes: 1, Tasks: 1, ChecklistItems: 2, Indexed: 1},
		},
		{
			name:       "upsert again replaces",
			batches:    [][]Update{{ship.update()}, {shipEdited.update()}},
			wantStat:   map[string]State{"Tasks/Ship v2.md": StateIndexed},
			wantSearch: map[string]int{"freeze": 0, "rollback": 1},
			wantCounts: Counts{Notes: 1, Tasks: 1, Indexed: 1},
		},
		{
			name:       "same path twice in one batch",
			batches:    [][]Update{{ship.update(), shipEdited.update()}},
			wantStat:   map[string]State{"Tasks/Ship v2.md": StateIndexed},
			wantSearch: map[string]int{"freeze": 0, "rollback": 1},
			wantCounts: Counts{Notes: 1, Tasks: 1, Indexed: 1},
		},
		{
			name:       "remove",
			batches:    [][]Update{{ship.update(), vault[0].update()}, {Update{Path: "Tasks/Ship v2.md", Remove: true}}},
			wantStat:   map[string]State{"Daily/2026-11-20.md": StateIndexed},
			wantSearch: map[string]int{"freeze": 0, "kubernetes": 1},
			wantCounts: Counts{Notes: 1, DailyNotes: 1, Indexed: 1},
		},
		{
			name:       "remove unknown path",
			batches:    [][]Update{{Update{Path: "nope.md", Remove: true}}},
			wantStat:   map[string]State{},
			wantCounts: Counts{},
		},
		{
			name: "skip and fail",
			batches: [][]Update{{
				Update{Path: "Big.md", Stat: FileStat{Size: 6 << 20}, State: StateSkipped, Reason: "over size cap"},
				Update{Path: "Broken.md", Stat: FileStat{Size: 3}, State: StateFailed, Reason: "permission denied"},
			}},
			wantStat:   map[string]State{"Big.md": StateSkipped, "Broken.md": StateFailed},
			wantCounts: Counts{Skipped: 1, Failed: 1},
		},
		{
			name:       "indexed note later skipped loses its content",
			batches:    [][]Update{{ship.update()}, {Update{Path: "Tasks/Ship v2.md", Stat: FileStat{Size: 6 << 20}, State: StateSkipped, Reason: "over size cap"}}},
			wantStat:   map[string]State{"Tasks/Ship v2.md": StateSkipped},
			wantSearch: map[string]int{"freeze": 0},
			wantCounts: Counts{Skipped: 1},
		},
		{
			name:       "failed file later indexed",
			batches:    [][]Update{{Update{Path: "Tasks/Ship v2.md", Stat: FileStat{}, State: StateFailed, Reason: "bad"}}, {ship.update()}},
			wantStat:   map[string]State{"Tasks/Ship v2.md": StateIndexed},
			wantSearch: map[string]int{"freeze": 1},
			wantCounts: Counts{Notes: 1, Tasks: 1, ChecklistItems: 2, Indexed: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, _ := openIndex(t)
			for _, b := range tt.batches {
				apply(t, ix, b...)
			}
			stat, err := ix.Stat(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]State{}
			for p, st := range stat {
				got[p] = st.State
			}
			if !reflect.DeepEqual(got, tt.wantStat) {
				t.Errorf("Stat states = %v, want %v", got, tt.wantStat)
			}
			for text, want := range tt.wantSearch {
				hits, err := ix.Search(ctx, Query{Text: text})
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) != want {
					t.Errorf("Search(%q) = %q, want %d hits", text, hitKeys(hits), want)
				}
			}
			c, err := ix.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c != tt.wantCounts {
				t.Errorf("Counts = %+v, want %+v", c, tt.wantCounts)
			}
		})
	}
}

func TestApplyForms(t *testing.T) {
	ctx := context.Background()
	ship := vault[4]
	broken := ship.update()
	broken.State, broken.Reason = StateFailed, "broken frontmatter: bad indent"
	tests := []struct {
		name       string
		batches    [][]Update
		wantStat   map[string]FileStat
		wantReason string // of the one file, if any
		wantSearch int    // hits for "freeze"
	}{
		{
			name: "touch keeps content",
			batches: [][]Update{{ship.update()}, {{Path: ship.path, TouchOnly: true, State: StateIndexed,
				Stat: FileStat{Size: 9, MtimeNS: 99, Hash: "h:Tasks/Ship v2.md"}}}},
			wantStat:   map[string]FileStat{ship.path: {Size: 9, MtimeNS: 99, Hash: "h:Tasks/Ship v2.md", State: StateIndexed}},
			wantSearch: 1,
		},
		{
			name: "touch without a state keeps it",
			batches: [][]Update{{broken}, {{Path: ship.path, TouchOnly: true,
				Stat: FileStat{Size: 9, MtimeNS: 99, Hash: "h:Tasks/Ship v2.md"}}}},
			wantStat:   map[string]FileStat{ship.path: {Size: 9, MtimeNS: 99, Hash: "h:Tasks/Ship v2.md", State: StateFailed}},
			wantReason: "broken frontmatter: bad indent",
			wantSearch: 1,
		},
		{
			name:     "touch of an unknown path is ignored",
			batches:  [][]Update{{{Path: "New.md", TouchOnly: true, State: StateIndexed, Stat: FileStat{Size: 1}}}},
			wantStat: map[string]FileStat{},
		},
		{
			name:       "note with broken frontmatter is failed but searchable",
			batches:    [][]Update{{broken}},
			wantStat:   map[string]FileStat{ship.path: {Size: int64(len(ship.content)), MtimeNS: 1, Hash: "h:Tasks/Ship v2.md", State: StateFailed}},
			wantReason: "broken frontmatter: bad indent",
			wantSearch: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, _ := openIndex(t)
			for _, b := range tt.batches {
				apply(t, ix, b...)
			}
			got, err := ix.Stat(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.wantStat) {
				t.Errorf("Stat = %v, want %v", got, tt.wantStat)
			}
			cov, err := ix.Coverage(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(cov) == 1 && cov[0].Reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", cov[0].Reason, tt.wantReason)
			}
			hits, err := ix.Search(ctx, Query{Text: "freeze"})
			if err != nil || len(hits) != tt.wantSearch {
				t.Errorf("Search = %v, %v; want %d hits", hitKeys(hits), err, tt.wantSearch)
			}
		})
	}
}

func TestApplyRejectsBadUpdates(t *testing.T) {
	n := fakeParse("A.md", note.KindNote, "a\n")
	tests := []struct {
		name string
		u    Update
	}{
		{"no path", Update{State: StateSkipped}},
		{"note without content", Update{Path: "A.md", Note: n}},
		{"note of another path", Update{Path: "B.md", Note: n, Content: []byte("a\n")}},
		{"no note, indexed", Update{Path: "A.md", State: StateIndexed}},
		{"no note, no state", Update{Path: "A.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, _ := openIndex(t)
			ctx := context.Background()
			// The good update before the bad one must not stick either.
			if err := ix.Apply(ctx, []Update{vault[7].update(), tt.u}); err == nil {
				t.Fatal("Apply accepted the update")
			}
			if st, err := ix.Stat(ctx); err != nil || len(st) != 0 {
				t.Errorf("after a rejected batch Stat = %v, %v; want empty", st, err)
			}
		})
	}
}

// TestApplyClampsOffsets feeds a note whose offsets run past its content, as
// a stale or hand-made note might.
func TestApplyClampsOffsets(t *testing.T) {
	ix, _ := openIndex(t)
	content := "## A\nshort\n"
	n := &note.Note{Path: "X.md", Kind: note.KindDaily, Date: "2026-01-01", Title: "X", BodyOffset: 500, BodyLine: 9,
		Headings: []note.Heading{{Level: 2, Text: "A", Line: 1, Offset: 0}, {Level: 2, Text: "B", Line: 40, Offset: 900}},
		Entries:  []note.Entry{{Time: "09:00", Heading: "09:00", Line: 30, Start: 700, End: 800, Text: "entry"}},
		Links:    []note.Link{{Target: "Y", Offset: 10_000, Line: 99}},
	}
	apply(t, ix, Update{Path: "X.md", Note: n, Content: []byte(content)})
	if _, err := ix.Note(context.Background(), "X.md"); err != nil {
		t.Fatal(err)
	}
}

func TestStatPaths(t *testing.T) {
	ix := loadVault(t)
	got, err := ix.StatPaths(context.Background(), []string{"Notes/Report.md", "Tasks/Someday.md", "missing.md", `quote".md`})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range got {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{"Notes/Report.md", "Tasks/Someday.md"}; !slices.Equal(paths, want) {
		t.Errorf("StatPaths = %v, want %v", paths, want)
	}
}

func TestCheckAndOptimize(t *testing.T) {
	ctx := context.Background()
	ix := loadVault(t)
	if err := ix.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx); err != nil {
		t.Fatalf("Check on a sound index: %v", err)
	}
	if hits, err := ix.Search(ctx, Query{Text: "kubernetes"}); err != nil || len(hits) != 2 {
		t.Errorf("Search after Optimize = %v, %v", hitKeys(hits), err)
	}
	// A note without its search row.
	if _, err := ix.db.ExecContext(ctx, `DELETE FROM notes_fts WHERE rowid = (SELECT MIN(file_id) FROM notes)`); err != nil {
		t.Fatal(err)
	}
	if err := ix.Check(ctx); err == nil {
		t.Error("Check missed a damaged search index")
	}
}

// TestParsedNotes runs the index over notes from the real parser.
func TestParsedNotes(t *testing.T) {
	opts := note.Options{Daily: note.DefaultDailyFormat(), TaskFolders: []string{"Tasks"}}
	files := map[string]string{
		"Tasks/Ship v2.md": "---\ntype: task\nstatus: In-Progress\npriority: high\ndue: 2026-11-25\ntags: [project/margin]\naliases: [shipping]\n---\n" +
			"Ship the second release.\n\n## Plan\n- [ ] Write release notes 📅 2026-11-24\n- [x] Freeze branch\n",
		"Daily/2026-11-20.md": "## 07:30\nStandup about the Café launch, see [[shipping]].\n\n## 12:00 [correction]\nIt was [Ship](../Tasks/Ship%20v2.md) after all.\n",
		"Notes/Broken.md":     "---\ntags: [a\n---\nBody still searchable: zeppelin.\n",
	}
	ix, _ := openIndex(t)
	ctx := context.Background()
	var us []Update
	for p, src := range files {
		us = append(us, Update{Path: p, Note: note.Parse(p, []byte(src), opts), Content: []byte(src)})
	}
	apply(t, ix, us...)

	tasks, err := ix.Tasks(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("Tasks = %+v, %v", tasks, err)
	}
	if tk := tasks[0]; tk.Status != "in-progress" || tk.Priority != "P1" || tk.Due != "2026-11-25" {
		t.Errorf("task = %+v", tk)
	}
	// TasksAt reads the tasks among the paths it is given, no others.
	at, err := ix.TasksAt(ctx, []string{"Tasks/Ship v2.md", "Daily/2026-11-20.md", "Tasks/Gone.md"})
	if err != nil || len(at) != 1 || !reflect.DeepEqual(at[0], tasks[0]) {
		t.Errorf("TasksAt = %+v, %v; want the one task", at, err)
	}
	if at, err := ix.TasksAt(ctx, []string{"Daily/2026-11-20.md"}); err != nil || len(at) != 0 {
		t.Errorf("TasksAt of a daily note = %+v, %v; want none", at, err)
	}
	linked, err := ix.LinkedEntries(ctx, "Tasks/Ship v2.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range linked {
		got = append(got, e.Heading)
	}
	if want := []string{"07:30", "12:00 [correction]"}; !slices.Equal(got, want) {
		t.Errorf("LinkedEntries headings = %q, want %q", got, want)
	}
	for _, q := range []Query{
		{Text: "cafe", From: "2026-11-20", To: "2026-11-20"},
		{Text: "release", Tags: []string{"project"}, Fields: TaskFilter{Status: []string{"in-progress"}, Priority: []string{"high"}}},
		{Text: "zeppelin"},
	} {
		if hits, err := ix.Search(ctx, q); err != nil || len(hits) == 0 {
			t.Errorf("Search(%+v) = %v, %v", q, hitKeys(hits), err)
		}
	}
}

func TestApplyRollsBackOnError(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := ix.Apply(cancelled, []Update{vault[0].update()}); err == nil {
		t.Fatal("Apply with a cancelled context succeeded")
	}
	c, err := ix.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c != (Counts{}) {
		t.Errorf("Counts after failed Apply = %+v, want zero", c)
	}
}

func TestStatRoundTripAndRestart(t *testing.T) {
	ctx := context.Background()
	ix, dbPath := openIndex(t)
	n := fakeParse("A.md", note.KindNote, "alpha beta\n")
	apply(t, ix,
		Update{Path: "A.md", Note: n, Content: []byte("alpha beta\n"), Stat: FileStat{Size: 11, MtimeNS: 1763700000123456789, Hash: "sha256:ab"}},
		Update{Path: "B.md", Stat: FileStat{Size: 9 << 20, MtimeNS: 42, Hash: ""}, State: StateSkipped, Reason: "over size cap"},
		Update{Path: "C.md", Stat: FileStat{Size: 1, MtimeNS: 43, Hash: "x"}, State: StateFailed, Reason: "invalid UTF-8"},
	)
	want := map[string]FileStat{
		"A.md": {Size: 11, MtimeNS: 1763700000123456789, Hash: "sha256:ab", State: StateIndexed},
		"B.md": {Size: 9 << 20, MtimeNS: 42, State: StateSkipped},
		"C.md": {Size: 1, MtimeNS: 43, Hash: "x", State: StateFailed},
	}
	check := func(ix *Index) {
		t.Helper()
		got, err := ix.Stat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Stat = %v, want %v", got, want)
		}
		indexed := map[string]FileStat{}
		if err := ix.Indexed(ctx, func(p string, st FileStat) { indexed[p] = st }); err != nil {
			t.Fatal(err)
		}
		if want := map[string]FileStat{"A.md": want["A.md"]}; !reflect.DeepEqual(indexed, want) {
			t.Errorf("Indexed gave %v, want %v (the skipped and failed left out)", indexed, want)
		}
		hits, err := ix.Search(ctx, Query{Text: "alpha"})
		if err != nil || len(hits) != 1 {
			t.Errorf("Search after reopen: %v, %v", hits, err)
		}
		cov, err := ix.Coverage(ctx, StateSkipped)
		if err != nil || !reflect.DeepEqual(cov, []FileState{{Path: "B.md", State: StateSkipped, Reason: "over size cap"}}) {
			t.Errorf("Coverage(skipped) = %v, %v", cov, err)
		}
	}
	check(ix)
	check(reopen(t, dbPath))
}

func TestCoverage(t *testing.T) {
	ix, _ := openIndex(t)
	ctx := context.Background()
	apply(t, ix, vault[7].update(), Update{Path: "Big.md", Stat: FileStat{}, State: StateSkipped, Reason: "over size cap"}, Update{Path: "Bad.md", Stat: FileStat{}, State: StateFailed, Reason: "EACCES"})
	tests := []struct {
		state   State
		want    []string
		wantErr bool
	}{
		{"", []string{"Bad.md", "Big.md", "Notes/Report.md"}, false},
		{StateIndexed, []string{"Notes/Report.md"}, false},
		{StateFailed, []string{"Bad.md"}, false},
		{"bogus", nil, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.state), func(t *testing.T) {
			fs, err := ix.Coverage(ctx, tt.state)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Coverage: %v", err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Coverage(%q) = %v, want %v", tt.state, got, tt.want)
			}
		})
	}
}

func TestNote(t *testing.T) {
	ix := loadVault(t)
	ctx := context.Background()
	m, err := ix.Note(ctx, "Tasks/Ship v2.md")
	if err != nil {
		t.Fatal(err)
	}
	want := NoteMeta{
		Path: "Tasks/Ship v2.md", Kind: note.KindTask, Title: "Ship v2",
		Stat: FileStat{Size: int64(len(vault[4].content)), MtimeNS: 1, Hash: "h:Tasks/Ship v2.md", State: StateIndexed},
		Task: &TaskMeta{Path: "Tasks/Ship v2.md", Title: "Ship v2", Status: "in-progress", Priority: "P1", Due: "2026-11-25",
			Estimate: 120, Labels: []string{"project/margin"}},
		Tags:     []string{"task", "Project/Margin"},
		Aliases:  []string{"shipping", "v2 launch"},
		Headings: []HeadingMeta{{Level: 2, Text: "Plan", Line: 3, Offset: 26}},
		Checklist: []ChecklistItemMeta{
			{Line: 4, State: ' ', Text: "Write release notes", Due: "2026-11-24"},
			{Line: 5, State: 'x', Text: "Freeze branch", Done: "2026-11-19"},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Note =\n%+v\nwant\n%+v", m, want)
	}

	d, err := ix.Note(ctx, "Daily/2026-11-20.md")
	if err != nil {
		t.Fatal(err)
	}
	if d.Date != "2026-11-20" || d.Task != nil || len(d.Entries) != 3 || len(d.Links) != 1 || len(d.Headings) != 4 {
		t.Errorf("daily Note = %+v", d)
	}
	if e := d.Entries[2]; !e.Correction || e.Time != "12:00" || e.Text != "It was the staging deploy, not production." {
		t.Errorf("correction entry = %+v", e)
	}
	if l := d.Links[0]; l.Target != "Tasks/Ship v2" || l.Line != 4 {
		t.Errorf("link = %+v", l)
	}

	for _, p := range []string{"nope.md", "Big.md"} {
		t.Run("not found "+p, func(t *testing.T) {
			apply(t, ix, Update{Path: "Big.md", Stat: FileStat{}, State: StateSkipped, Reason: "over size cap"})
			if _, err := ix.Note(ctx, p); !errors.Is(err, ErrNotFound) {
				t.Errorf("Note(%s) error = %v, want ErrNotFound", p, err)
			}
		})
	}
}

func TestTasksAndEntries(t *testing.T) {
	ix := loadVault(t)
	ctx := context.Background()
	tasks, err := ix.Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, tk := range tasks {
		paths = append(paths, tk.Path)
	}
	if want := []string{"Tasks/Fix login.md", "Tasks/Ship v2.md", "Tasks/Someday.md"}; !slices.Equal(paths, want) {
		t.Errorf("Tasks = %v, want %v", paths, want)
	}
	if tasks[2].Labels == nil || len(tasks[2].Labels) != 0 {
		t.Errorf("task without labels: Labels = %#v, want empty", tasks[2].Labels)
	}

	tests := []struct {
		from, to string
		want     []string
	}{
		{"2026-10-01", "2026-10-31", []string{"Daily/2026-10-05.md 16:45", "Daily/2026-10/2026-10-06.md 08:00"}},
		{"2026-11-21", "", []string{"Daily/2026-11-21.md 09:00", "Daily/2026-11-21.md 10:00", "Daily/2026-11-21.md 11:00"}},
		{"", "2026-10-05", []string{"Daily/2026-10-05.md 16:45"}},
		{"2027-01-01", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.from+".."+tt.to, func(t *testing.T) {
			es, err := ix.Entries(ctx, tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Path+" "+e.Time)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Entries = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := ix.Entries(ctx, "last week", ""); err == nil {
		t.Error("Entries accepted a bad date")
	}
}

func TestLinkedEntries(t *testing.T) {
	ctx := context.Background()
	day := func(p, body string) fixture { return fixture{path: p, kind: note.KindDaily, content: body} }
	task := func(p string, aliases ...string) fixture {
		return fixture{path: p, kind: note.KindTask, content: "task\n", aliases: aliases, task: &note.Task{Status: "open"}}
	}
	tests := []struct {
		name  string
		notes []fixture
		task  string
		want  []string // path time
	}{
		{"exact path", []fixture{task("Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[Tasks/Ship]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"exact path with .md and other case", []fixture{task("Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[tasks/SHIP.md#Plan|the ship]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"unique stem", []fixture{task("Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[ship]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"ambiguous stem not matched", []fixture{task("Tasks/Ship.md"), task("Archive/Ship.md"),
			day("Daily/2026-01-01.md", "## 09:00\n[[Ship]]\n## 10:00\n[[Archive/Ship]]\n")},
			"Tasks/Ship.md", nil},
		{"alias", []fixture{task("Tasks/Ship.md", "Launch"), day("Daily/2026-01-01.md", "## 09:00\n[[launch]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"alias shadowed by a file name", []fixture{task("Tasks/Ship.md", "Launch"), task("Notes/Launch.md"),
			day("Daily/2026-01-01.md", "## 09:00\n[[launch]]\n")},
			"Tasks/Ship.md", nil},
		{"alias shared by two notes", []fixture{task("Tasks/Ship.md", "Launch"), task("Tasks/Other.md", "launch"),
			day("Daily/2026-01-01.md", "## 09:00\n[[launch]]\n")},
			"Tasks/Ship.md", nil},
		{"entry linking twice listed once, ordered by date", []fixture{task("Tasks/Ship.md", "Launch"),
			day("Daily/2026-01-02.md", "## 09:00\n[[Ship]] and [[Launch]]\n"),
			day("Daily/2026-01-01.md", "intro [[Ship]]\n## 09:00\nnothing\n## 10:00\n[[Ship]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 10:00", "Daily/2026-01-02.md 09:00"}},
		{"links from non-daily notes are not entries", []fixture{task("Tasks/Ship.md"), {path: "Notes/N.md", kind: note.KindNote, content: "## 09:00\n[[Ship]]\n"}},
			"Tasks/Ship.md", nil},
		{"relative to the linking note", []fixture{task("Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[../Tasks/Ship.md]]\n")},
			"Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"unique path ending", []fixture{task("Work/Tasks/Ship.md"), task("Home/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[Tasks/Ship]]\n")},
			"Work/Tasks/Ship.md", []string{"Daily/2026-01-01.md 09:00"}},
		{"ambiguous path ending", []fixture{task("Work/Tasks/Ship.md"), task("Home/Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[Tasks/Ship]]\n")},
			"Work/Tasks/Ship.md", nil},
		{"exact path wins over ending", []fixture{task("Work/Tasks/Ship.md"), task("Tasks/Ship.md"), day("Daily/2026-01-01.md", "## 09:00\n[[Tasks/Ship]]\n")},
			"Work/Tasks/Ship.md", nil},
		{"alias shadowed by a path ending", []fixture{task("Tasks/Ship.md", "Work/Launch"), task("Old/Work/Launch.md"),
			day("Daily/2026-01-01.md", "## 09:00\n[[Work/Launch]]\n")},
			"Tasks/Ship.md", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, _ := openIndex(t)
			for _, n := range tt.notes {
				apply(t, ix, n.update())
			}
			es, err := ix.LinkedEntries(ctx, tt.task)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Path+" "+e.Time)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("LinkedEntries = %v, want %v", got, tt.want)
			}

			// Resolving each link forward agrees with the backlinks.
			bl, err := ix.Backlinks(ctx, tt.task)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.notes {
				for _, l := range note.Parse(n.path, []byte(n.content), note.Options{}).Links {
					back := slices.ContainsFunc(bl, func(b Backlink) bool { return b.From == n.path && b.Line == l.Line && b.Target == l.Target })
					p, err := ix.ResolveLink(ctx, n.path, l.Target)
					if (err == nil && p == tt.task) != back {
						t.Errorf("ResolveLink(%s, %q) = %q, %v; a backlink of %s: %v", n.path, l.Target, p, err, tt.task, back)
					}
					if err != nil && !errors.Is(err, ErrNotFound) {
						t.Errorf("ResolveLink(%s, %q): %v, want ErrNotFound", n.path, l.Target, err)
					}
				}
			}
		})
	}

	ix, _ := openIndex(t)
	if _, err := ix.LinkedEntries(ctx, "Tasks/None.md"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown task: error = %v, want ErrNotFound", err)
	}
}

// A task's report carries the task's name (SPEC §3.3): a link by that name
// is the task's, and the report is linked only by a longer path.
func TestMarginFilesAreNotLinkedByTheirTasksName(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	for _, f := range []fixture{
		{path: "Tasks/Ship.md", kind: note.KindTask, content: "task\n", task: &note.Task{Status: "open"}},
		{path: "Margin/Reports/Ship.md", kind: note.KindMargin, content: "report\n"},
		{path: "Daily/2026-01-01.md", kind: note.KindDaily, content: "## 09:00\n[[Ship]]\n## 10:00\n[[Reports/Ship]]\n"},
	} {
		apply(t, ix, f.update())
	}
	for _, tc := range []struct{ path, want string }{
		{"Tasks/Ship.md", "Ship"},
		{"Margin/Reports/Ship.md", "Reports/Ship"},
	} {
		bl, err := ix.Backlinks(ctx, tc.path)
		if err != nil || len(bl) != 1 || bl[0].Target != tc.want {
			t.Errorf("Backlinks(%s) = %+v, %v; want only the link [[%s]]", tc.path, bl, err, tc.want)
		}
		if p, err := ix.ResolveLink(ctx, "Daily/2026-01-01.md", tc.want); p != tc.path {
			t.Errorf("ResolveLink([[%s]]) = %q, %v; want %s", tc.want, p, err, tc.path)
		}
	}
}

func TestBacklinks(t *testing.T) {
	ix := loadVault(t)
	bl, err := ix.Backlinks(context.Background(), "Tasks/Ship v2.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []Backlink{
		{From: "Daily/2026-11-20.md", Line: 4, Heading: "07:30", Date: "2026-11-20", Target: "Tasks/Ship v2"},
		{From: "Daily/2026-11-21.md", Line: 2, Heading: "09:00", Date: "2026-11-21", Target: "Ship v2"},
		{From: "Daily/2026-11-21.md", Line: 5, Heading: "10:00", Date: "2026-11-21", Target: "shipping"},
	}
	if !reflect.DeepEqual(bl, want) {
		t.Errorf("Backlinks =\n%+v\nwant\n%+v", bl, want)
	}
	// "Report" is the stem of two notes: the link resolves to neither.
	bl, err = ix.Backlinks(context.Background(), "Notes/Report.md")
	if err != nil || len(bl) != 0 {
		t.Errorf("ambiguous Backlinks = %v, %v", bl, err)
	}
}

// TestApplyWritesEveryRow applies batches of sizes around the insert chunk
// (which go out as a full chunk plus power-of-two pieces, on statements kept
// from one batch to the next) and checks that every row landed once, with
// its own values.
func TestApplyWritesEveryRow(t *testing.T) {
	ctx := context.Background()
	ix, _ := openIndex(t)
	total := 0
	for _, n := range []int{1, 63, 64, 65, 150, 3} {
		batch := make([]Update, n)
		for i := range batch {
			p := fmt.Sprintf("B%d/N%03d.md", n, i)
			batch[i] = fixture{path: p, kind: note.KindNote, content: fmt.Sprintf("note %d of %d links [[T%d-%d]]\n", i, n, n, i)}.update()
		}
		apply(t, ix, batch...)
		total += n
	}
	var files, links, sections, mismatched int
	err := ix.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM links), (SELECT count(*) FROM sections),
		(SELECT count(*) FROM links l JOIN files f ON f.id = l.file_id
			WHERE 'B' || substr(l.target, 2, instr(l.target, '-') - 2) || '/N' || printf('%03d', substr(l.target, instr(l.target, '-') + 1)) || '.md' != f.path)`).
		Scan(&files, &links, &sections, &mismatched)
	if err != nil {
		t.Fatal(err)
	}
	if files != total || links != total || sections != total || mismatched != 0 {
		t.Errorf("files, links, sections = %d, %d, %d, want %d each; %d links on the wrong note", files, links, sections, total, mismatched)
	}
}

// TestSearchLeavesOutMarginsOutputs: a report or journal restates its
// task, so a search finds the task alone unless it asks for margin's
// outputs; a listing without text too. A long output (several search
// rows, of which only the first holds its kind) is left out in every row.
func TestSearchLeavesOutMarginsOutputs(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long output %v", long), func(t *testing.T) {
			ix, _ := openIndex(t)
			journal := fixture{path: "Margin/Journal/Tax.md", kind: note.KindMargin, content: "tax return filed\n"}
			if long {
				journal = longNote(journal.path, 3*ftsChunk, "tax return filed")
				journal.kind = note.KindMargin
			}
			for _, f := range []fixture{
				{path: "Tasks/Tax return.md", kind: note.KindTask, content: "file the tax return\n", task: &note.Task{Status: "open"}, tags: []string{"money"}},
				{path: "Margin/Reports/Tax return.md", kind: note.KindMargin, content: "tax return: the tax form is filed\n", tags: []string{"money"}},
				journal,
			} {
				apply(t, ix, f.update())
			}
			for _, tc := range []struct {
				name string
				q    Query
				want []string
			}{
				{"words", Query{Text: "tax"}, []string{"Tasks/Tax return.md"}},
				{"words, outputs", Query{Text: "tax", Outputs: true},
					[]string{"Margin/Journal/Tax.md", "Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
				{"a word only outputs hold", Query{Text: "filed"}, nil},
				// A question counts and ranks no output either, also
				// when the page holds only notes with every word.
				{"a question", Query{Text: "when was the tax return filed?"}, []string{"Tasks/Tax return.md"}},
				{"a question, one hit", Query{Text: "when was the tax return filed?", Limit: 1}, []string{"Tasks/Tax return.md"}},
				{"a question, outputs", Query{Text: "when was the tax return filed?", Outputs: true},
					[]string{"Margin/Journal/Tax.md", "Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
				{"words and a filter", Query{Text: "tax tag:money"}, []string{"Tasks/Tax return.md"}},
				{"filter only", Query{Text: "tag:money"}, []string{"Tasks/Tax return.md"}},
				{"filter only, outputs", Query{Text: "tag:money", Outputs: true}, []string{"Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
				{"listing", Query{Tags: []string{"money"}}, []string{"Tasks/Tax return.md"}},
				{"listing, outputs", Query{Tags: []string{"money"}, Outputs: true}, []string{"Margin/Reports/Tax return.md", "Tasks/Tax return.md"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r, err := ix.Find(context.Background(), tc.q)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, h := range r.Hits {
						got = append(got, h.Path)
					}
					slices.Sort(got)
					if !slices.Equal(got, tc.want) || r.Total != len(tc.want) {
						t.Errorf("Find(%+v) = %v (total %d), want %v", tc.q, got, r.Total, tc.want)
					}
				})
			}
		})
	}
}
