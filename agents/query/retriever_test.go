package query

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault/vaulttest"
)

func linksOf(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Link())
	}
	return out
}

// TestRetriever runs instructions against the index of the sample vault:
// no model is involved.
func TestRetriever(t *testing.T) {
	v := querytest.SampleVault(t)
	r := &Retriever{Index: v.Index(), Exclude: []string{"Margin"}, MaxEntries: 200}
	vocab := map[string]string{"bp": "bench press", "bench": "bench press"}
	for _, tc := range []struct {
		name      string
		in        Instruction
		max       int
		want      []string // links that must be found
		not       []string // links that must not
		count     int      // exact count, when > 0
		truncated bool
	}{
		{name: "date range lists every entry of the week", in: Instruction{From: "2026-11-09", To: "2026-11-15"},
			want: []string{"[[Daily/2026-11-13#18:15]]", "[[Daily/2026-11-15#20:00]]"}, count: 28},
		{name: "keyword within dates", in: Instruction{From: "2026-11-09", To: "2026-11-15", Keywords: []string{"heavy"}},
			want: []string{"[[Daily/2026-11-13#18:15]]"}, not: []string{"[[Daily/2026-11-13#07:15]]"}},
		{name: "vocabulary expands bp to bench press", in: Instruction{From: "2026-11-13", To: "2026-11-13", Keywords: []string{"bp"}},
			want: []string{"[[Daily/2026-11-13#18:15]]"}},
		{name: "a keyword's other number", in: Instruction{From: "2026-11-13", To: "2026-11-13", Keywords: []string{"bench presses"}},
			want: []string{"[[Daily/2026-11-13#18:15]]"}},
		{name: "glob reaches reference notes with their section text", in: Instruction{Glob: "Reference/**", Keywords: []string{"heavy bench"}},
			want: []string{"[[Reference/Training program#Rules]]"}},
		{name: "tags", in: Instruction{From: "2026-11-09", To: "2026-11-15", Tags: []string{"sleep"}},
			want: []string{"[[Daily/2026-11-13#07:15]]"}},
		{name: "nothing about swimming", in: Instruction{Keywords: []string{"swim", "swimming", "pool", "laps"}}, count: -1},
		{name: "max_entries truncates and says so", in: Instruction{From: "2026-10-26", To: "2026-11-21"}, max: 10, count: 10, truncated: true,
			want: []string{"[[Daily/2026-11-21#20:00]]"}},
		{name: "domain modules are not evidence", in: Instruction{Keywords: []string{"progressive overload"}}, count: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := *r
			if tc.max > 0 {
				rr.MaxEntries = tc.max
			}
			got, err := rr.Retrieve(context.Background(), []Instruction{tc.in}, vocab, 1)
			if err != nil {
				t.Fatal(err)
			}
			links := linksOf(got.Entries)
			for _, w := range tc.want {
				if !slices.Contains(links, w) {
					t.Errorf("missing %s in %v", w, links)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(links, n) {
					t.Errorf("unexpected %s", n)
				}
			}
			switch {
			case tc.count > 0 && len(links) != tc.count:
				t.Errorf("%d entries, want %d: %v", len(links), tc.count, links)
			case tc.count < 0 && len(links) != 0:
				t.Errorf("want nothing, got %v", links)
			}
			if got.Truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v (total %d)", got.Truncated, tc.truncated, got.Total)
			}
			if len(got.Attempts) != 1 || got.Attempts[0].Found != len(got.Entries) && !tc.truncated {
				t.Errorf("attempts = %+v", got.Attempts)
			}
		})
	}
	t.Run("whole entry text, not a snippet", func(t *testing.T) {
		got, err := r.Retrieve(context.Background(), []Instruction{{Glob: "Reference/**", Keywords: []string{"heavy bench"}}}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got.Entries {
			if e.Heading == "Rules" && (strings.Contains(e.Text, "**") || !strings.Contains(e.Text, "Under 5 hours of sleep")) {
				t.Errorf("Rules section text = %q", e.Text)
			}
		}
	})
	t.Run("several instructions run together and merge", func(t *testing.T) {
		got, err := r.Retrieve(context.Background(), []Instruction{
			{From: "2026-11-13", To: "2026-11-13", Keywords: []string{"bench"}},
			{From: "2026-11-13", To: "2026-11-13", Keywords: []string{"slept"}},
			{From: "2026-11-13", To: "2026-11-13", Keywords: []string{"bench"}},
			{From: "13/11/2026"},
		}, nil, 4)
		if err != nil {
			t.Fatal(err)
		}
		links := linksOf(got.Entries)
		if !slices.Contains(links, "[[Daily/2026-11-13#18:15]]") || !slices.Contains(links, "[[Daily/2026-11-13#07:15]]") || len(links) != 2 {
			t.Errorf("merged = %v, want the two entries once each", links)
		}
		if len(got.Attempts) != 4 || got.Attempts[0].Attempt != 4 || got.Attempts[3].Err == "" {
			t.Errorf("attempts = %+v: want four numbered from 4, the bad date reported", got.Attempts)
		}
	})
}

