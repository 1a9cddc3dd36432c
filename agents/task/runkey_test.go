package task

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRunKey(t *testing.T) {
	task := Source{ID: "Tasks/Ship.md", Fingerprint: "t1"}
	e1 := Source{ID: "Daily/2026-11-20.md#11:00", Fingerprint: "e1"}
	e2 := Source{ID: "Daily/2026-11-21.md#09:00", Fingerprint: "e2"}
	base := runKey("a1", "task-agent@1+ab", []Source{task, e1, e2}, nil)
	tests := []struct {
		name string
		key  RunKey
		same bool
	}{
		{"same state, entries in another order", runKey("a1", "task-agent@1+ab", []Source{e2, task, e1}, nil), true},
		{"an entry's text changed", runKey("a1", "task-agent@1+ab", []Source{task, e1, {ID: e2.ID, Fingerprint: "e2'"}}, nil), false},
		{"the task changed", runKey("a1", "task-agent@1+ab", []Source{{ID: task.ID, Fingerprint: "t2"}, e1, e2}, nil), false},
		{"an entry no longer links the task", runKey("a1", "task-agent@1+ab", []Source{task, e1}, nil), false},
		{"another template version", runKey("a1", "task-agent@2+ab", []Source{task, e1, e2}, nil), false},
		{"another agent", runKey("a2", "task-agent@1+ab", []Source{task, e1, e2}, nil), false},
		{"a decision since the last run", runKey("a1", "task-agent@1+ab", []Source{task, e1, e2}, []string{"c1:rejected"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.key == base) != tt.same {
				t.Errorf("key equal to the base: %v, want %v", tt.key == base, tt.same)
			}
		})
	}
}

func TestEntrySourcesIgnoreTheRestOfTheDay(t *testing.T) {
	a := entrySources(entriesOf("Daily/d.md", "11:00", "Demo of [[Ship]] went well."))
	b := entrySources(entriesOf("Daily/d.md", "11:00", "Demo of [[Ship]] went well."))
	if a[0].Fingerprint != b[0].Fingerprint || a[0].ID != "Daily/d.md#11:00" {
		t.Errorf("same entry gives %+v and %+v", a[0], b[0])
	}
	two := entrySources(append(entriesOf("Daily/d.md", "11:00", "one"), entriesOf("Daily/d.md", "11:00", "two")...))
	if two[0].ID == two[1].ID {
		t.Errorf("two entries with one heading share the id %s", two[0].ID)
	}
}

func TestOperationIDIsCanonical(t *testing.T) {
	id := func(key RunKey, tool, args string) string {
		t.Helper()
		op, err := operationID(key, tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	base := id("k", "record_observations", `{"observations":["a"]}`)
	tests := []struct {
		name, key, tool, args string
		same                  bool
	}{
		{"spacing", "k", "record_observations", `{ "observations" : [ "a" ] }`, true},
		{"key order", "k", "update_report", `{"tldr":"t","content":"c"}`, false},
		{"other arguments", "k", "record_observations", `{"observations":["b"]}`, false},
		{"other run", "k2", "record_observations", `{"observations":["a"]}`, false},
		{"other tool", "k", "set_task_language", `{"observations":["a"]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := id(RunKey(tt.key), tt.tool, tt.args); (got == base) != tt.same {
				t.Errorf("same id as the base: %v, want %v", got == base, tt.same)
			}
		})
	}
	if id("k", "update_report", `{"tldr":"t","content":"c"}`) != id("k", "update_report", `{"content":"c","tldr":"t"}`) {
		t.Error("argument key order changes the operation id")
	}
	if _, err := operationID("k", "x", json.RawMessage(`{not json`)); err == nil {
		t.Error("arguments that are not JSON got an operation id")
	}
}

func TestCoalescedDue(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	quiet, maxWait := 2*time.Second, 30*time.Second
	tests := []struct {
		name        string
		first, last time.Duration // after t0
		want        time.Duration
	}{
		{"one change waits the quiet period", 0, 0, 2 * time.Second},
		{"a later change restarts the quiet period", 0, 5 * time.Second, 7 * time.Second},
		{"a steady stream is cut at max wait", 0, 29 * time.Second, 30 * time.Second},
		{"max wait counts from the first change", 10 * time.Second, 39 * time.Second, 40 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := coalescedDue(t0.Add(tt.first), t0.Add(tt.last), quiet, maxWait); !got.Equal(t0.Add(tt.want)) {
				t.Errorf("due %s, want %s", got.Sub(t0), tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{
		{1, 30 * time.Second}, {2, time.Minute}, {3, 2 * time.Minute}, {7, 32 * time.Minute}, {8, time.Hour}, {40, time.Hour},
	}
	for _, tt := range tests {
		if got := backoff(tt.failures, 30*time.Second, time.Hour); got != tt.want {
			t.Errorf("backoff(%d) = %s, want %s", tt.failures, got, tt.want)
		}
	}
}
