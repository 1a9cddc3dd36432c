package note

import (
	"reflect"
	"testing"
)

func TestKind(t *testing.T) {
	opts := Options{Daily: DefaultDailyFormat(), TaskFolders: []string{"Tasks", "/Work/Todo/"}}
	tests := []struct {
		name   string
		path   string
		src    string
		kind   Kind
		date   string
		margin string
	}{
		{name: "plain note", path: "Ideas/x.md", src: "text", kind: KindNote},
		{name: "margin file", path: "Margin/Reports/x.md", src: "---\nmargin: report\ntype: task\n---\n", kind: KindMargin, margin: "report"},
		{name: "margin key wins over task folder", path: "Tasks/r.md", src: "---\nMargin: journal\n---\n", kind: KindMargin, margin: "journal"},
		{name: "type task", path: "x.md", src: "---\nType: Task\n---\n", kind: KindTask},
		{name: "task tag in list", path: "x.md", src: "---\ntags: [work, task]\n---\n", kind: KindTask},
		{name: "task tag in string with hash", path: "x.md", src: "---\ntags: \"#Task, work\"\n---\n", kind: KindTask},
		{name: "nested task tag is not task", path: "x.md", src: "---\ntags: [task/sub]\n---\n", kind: KindNote},
		{name: "inline task tag is not task", path: "x.md", src: "#task", kind: KindNote},
		{name: "task folder", path: "Tasks/Ship.md", src: "", kind: KindTask},
		{name: "task folder any case, sub-folder", path: "tasks/q4/Ship.md", src: "", kind: KindTask},
		{name: "task folder with slashes in config", path: "Work/Todo/a.md", src: "", kind: KindTask},
		{name: "folder name prefix is not the folder", path: "Tasks2/a.md", src: "", kind: KindNote},
		{name: "daily note", path: "Daily/2026-11-22.md", src: "", kind: KindDaily, date: "2026-11-22"},
		{name: "daily folder but not a date", path: "Daily/notes.md", src: "", kind: KindNote},
		{name: "task beats daily", path: "Daily/2026-11-22.md", src: "---\ntype: task\n---\n", kind: KindTask},
		{name: "broken frontmatter falls back to path", path: "Daily/2026-11-22.md", src: "---\n: [\n---\n", kind: KindDaily, date: "2026-11-22"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse(tt.path, []byte(tt.src), opts)
			if n.Kind != tt.kind || n.Date != tt.date || n.MarginKind != tt.margin {
				t.Errorf("kind %q date %q margin %q, want %q %q %q", n.Kind, n.Date, n.MarginKind, tt.kind, tt.date, tt.margin)
			}
			if (n.Task != nil) != (tt.kind == KindTask) {
				t.Errorf("Task = %v for kind %q", n.Task, n.Kind)
			}
		})
	}
}

func TestTitleAndAliases(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		src     string
		title   string
		aliases []string
	}{
		{name: "file stem", path: "Folder/My Note.md", title: "My Note"},
		{name: "upper-case extension", path: "A.MD", title: "A"},
		{name: "frontmatter title", path: "a.md", src: "---\ntitle: \"  Real  \"\n---\n", title: "Real"},
		{name: "alias list", path: "a.md", src: "---\naliases: [One, Two words]\n---\n", title: "a", aliases: []string{"One", "Two words"}},
		{name: "alias string split at commas only", path: "a.md", src: "---\naliases: Two words, Three\n---\n", title: "a", aliases: []string{"Two words", "Three"}},
		{name: "singular alias key", path: "a.md", src: "---\nalias: Solo\n---\n", title: "a", aliases: []string{"Solo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse(tt.path, []byte(tt.src), Options{})
			if n.Title != tt.title || !reflect.DeepEqual(n.Aliases, tt.aliases) {
				t.Errorf("title %q aliases %q, want %q %q", n.Title, n.Aliases, tt.title, tt.aliases)
			}
		})
	}
}