func TestValidateCitations(t *testing.T) {
	entries := []Entry{
		{Path: "Daily/2026-11-13.md", Heading: "18:15", Line: 20},
		{Path: "Reference/Training program.md", Heading: "Rules", Line: 30},
	}
	for _, tc := range []struct {
		name, answer string
		cited        []string
		wantText     string
		wantLinks    []string
	}{
		{"kept", "Heavy on Friday [[Daily/2026-11-13#18:15]].", nil,
			"Heavy on Friday [[Daily/2026-11-13#18:15]].", []string{"[[Daily/2026-11-13#18:15]]"}},
		{"invented dropped", "Heavy on Friday [[Daily/2026-11-13#18:15]] and Saturday [[Daily/2026-11-14#09:00]].", nil,
			"Heavy on Friday [[Daily/2026-11-13#18:15]] and Saturday.", []string{"[[Daily/2026-11-13#18:15]]"}},
		{"spelled with .md and an alias", "See [[Daily/2026-11-13.md#18:15|Friday]].", nil,
			"See [[Daily/2026-11-13#18:15]].", []string{"[[Daily/2026-11-13#18:15]]"}},
		{"evidence list validated too", "Rule says so.", []string{"[[Reference/Training program#Rules]]", "[[Nowhere#x]]"},
			"Rule says so.", []string{"[[Reference/Training program#Rules]]"}},
		{"a real note that was not retrieved is dropped", "See [[Daily/2026-11-12#23:55]].", nil, "See.", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, cites := validateCitations(tc.answer, tc.cited, entries)
			var links []string
			for _, c := range cites {
				links = append(links, c.Link)
				if c.Line == 0 {
					t.Errorf("citation %+v has no line", c)
				}
			}
			if text != tc.wantText || !slices.Equal(links, tc.wantLinks) {
				t.Errorf("got %q %v, want %q %v", text, links, tc.wantText, tc.wantLinks)
			}
		})
	}
}

func TestGlobalContextBudgetArchivesTentativeInsights(t *testing.T) {
	gc, err := parseContext("---\nmargin: context\nversion: 4\n---\n\n## Preferences\n\n- units: lbs (certain, 2026-10-01)\n- My own note, kept as written\n\n## Insights\n\n- old: an old hunch (tentative, 2026-10-02)\n")
	if err != nil || gc.Version != 4 || len(gc.Items) != 3 {
		t.Fatalf("parsed %+v", gc)
	}
	var updates []ContextUpdate
	for i := range 30 {
		updates = append(updates, ContextUpdate{Category: "insight", Key: "hunch " + string(rune('a'+i%26)) + strings.Repeat("x", i/26), Value: strings.Repeat("a fairly long observation ", 3), Confidence: "tentative"})
	}
	gc.apply(updates, "2026-11-22")
	moved := gc.shrink(200, "2026-11-22")
	out := gc.render("2026-11-22")
	if (len(out)+3)/4 > 200 {
		t.Errorf("context is %d tokens, over the 200 budget", (len(out)+3)/4)
	}
	if len(moved) == 0 || moved[0].Key != "old" {
		t.Errorf("moved %+v: want the oldest tentative insight first", moved)
	}
	for _, keep := range []string{"- units: lbs (certain, 2026-10-01)", "- My own note, kept as written", "version: 4"} {
		if !strings.Contains(out, keep) {
			t.Errorf("lost %q:\n%s", keep, out)
		}
	}
}

