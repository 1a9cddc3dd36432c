package note

import (
	"slices"
	"testing"
	"time"
)

func TestDailyFormatDate(t *testing.T) {
	tests := []struct {
		name   string
		format DailyFormat
		path   string
		date   string
	}{
		{name: "default", format: DefaultDailyFormat(), path: "Daily/2026-11-22.md", date: "2026-11-22"},
		{name: "folder any case", format: DefaultDailyFormat(), path: "daily/2026-11-22.md", date: "2026-11-22"},
		{name: "wrong folder", format: DefaultDailyFormat(), path: "Notes/2026-11-22.md"},
		{name: "sub-folder of the folder", format: DefaultDailyFormat(), path: "Daily/old/2026-11-22.md"},
		{name: "not markdown", format: DefaultDailyFormat(), path: "Daily/2026-11-22.txt"},
		{name: "impossible day", format: DefaultDailyFormat(), path: "Daily/2026-02-30.md"},
		{name: "no zero padding", format: DefaultDailyFormat(), path: "Daily/2026-1-2.md"},
		{name: "vault root", format: DailyFormat{Format: MustMoment("YYYY-MM-DD")}, path: "2026-11-22.md", date: "2026-11-22"},
		{name: "vault root rejects folders", format: DailyFormat{Format: MustMoment("YYYY-MM-DD")}, path: "x/2026-11-22.md"},
		{name: "nested layout", format: DailyFormat{Folder: "/Journal/", Format: MustMoment("YYYY/MM/YYYY-MM-DD")}, path: "Journal/2026/11/2026-11-22.md", date: "2026-11-22"},
		{name: "nested layout disagreeing", format: DailyFormat{Folder: "Journal", Format: MustMoment("YYYY/MM/YYYY-MM-DD")}, path: "Journal/2026/10/2026-11-22.md"},
		{name: "weekday must match", format: DailyFormat{Folder: "D", Format: MustMoment("YYYY-MM-DD ddd")}, path: "D/2026-11-22 Mon.md"},
		{name: "weekday matching", format: DailyFormat{Folder: "D", Format: MustMoment("YYYY-MM-DD ddd")}, path: "D/2026-11-22 Sun.md", date: "2026-11-22"},
		{name: "month names any case", format: DailyFormat{Format: MustMoment("MMMM D, YYYY")}, path: "november 22, 2026.md", date: "2026-11-22"},
		{name: "zero format", format: DailyFormat{}, path: "Daily/2026-11-22.md"},
		{name: "an older format", format: DailyFormat{Folder: "D", Format: MustMoment("YYYY-MM-DD ddd"), Older: []Moment{MustMoment("YYYY-MM-DD")}}, path: "D/2026-11-22.md", date: "2026-11-22"},
		{name: "an older format is as strict", format: DailyFormat{Folder: "D", Format: MustMoment("YYYY-MM-DD ddd"), Older: []Moment{MustMoment("YYYY-MM-DD")}}, path: "D/2026-11-22 x.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			date, ok := tt.format.Date(tt.path)
			if date != tt.date || ok != (tt.date != "") {
				t.Errorf("Date(%q) = %q, %v; want %q", tt.path, date, ok, tt.date)
			}
		})
	}
}

func TestDailyFormatPaths(t *testing.T) {
	day := time.Date(2026, 11, 2, 15, 4, 0, 0, time.UTC)
	tests := []struct {
		name   string
		format DailyFormat
		want   []string // Path first
	}{
		{"default", DefaultDailyFormat(), []string{"Daily/2026-11-02.md"}},
		{"root", DailyFormat{Format: MustMoment("YYYY-MM-DD")}, []string{"2026-11-02.md"}},
		{"nested", DailyFormat{Folder: "Journal/", Format: MustMoment("YYYY/MM/ddd D")}, []string{"Journal/2026/11/Mon 2.md"}},
		{"an older format", DailyFormat{Folder: "D", Format: MustMoment("YYYY-MM-DD ddd"), Older: []Moment{MustMoment("YYYY-MM-DD")}},
			[]string{"D/2026-11-02 Mon.md", "D/2026-11-02.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.format.Paths(day)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Paths = %q, want %q", got, tt.want)
			}
			if p := tt.format.Path(day); p != tt.want[0] {
				t.Errorf("Path = %q, want %q", p, tt.want[0])
			}
			for _, p := range got {
				if date, ok := tt.format.Date(p); !ok || date != "2026-11-02" {
					t.Errorf("Date(%q) = %q, %v; want the same day back", p, date, ok)
				}
			}
		})
	}
}