func TestHeadings(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Heading
	}{
		{
			name: "atx levels and markup stripped",
			src:  "# One\n\n## Two *em* `code` [link](x.md) ##\n###### Six\n",
			want: []Heading{
				{Level: 1, Text: "One", Line: 1, Offset: 0, Body: 6},
				{Level: 2, Text: "Two em code link", Line: 3, Offset: 7, Body: 42},
				{Level: 6, Text: "Six", Line: 4, Offset: 42, Body: 53},
			},
		},
		{
			name: "setext",
			src:  "Title\n=====\n\nSub\n---\n",
			want: []Heading{
				{Level: 1, Text: "Title", Line: 1, Offset: 0, Body: 12}, // after the underline
				{Level: 2, Text: "Sub", Line: 4, Offset: 13, Body: 21},
			},
		},
		{
			name: "not headings",
			src:  "#tag\n\n```\n# in code\n```\n\n    # indented code\n\n<div>\n# html\n</div>\n",
		},
		{
			name: "tabs before headings",
			src:  ">\t#\nabc\n>\t## T\n",
			want: []Heading{
				{Level: 1, Text: "", Line: 1, Offset: 0, Body: 4},
				{Level: 2, Text: "T", Line: 3, Offset: 8, Body: 15},
			},
		},
		{
			name: "after frontmatter, in a quote and empty",
			src:  "---\na: 1\n---\n> ## Quoted\n\n##\n",
			want: []Heading{
				{Level: 2, Text: "Quoted", Line: 4, Offset: 13, Body: 25},
				{Level: 2, Text: "", Line: 6, Offset: 26, Body: 29},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse("a.md", []byte(tt.src), Options{})
			if !reflect.DeepEqual(n.Headings, tt.want) {
				t.Errorf("Headings\n got %+v\nwant %+v", n.Headings, tt.want)
			}
			checkOffsets(t, []byte(tt.src), n)
		})
	}
}

