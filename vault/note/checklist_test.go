package note

import (
	"reflect"
	"testing"
)

func TestChecklistLines(t *testing.T) {
	src := "- [ ] open\n" + // 0..10
		"* [x] done\n" + // 11..21
		"+ [X] upper\n" + // 22..33
		"1. [-] cancelled\n" + // 34..50
		"2) [/] doing\n" + // 51..63
		"   - [>] custom\n" + // 64..79
		"- [ ]\n" + // 80..85 empty text
		"- [ ]no space\n" + // 86..99 not an item
		"- [[link]]\n" + // 100..110 not an item
		"- plain\n" + // 111..118
		"> - [ ] quoted\r\n" + // 119..134 (End before \r)
		"```\n- [ ] code\n```\n"
	want := []ChecklistItem{
		{Line: 1, Offset: 0, End: 10, State: ' ', Text: "open", Raw: "- [ ] open"},
		{Line: 2, Offset: 11, End: 21, State: 'x', Text: "done", Raw: "* [x] done"},
		{Line: 3, Offset: 22, End: 33, State: 'x', Text: "upper", Raw: "+ [X] upper"},
		{Line: 4, Offset: 34, End: 50, State: '-', Text: "cancelled", Raw: "1. [-] cancelled"},
		{Line: 5, Offset: 51, End: 63, State: '/', Text: "doing", Raw: "2) [/] doing"},
		{Line: 6, Offset: 64, End: 79, State: '>', Text: "custom", Raw: "   - [>] custom"},
		{Line: 7, Offset: 80, End: 85, State: ' ', Text: "", Raw: "- [ ]"},
		{Line: 11, Offset: 119, End: 133, State: ' ', Text: "quoted", Raw: "> - [ ] quoted"},
	}
	n := Parse("a.md", []byte(src), Options{})
	if !reflect.DeepEqual(n.Checklist, want) {
		t.Errorf("Checklist\n got %+v\nwant %+v", n.Checklist, want)
	}
	checkOffsets(t, []byte(src), n)
}

func TestChecklistNested(t *testing.T) {
	src := "- [ ] parent\n  - [x] child\n    1. [ ] grandchild\n- [ ] sibling\n  continuation\n"
	n := Parse("a.md", []byte(src), Options{})
	var got []string
	for _, c := range n.Checklist {
		got = append(got, c.Text)
	}
	if want := []string{"parent", "child", "grandchild", "sibling"}; !reflect.DeepEqual(got, want) {
		t.Errorf("items %q, want %q", got, want)
	}
	if c := n.Checklist[2]; c.Line != 3 || c.Offset != 27 || c.End != 48 {
		t.Errorf("grandchild at line %d [%d,%d), want line 3 [27,48)", c.Line, c.Offset, c.End)
	}
	checkOffsets(t, []byte(src), n)
}

func TestChecklistFields(t *testing.T) {
	tests := []struct {
		name string
		line string
		want ChecklistItem // Line, Offset, End, State and Raw are filled in
	}{
		{
			name: "all Tasks emoji",
			line: "- [ ] Ship it 🔺 🛫 2026-11-20 ⏳ 2026-11-21 📅 2026-11-25 ✅ 2026-11-24 ❌ 2026-11-23 ➕ 2026-11-01 🆔 ab-1 ⛔ x1,y_2, z",
			want: ChecklistItem{Text: "Ship it", Priority: "highest", Start: "2026-11-20", Scheduled: "2026-11-21",
				Due: "2026-11-25", Done: "2026-11-24", Cancelled: "2026-11-23", ID: "ab-1",
				DependsOn: []string{"x1", "y_2", "z"}, Fields: map[string]string{"created": "2026-11-01"}},
		},
		{
			name: "priorities and variation selectors",
			line: "- [ ] a ⏫ b 🔽️ c ⏳️ 2026-01-02",
			want: ChecklistItem{Text: "a b c", Priority: "high", Scheduled: "2026-01-02"},
		},
		{
			name: "alternate due emoji, low and lowest",
			line: "- [ ] 🗓 2026-01-02 x ⏬",
			want: ChecklistItem{Text: "x", Due: "2026-01-02", Priority: "lowest"},
		},
		{
			name: "emoji without a date stays text",
			line: "- [x] Celebrate ✅ soon 📅",
			want: ChecklistItem{Text: "Celebrate ✅ soon 📅"},
		},
		{
			name: "recurrence runs to the next field",
			line: "- [ ] Water plants 🔁 every week on Sunday 📅 2026-11-29 🏁 delete",
			want: ChecklistItem{Text: "Water plants", Due: "2026-11-29",
				Fields: map[string]string{"repeat": "every week on Sunday", "oncompletion": "delete"}},
		},
		{
			name: "dataview fields",
			line: "- [ ] Call [due:: 2026-11-25] (Owner:: [[Bob]]) [priority:: High] [completion:: 2026-11-26] [dependsOn:: a, b] [id:: c]",
			want: ChecklistItem{Text: "Call", Due: "2026-11-25", Priority: "high", Done: "2026-11-26",
				DependsOn: []string{"a", "b"}, ID: "c",
				Fields: map[string]string{"due": "2026-11-25", "owner": "[[Bob]]", "priority": "High",
					"completion": "2026-11-26", "dependson": "a, b", "id": "c"}},
		},
		{
			name: "not dataview",
			line: "- [ ] see [link](x.md) and [a: b] (c) [[d]]",
			want: ChecklistItem{Text: "see [link](x.md) and [a: b] (c) [[d]]"},
		},
		{
			name: "emoji field wins over a later dataview field",
			line: "- [ ] t 📅 2026-01-01 [due:: 2026-02-02]",
			want: ChecklistItem{Text: "t", Due: "2026-01-01", Fields: map[string]string{"due": "2026-02-02"}},
		},
		{
			name: "change-set line with block id",
			line: "- [-] Set estimate to 2h ❌ 2026-11-22 — too long ^c1",
			want: ChecklistItem{Text: "Set estimate to 2h — too long", Cancelled: "2026-11-22", BlockID: "c1"},
		},
		{
			name: "caret that is not a block id",
			line: "- [ ] 2^10 is ^not_id",
			want: ChecklistItem{Text: "2^10 is ^not_id"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := Parse("a.md", []byte(tt.line+"\n"), Options{})
			if len(n.Checklist) != 1 {
				t.Fatalf("got %d items", len(n.Checklist))
			}
			want := tt.want
			want.Line, want.Offset, want.End, want.Raw = 1, 0, len(tt.line), tt.line
			want.State = rune(tt.line[3])
			if want.State == 'X' {
				want.State = 'x'
			}
			if got := n.Checklist[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("item\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
