package review

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
)

// serve runs the scheduler until the test ends.
func (r *rig) serve() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.rv.Run(ctx); err != nil {
			r.t.Error(err)
		}
	}()
	r.t.Cleanup(func() { cancel(); <-done })
}

// advance moves the clock to t and waits until the scheduler has done
// what that time calls for and waits again.
func (r *rig) advance(t time.Time) {
	r.t.Helper()
	n := r.clock.waitCount()
	r.clock.set(t)
	waitUntil(r.t, "the scheduler to wait again", func() bool { return r.clock.waitCount() > n })
}

func dues(runs []Run) []string {
	var out []string
	for i := len(runs) - 1; i >= 0; i-- {
		out = append(out, runs[i].Due.Format("2006-01-02 15:04")+" "+runs[i].Status)
	}
	return out
}

// The scheduler runs a review at its time, not before; after the machine
// slept through three runs it catches up once, for the latest.
func TestScheduleAndCatchUp(t *testing.T) {
	r := newRig(t, nil)
	r.clock.set(at("2026-11-28 06:00"))
	r.serve()
	waitUntil(t, "the scheduler to wait", func() bool { return r.clock.waitCount() > 0 })
	// Its first start runs the review for the latest time it was due.
	if got := strings.Join(dues(r.runs()), ", "); got != "2026-11-27 07:00 done" {
		t.Fatalf("runs at the first start: %s", got)
	}
	r.advance(at("2026-11-28 06:59"))
	if n := len(r.runs()); n != 1 {
		t.Fatalf("%d runs before 07:00, want 1", n)
	}
	r.advance(at("2026-11-28 07:00"))
	if got := strings.Join(dues(r.runs()), ", "); got != "2026-11-27 07:00 done, 2026-11-28 07:00 done" {
		t.Fatalf("runs at 07:00: %s", got)
	}
	r.advance(at("2026-11-28 07:01"))
	if n := len(r.runs()); n != 2 {
		t.Fatalf("%d runs a minute later, want 2", n)
	}
	// Asleep from the 28th until the 1st at 09:00: the 29th, 30th and
	// 1st were missed; one run catches up, for the 1st.
	r.advance(at("2026-12-01 09:00"))
	r.advance(at("2026-12-01 09:01"))
	got := r.runs()
	if s := strings.Join(dues(got), ", "); s != "2026-11-27 07:00 done, 2026-11-28 07:00 done, 2026-12-01 07:00 done" {
		t.Fatalf("runs after the sleep: %s", s)
	}
	if got[0].Note != "Margin/Reviews/daily/2026-12-01.md" || !got[0].From.Equal(at("2026-11-28 07:00")) {
		t.Errorf("the catch-up run wrote %s covering from %s; want the 1st's note covering since the last run", got[0].Note, got[0].From)
	}
}

func TestWeeklyAndCronSchedules(t *testing.T) {
	for _, tc := range []struct {
		schedule, now, prev, next string
	}{
		{"daily 07:00", "2026-11-28 06:00", "2026-11-27 07:00", "2026-11-28 07:00"},
		{"weekly mon 08:00", "2026-11-28 06:00", "2026-11-23 08:00", "2026-11-30 08:00"},
		{"weekly Monday 08:00", "2026-11-30 08:00", "2026-11-30 08:00", "2026-12-07 08:00"},
		{"30 18 * * 1-5", "2026-11-28 12:00", "2026-11-27 18:30", "2026-11-30 18:30"},
		{"0 9,17 1 * *", "2026-11-28 12:00", "2026-11-01 17:00", "2026-12-01 09:00"},
		{"0 8 * * 7", "2026-11-28 12:00", "2026-11-22 08:00", "2026-11-29 08:00"},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			s, err := ParseSchedule(tc.schedule)
			if err != nil {
				t.Fatal(err)
			}
			prev, ok := s.Prev(at(tc.now))
			if !ok || !prev.Equal(at(tc.prev)) {
				t.Errorf("Prev(%s) = %s, want %s", tc.now, prev, tc.prev)
			}
			next, ok := s.Next(at(tc.now))
			if !ok || !next.Equal(at(tc.next)) {
				t.Errorf("Next(%s) = %s, want %s", tc.now, next, tc.next)
			}
		})
	}
	for _, bad := range []string{"", "daily", "daily 25:00", "weekly funday 08:00", "hourly", "60 * * * *", "* * * *", "5-1 * * * *"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted it", bad)
		}
	}
}

// A crash during the model call leaves no note and the run's row
// running; the next start redoes that run once, into the same note, for
// the same period.
func TestCrashDuringModelCall(t *testing.T) {
	ctx, crash := context.WithCancel(context.Background())
	calls := 0
	fake, model := fakeModel(t, func(req llmtest.OllamaRequest) llmtest.Reply {
		calls++
		if calls == 1 {
			crash() // the process dies while the model writes
			return llmtest.Reply{Delay: 10 * time.Second}
		}
		return citing(req)
	})
	r := newRig(t, model)
	if _, err := r.rv.RunNow(ctx, "daily"); err == nil {
		t.Fatal("the cut run reported no error")
	}
	runs := r.runs()
	if len(runs) != 1 || runs[0].Status != StatusRunning {
		t.Fatalf("after the crash: %+v, want one running run", runs)
	}
	if _, err := r.v.Root().Read(runs[0].Note); err == nil {
		t.Fatalf("the cut run wrote its note")
	}

	r.reopen()
	for range 2 { // a second start finds nothing left to do
		if err := r.rv.Resume(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	runs = r.runs()
	if len(runs) != 1 || runs[0].Status != StatusDone || runs[0].GeneratedBy != "qwen2.5:7b" {
		t.Fatalf("after the restart: %+v, want the one run done by the model", runs)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2: the cut one and the redo", n)
	}
	got := r.read(runs[0].Note)
	if !strings.Contains(got, "run: 1\n") || !strings.Contains(got, "The kiln element still needs ordering.") {
		t.Errorf("the redone note:\n%s", got)
	}
}

// A crash after the note was written and before its run was marked done:
// the next start marks it done without a model call or a second note.
func TestCrashAfterNoteWritten(t *testing.T) {
	fake, model := fakeModel(t, citing)
	r := newRig(t, model)
	run := r.runNow("daily")
	before := r.read(run.Note)
	if _, err := r.v.DB().Exec(`UPDATE review_runs SET status = 'running', finished_at = '' WHERE id = ?`, run.ID); err != nil {
		t.Fatal(err)
	}
	r.reopen()
	if err := r.rv.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	runs := r.runs()
	if len(runs) != 1 || runs[0].Status != StatusDone || runs[0].GeneratedBy != "qwen2.5:7b" {
		t.Fatalf("after the restart: %+v", runs)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1: the note was written", n)
	}
	if r.read(run.Note) != before {
		t.Error("the note was rewritten")
	}
}
