package note

import (
	"reflect"
	"testing"
)

func TestTaskFields(t *testing.T) {
	tests := []struct {
		name string
		path string
		fm   string
		want Task
	}{
		{
			name: "everything set",
			path: "Tasks/ship.md",
			fm: "title: Ship v2\nStatus: In Progress\nPRIORITY: p0\ndue: 2026-11-25\nscheduled: \"2026-11-20\"\n" +
				"estimate: 1h30m\ntags: [task, work, Work]\nlabels: backend, q4\nlanguage: de\n",
			want: Task{Title: "Ship v2", Status: "in-progress", Priority: "P0", Due: "2026-11-25", Scheduled: "2026-11-20",
				Estimate: 90, Labels: []string{"work", "backend", "q4"}, Language: "de"},
		},
		{
			name: "defaults",
			path: "Tasks/Write docs.md",
			want: Task{Title: "Write docs"},
		},
		{
			name: "word priorities, timestamps and TaskNotes estimate",
			path: "Tasks/x.md",
			fm:   "status: canceled\npriority: Medium\ndue: 2026-11-25T09:00\nscheduled: 2026-11-20T08:00:00Z\ntimeEstimate: 45\n",
			want: Task{Title: "x", Status: "cancelled", Priority: "P2", Due: "2026-11-25", Scheduled: "2026-11-20", Estimate: 45},
		},
		{
			name: "custom values kept, bad dates dropped, wikilink date read",
			path: "Tasks/x.md",
			fm:   "status: Waiting_On_Review\npriority: Someday\ndue: tomorrow\nscheduled: \"[[2026-11-20]]\"\n",
			want: Task{Title: "x", Status: "waiting-on-review", Priority: "Someday", Scheduled: "2026-11-20"},
		},
		{
			name: "numeric priority and estimate wins over timeEstimate",
			path: "Tasks/x.md",
			fm:   "priority: 3\nestimate: 2h\ntimeEstimate: 30\n",
			want: Task{Title: "x", Priority: "P3", Estimate: 120},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := ""
			if tt.fm != "" {
				src = "---\n" + tt.fm + "---\n"
			}
			n := Parse(tt.path, []byte(src), Options{TaskFolders: []string{"Tasks"}})
			if n.FrontmatterError != "" {
				t.Fatal(n.FrontmatterError)
			}
			if n.Task == nil || !reflect.DeepEqual(*n.Task, tt.want) {
				t.Errorf("Task\n got %+v\nwant %+v", n.Task, tt.want)
			}
		})
	}
}

func TestEstimateMinutes(t *testing.T) {
	tests := []struct {
		in   any
		want int
	}{
		{"90m", 90}, {"2h", 120}, {"1.5h", 90}, {"1d", 480}, {"1h30m", 90}, {"1h 30m", 90},
		{"2 hours", 120}, {"45 min", 45}, {"1w", 2400}, {"90", 90}, {" 15 ", 15},
		{45, 45}, {1.6, 2}, {int64(30), 30}, {uint64(20), 20},
		{"", 0}, {"soon", 0}, {"5x", 0}, {"1h 30", 0}, {"-5m", 0}, {-10, 0}, {true, 0}, {nil, 0},
	}
	for _, tt := range tests {
		t.Run(scalarString(tt.in), func(t *testing.T) {
			if got := estimateMinutes(tt.in); got != tt.want {
				t.Errorf("estimateMinutes(%#v) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// An estimate margin writes reads back as the same minutes.
func TestFormatMinutesReadsBack(t *testing.T) {
	for m, want := range map[int]string{45: "45m", 60: "1h", 90: "1h30m", 120: "2h", 61: "1h1m"} {
		got := FormatMinutes(m)
		if got != want || estimateMinutes(got) != m {
			t.Errorf("FormatMinutes(%d) = %q, read back as %d; want %q", m, got, estimateMinutes(got), want)
		}
	}
}