func TestEntries(t *testing.T) {
	const daily = "Daily/2026-11-22.md"
	tests := []struct {
		name string
		path string
		src  string
		want []Entry
	}{
		{
			name: "preamble, entries, correction and deeper headings",
			path: daily,
			src: "# Sunday\nPreamble [[P]].\n" + // 0..24
				"## 07:30\nWoke [[A]].\n" + // 25..45
				"### Detail\nmore\n" + // 46..61
				"## 9:05 [Correction] late\nFix.\n" + // 62..92
				"## Notes\nnot an entry\n",
			want: []Entry{
				{Time: "07:30", Heading: "07:30", Line: 3, Start: 25, End: 62, Text: "Woke [[A]].\n### Detail\nmore",
					Links: []Link{{Target: "A", Offset: 39, End: 44, Line: 4}}},
				{Time: "09:05", Correction: true, Heading: "9:05 [Correction] late", Line: 7, Start: 62, End: 93, Text: "Fix."},
			},
		},
		{
			name: "last entry runs to the end of the file",
			path: daily,
			src:  "## 23:59 Night\nlast line",
			want: []Entry{{Time: "23:59", Heading: "23:59 Night", Line: 1, Start: 0, End: 24, Text: "last line"}},
		},
		{
			name: "a level-1 heading ends an entry",
			path: daily,
			src:  "## 10:00\na\n# Top\nb\n",
			want: []Entry{{Time: "10:00", Heading: "10:00", Line: 1, Start: 0, End: 11, Text: "a"}},
		},
		{
			name: "not entries",
			path: daily,
			src:  "## 24:00\n## 9:5\n## 12:60\n## 1230\n## 12:300\n### 10:00\n# 10:00\n```\n## 10:00\n```\n",
		},
		{
			name: "only daily notes have entries",
			path: "Notes/x.md",
			src:  "## 07:30\ntext\n",
		},
		{
			name: "crlf",
			path: daily,
			src:  "## 07:30\r\nA\r\n## 08:00\r\nB\r\n",
			want: []Entry{
				{Time: "07:30", Heading: "07:30", Line: 1, Start: 0, End: 13, Text: "A"},
				{Time: "08:00", Heading: "08:00", Line: 3, Start: 13, End: 26, Text: "B"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse(tt.path, []byte(tt.src), Options{Daily: DefaultDailyFormat()})
			if !reflect.DeepEqual(n.Entries, tt.want) {
				t.Errorf("Entries\n got %+v\nwant %+v", n.Entries, tt.want)
			}
			checkOffsets(t, []byte(tt.src), n)
		})
	}
}

// TestEntryLinksAreCapped checks that an entry's links share Note.Links
// without letting an append through one overwrite the other.
func TestEntryLinksAreCapped(t *testing.T) {
	n := Parse("Daily/2026-11-22.md", []byte("## 07:00\n[[a]]\n## 08:00\n[[b]]\n"), Options{Daily: DefaultDailyFormat()})
	if len(n.Entries) != 2 || len(n.Entries[0].Links) != 1 {
		t.Fatalf("entries %+v", n.Entries)
	}
	_ = append(n.Entries[0].Links, Link{Target: "clobber"})
	if n.Links[1].Target != "b" {
		t.Errorf("appending to an entry's links changed Note.Links: %+v", n.Links)
	}
}

func TestInvalidUTF8(t *testing.T) {
	src := []byte("---\ntitle: \xff\n---\n# H\xfe\n- [ ] a \xc3 [[b\xff]] #t\xffx\n")
	n := Parse("Tasks/\xff.md", src, Options{TaskFolders: []string{"Tasks"}})
	if n.FrontmatterError == "" {
		t.Error("invalid UTF-8 in YAML should be reported")
	}
	if len(n.Headings) != 1 || len(n.Checklist) != 1 || len(n.Links) != 1 || n.Links[0].Target != "b\xff" {
		t.Errorf("body not parsed: %+v", n)
	}
	if !reflect.DeepEqual(n.Tags, []string{"t"}) {
		t.Errorf("Tags = %q, want [t]", n.Tags)
	}
	checkOffsets(t, src, n)
}

// TaskNotes marks tasks by its own tag, tags below it included, or by a
// property with a value; the marks add to margin's own.
func TestKindByTaskNotesMarks(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		src  string
		kind Kind
	}{
		{name: "custom tag", opts: Options{TaskTags: []string{"todo"}}, src: "---\ntags: [home, Todo]\n---\n", kind: KindTask},
		{name: "tag below the custom tag", opts: Options{TaskTags: []string{"todo"}}, src: "---\ntags: \"#todo/errand\"\n---\n", kind: KindTask},
		{name: "tag that only starts like it", opts: Options{TaskTags: []string{"todo"}}, src: "---\ntags: [todos]\n---\n", kind: KindNote},
		{name: "task tag still marks", opts: Options{TaskTags: []string{"todo"}}, src: "---\ntags: [task]\n---\n", kind: KindTask},
		{name: "property", opts: Options{TaskProperty: TaskProperty{Name: "category", Value: "[[Task]]"}}, src: "---\nCategory: \"[[Task]]\"\n---\n", kind: KindTask},
		{name: "property in a list", opts: Options{TaskProperty: TaskProperty{Name: "category", Value: "[[Task]]"}}, src: "---\ncategory:\n  - \"[[Area]]\"\n  - \"[[Task]]\"\n---\n", kind: KindTask},
		{name: "property with another value", opts: Options{TaskProperty: TaskProperty{Name: "category", Value: "[[Task]]"}}, src: "---\ncategory: \"[[Project]]\"\n---\n", kind: KindNote},
		{name: "boolean property", opts: Options{TaskProperty: TaskProperty{Name: "isTask", Value: "true"}}, src: "---\nisTask: true\n---\n", kind: KindTask},
		{name: "boolean property false", opts: Options{TaskProperty: TaskProperty{Name: "isTask", Value: "true"}}, src: "---\nisTask: false\n---\n", kind: KindNote},
		{name: "property without a value marks nothing", opts: Options{TaskProperty: TaskProperty{Name: "isTask"}}, src: "---\nisTask: \"\"\n---\n", kind: KindNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := Parse("Notes/x.md", []byte(tt.src), tt.opts); n.Kind != tt.kind || (n.Task != nil) != (tt.kind == KindTask) {
				t.Errorf("kind %q (task %v), want %q", n.Kind, n.Task, tt.kind)
			}
		})
	}
}