func TestRenderTemplate(t *testing.T) {
	at := mustTime(t, "2026-11-22T18:05")
	got := renderTemplate("# {{date:dddd, MMMM D}}\n{{title}} {{date}} {{time}} {{ time:HH:mm }} {{date:[unparsable}} {{time:h:mm A}} {{date:Qo}}\n", at, "2026-11-22")
	want := "# Sunday, November 22\n2026-11-22 2026-11-22 18:05 18:05 {{date:[unparsable}} 6:05 PM {{date:Qo}}\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.ParseInLocation("2006-01-02T15:04", s, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestDegradedAnswerCitesTheBestHits: offline, the answer cites the
// best-ranked hits of the question's words, not the latest entries.
func TestDegradedAnswerCitesTheBestHits(t *testing.T) {
	v := querytest.SampleVault(t)
	r := &Retriever{Index: v.Index(), Exclude: []string{"Margin"}, MaxEntries: 200}
	got, err := r.Question(context.Background(), "bench press program", nil, 1)
	if err != nil || len(got.Entries) < 2 {
		t.Fatalf("Retrieve: %d entries, %v", len(got.Entries), err)
	}
	s := &Session{Degraded: "the model is offline", Offline: got.Entries}
	_, cites := degradedAnswer(s)
	best := slices.MaxFunc(got.Entries, func(a, b Entry) int { return cmp.Compare(a.Rank, b.Rank) })
	if len(cites) == 0 || cites[0].Path != best.Path || best.Rank <= 0 {
		t.Errorf("first citation %+v, want the best-ranked entry %s (rank %.2f)", cites[0], best.Link(), best.Rank)
	}
	// The note named by a word of the question, which the date order put
	// among the earliest, is cited.
	if !slices.ContainsFunc(cites, func(c Citation) bool { return c.Path == "Reference/Training program.md" }) {
		t.Errorf("citations %v miss Reference/Training program.md", cites)
	}
}

// TestRetrieverSectionSkipsCodeFences: a `# comment` inside a fenced code
// block is code, not a heading, so it does not cut the evidence short; the
// section runs to the next real heading of its level, sub-sections included.
func TestRetrieverSectionSkipsCodeFences(t *testing.T) {
	dir := t.TempDir()
	note := "---\ntags: [setup]\n---\n# Setup\n\nInstall the tools:\n\n```sh\n# fetch the sources\ngit clone repo\n```\n\n~~~~\n## not a heading either\n~~~~\n\n## Check\n\nRun the zebra check afterwards.\n\n# Next\n\nUnrelated text.\n"
	if err := os.WriteFile(filepath.Join(dir, "Setup.md"), []byte(note), 0o644); err != nil {
		t.Fatal(err)
	}
	v := querytest.IndexedVault(t, dir)
	r := &Retriever{Index: v.Index(), MaxEntries: 200}
	got, err := r.Retrieve(context.Background(), []Instruction{{Keywords: []string{"git clone"}}}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 1 {
		t.Fatalf("entries %v, want the Setup section", linksOf(got.Entries))
	}
	e := got.Entries[0]
	if e.Heading != "Setup" || e.Line != 4 {
		t.Errorf("entry %s line %d, want Setup at line 4", e.Link(), e.Line)
	}
	for _, want := range []string{"Install the tools:", "# fetch the sources", "git clone repo", "## not a heading either", "Check", "Run the zebra check afterwards."} {
		if !strings.Contains(e.Text, want) {
			t.Errorf("section text lacks %q:\n%s", want, e.Text)
		}
	}
	if strings.Contains(e.Text, "Unrelated") {
		t.Errorf("section text runs into the next section:\n%s", e.Text)
	}
}

// TestDegradedAnswerCitesWhatAnswersTheQuestion: offline, the question's
// words are searched together, so the section that holds all of them is
// cited first, ahead of notes titled by its most common word (a note
// named "Canvas" in each language of a help vault); a question written
// without spaces (Chinese) is searched by its character pairs, and cites
// the note that holds its rare ones rather than nothing.
func TestDegradedAnswerCitesWhatAnswersTheQuestion(t *testing.T) {
	for _, c := range []struct {
		question      string
		notes         map[string]string
		path, heading string
	}{{
		question: "How do I embed a canvas in a note?",
		notes: map[string]string{
			"de/Canvas.md":      "# Canvas\n\nCanvas ist eine Erweiterung für visuelle Notizen.\n",
			"es/Canvas.md":      "# Canvas\n\nCanvas es un complemento para notas visuales.\n",
			"it/Canvas.md":      "# Canvas\n\nCanvas è un plugin per appunti visivi.\n",
			"pt/Canvas.md":      "# Canvas\n\nCanvas é um plugin para notas visuais.\n",
			"en/Canvas.md":      "# Canvas\n\nCanvas is a plugin for visual thinking.\n\n## Cards\n\nAdd cards to a canvas.\n",
			"en/Embed files.md": "# Embed files\n\nYou can embed files of many kinds.\n\n## Embed an image\n\nWrite ![[photo.png]].\n\n## Embed a canvas in a note\n\nTo embed a canvas in a note, write ![[Plan.canvas]].\n",
			"en/Daily note.md":  "# Daily note\n\nOne note a day.\n",
		},
		path: "en/Embed files.md", heading: "Embed a canvas in a note",
	}, {
		question: "指针和数组有什么区别？",
		notes: map[string]string{
			"第十章 数组和指针.md": "# 数组和指针\n\n数组名是数组首元素的地址，指针可以指向数组的元素。\n",
			"第九章 函数.md":    "# 函数\n\n函数是完成特定任务的独立程序代码。什么是函数原型？\n",
			"第三章 数据.md":    "# 数据\n\n整数和浮点数有什么区别？\n",
		},
		path: "第十章 数组和指针.md", heading: "数组和指针",
	}, {
		question: "Why did my bench press feel heavy?",
		notes: map[string]string{
			"Tasks/Bench 225.md":           "# Bench 225\n\nA clean single at 225 before the year ends.\n",
			"Reference/Bench technique.md": "# Bench technique\n\nTuck the elbows, drive with the legs.\n",
			"Reference/Heavy days.md":      "# Heavy days\n\nOne heavy day a week, squat or deadlift.\n",
			"Daily/2026-11-13.md":          "## 07:15\n\nSlept badly.\n\n## 18:15\n\nBench press felt really heavy today.\n",
			"Reference/Overhead press.md":  "# Overhead press\n\nStrict, no leg drive.\n",
		},
		path: "Daily/2026-11-13.md", heading: "18:15",
	}, {
		// The note says "restaurant"; the question asks for "restaurants".
		question: "Which restaurants did I like in Kyoto?",
		notes: map[string]string{
			"Places/Kyoto.md":              "# Kyoto\n\nTemples, and walks along the river.\n",
			"Places/Restaurants to try.md": "# Restaurants to try\n\nThe ramen place in Osaka, someday.\n",
			"Places/Okonomi House.md":      "---\ncategories: [places]\n---\n# Okonomi House\n\nA small restaurant in Kyoto. The best okonomiyaki we had.\n",
		},
		path: "Places/Okonomi House.md", heading: "Okonomi House",
	}, {
		// "How do I make a note?": the FAQ's headings hold the question's
		// own how (어떻게) and question ending (나요), not its subject.
		question: "노트를 어떻게 만드나요?",
		notes: map[string]string{
			"ko/자주 묻는 질문.md":    "# 자주 묻는 질문\n\n## 비밀번호를 잊어버리면 어떻게 되나요?\n\n복구할 수 없어요.\n\n## 노트는 어디에 저장되나요?\n\n보관함 폴더에 저장돼요.\n",
			"ko/첫 번째 노트 만들기.md": "# 첫 번째 노트 만들기\n\n새 노트를 만드는 방법: 리본에서 새 노트를 선택하세요.\n",
			"ko/내부 링크.md":       "# 내부 링크\n\n다른 노트에 링크하려면 대괄호 두 개를 입력하세요.\n",
		},
		path: "ko/첫 번째 노트 만들기.md", heading: "첫 번째 노트 만들기",
	}} {
		dir := t.TempDir()
		for p, text := range c.notes {
			vaulttest.Write(t, dir, p, text)
		}
		v := querytest.IndexedVault(t, dir)
		r := &Retriever{Index: v.Index(), MaxEntries: 200}
		got, err := r.Question(context.Background(), c.question, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		_, cites := degradedAnswer(&Session{Degraded: "the model is offline", Offline: got.Entries})
		if len(cites) == 0 || cites[0].Path != c.path || cites[0].Heading != c.heading {
			t.Errorf("%s: citations %v, want %s#%s first", c.question, cites, c.path, c.heading)
		}
		if len(got.Attempts) != 1 || got.Attempts[0].Found != len(got.Entries) || len(got.Entries) != len(c.notes) {
			t.Errorf("%s: attempts %+v, %d entries: want one attempt that found every note", c.question, got.Attempts, len(got.Entries))
		}
	}
}

func TestOtherNumber(t *testing.T) {
	for w, want := range map[string][]string{
		"restaurants": {"restaurant"},
		"restaurant":  {"restaurants"},
		"cities":      {"city", "citie"},
		"city":        {"cities"},
		"movies":      {"movy", "movie"},
		"boxes":       {"box", "boxe"},
		"presses":     {"press", "presse"},
		"press":       {"presses"},
		"status":      {"statuses"},
		"analysis":    {"analysises"},
		"monkey":      {"monkeys"},
		"notes":       {"note"},
		"day":         nil, // too short to tell
		"notizen":     {"notizens"},
		"café":        nil, // not a to z
		"指针":          nil,
	} {
		if got := otherNumber(w); !slices.Equal(got, want) {
			t.Errorf("otherNumber(%q) = %q, want %q", w, got, want)
		}
	}
	vocab := map[string][]string{"bench press": {"bp"}}
	got := withOtherNumber(vocab, []string{"Bench Press", "kyoto"})
	if want := []string{"bp", "bench presses"}; !slices.Equal(got["bench press"], want) {
		t.Errorf("bench press: %q, want %q", got["bench press"], want)
	}
	if want := []string{"kyotos"}; !slices.Equal(got["kyoto"], want) {
		t.Errorf("kyoto: %q, want %q", got["kyoto"], want)
	}
	if len(vocab["bench press"]) != 1 {
		t.Errorf("the vocabulary changed: %q", vocab)
	}
}

func TestHangulStems(t *testing.T) {
	for q, want := range map[string]string{
		"노트를 어떻게 만드나요?":         "노트를 만드",
		"동기화는 어떻게 설정하나요?":       "동기화는 설정하",
		"캔버스에 노트를 추가하려면?":       "캔버스에 노트를 추가하려면",
		"무엇이 되나요?":              "",
		"obsidian 노트 어떻게":       "obsidian 노트",
		"how do i make a note?": "how do i make a note?",
	} {
		if got := hangulStems(q); got != want {
			t.Errorf("hangulStems(%q) = %q, want %q", q, got, want)
		}
	}
}

// A note made of properties alone (a movie and its rating) is quoted by
// its properties: to the model in the prompt, and in an offline answer.
// Only the entry that quotes a note's first section carries them.
func TestEntriesQuoteProperties(t *testing.T) {
	dir := t.TempDir()
	vaulttest.Write(t, dir, "Movies/Heat.md", "---\ncategories: movies\nrating: 9\nyear: 1995\n---\n")
	vaulttest.Write(t, dir, "Movies/Ronin.md", "---\ncategories: movies\nrating: 7\n---\nThe car chases.\n\n## Cast\n\nRobert De Niro, as Sam in the movies' best chase.\n")
	v := querytest.IndexedVault(t, dir)
	r := &Retriever{Index: v.Index(), MaxEntries: 200}
	got, err := r.Question(context.Background(), "which movies did I rate?", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	byLink := map[string]Entry{}
	for _, en := range got.Entries {
		byLink[en.Link()] = en
	}
	heat, cast := byLink["[[Movies/Heat]]"], byLink["[[Movies/Ronin#Cast]]"]
	if heat.Properties != "categories: movies\nrating: 9\nyear: 1995" {
		t.Errorf("Heat's properties %q", heat.Properties)
	}
	if cast.Path == "" || cast.Properties != "" {
		t.Errorf("Ronin#Cast: %+v, want the section without the note's properties", cast)
	}
	if text := entriesText([]Entry{heat}); !strings.Contains(text, "rating: 9") {
		t.Errorf("prompt text %q holds no rating", text)
	}
	answer, _ := degradedAnswer(&Session{Degraded: "the model is offline", Offline: []Entry{heat}})
	if !strings.Contains(answer, "[[Movies/Heat]] categories: movies · rating: 9 · year: 1995") {
		t.Errorf("offline answer %q does not quote Heat's properties", answer)
	}
}
