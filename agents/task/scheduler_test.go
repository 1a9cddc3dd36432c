package task

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/margin-md/margin/vault/index"
)

// The scheduler's tests run in a synctest bubble: time.Now, timers and
// AfterFunc are virtual there, and time moves only when every goroutine
// of the bubble waits, so each wake is seen at its exact time.

// schedRig is a scheduler whose wakes are recorded, then run by work.
type schedRig struct {
	t      *testing.T
	s      *scheduler
	ctx    context.Context
	cancel context.CancelFunc
	t0     time.Time

	mu      sync.Mutex
	woke    []string // "agent@when: reason", when since t0
	running int
	most    int // wakes running at once, at most
}

// work is what a wake does after it is recorded; nil ends it at once.
type work func(ctx context.Context, id string) (retryAt time.Time)

// newSchedRig makes a scheduler in the test's bubble; it begins with
// begin. Zero options take their defaults.
func newSchedRig(t *testing.T, opts Options, w work) *schedRig {
	opts.setDefaults()
	r := &schedRig{t: t, t0: time.Now()}
	r.ctx, r.cancel = context.WithCancel(t.Context())
	r.s = newScheduler(opts, func(ctx context.Context, id string, req wakeRequest) (time.Time, error) {
		r.mu.Lock()
		line := fmt.Sprintf("%s@%s: %s", id, time.Since(r.t0), req.reason)
		if req.force {
			line += " (forced)"
		}
		r.woke = append(r.woke, line)
		r.running++
		r.most = max(r.most, r.running)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
		}()
		if w == nil {
			return time.Time{}, nil
		}
		return w(ctx, id), nil
	})
	t.Cleanup(func() {
		r.cancel()
		r.s.stop()
	})
	return r
}

func (r *schedRig) begin() { r.s.begin(r.ctx) }

// until sleeps until d after the rig was made.
func (r *schedRig) until(d time.Duration) {
	time.Sleep(d - time.Since(r.t0))
}

// kick schedules k for agent id at d after the rig was made.
func (r *schedRig) kick(d time.Duration, id string, k kick) {
	r.until(d)
	k.agent = id
	r.s.schedule(k)
}

// expect checks the wakes so far, once every goroutine of the bubble waits.
func (r *schedRig) expect(want ...string) {
	r.t.Helper()
	synctest.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Equal(r.woke, want) {
		r.t.Errorf("at %s the wakes were\n\t%q\nwant\n\t%q", time.Since(r.t0), r.woke, want)
	}
}

func change(reason string) kick  { return kick{reason: reason, mode: kickCoalesce} }
func request(reason string) kick { return kick{reason: reason, mode: kickNow} }

// Changes coalesce: each one within the quiet period puts the wake off,
// and the one wake carries every reason.
func TestSchedulerCoalescesWithinTheQuietPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second, MaxWait: 30 * time.Second}, nil)
		r.begin()
		r.kick(0, "a", change("task changed"))
		r.kick(1*time.Second, "a", change("linked entry changed"))
		r.kick(1500*time.Millisecond, "a", change("task changed"))
		r.until(3499 * time.Millisecond)
		r.expect()
		r.until(time.Minute)
		r.expect("a@3.5s: task changed, linked entry changed")
	})
}

// A steady stream of changes, one a second with a quiet period of two,
// never goes quiet: the max wait after the first change still wakes the
// agent, and the stream's end wakes it after the quiet period.
func TestSchedulerMaxWaitBoundsASteadyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second, MaxWait: 10250 * time.Millisecond}, nil)
		r.begin()
		for i := range 25 { // at 0.5s, 1.5s, … 24.5s
			r.kick(500*time.Millisecond+time.Duration(i)*time.Second, "a", change("task changed"))
		}
		r.until(time.Minute)
		r.expect(
			"a@10.75s: task changed", // 0.5s + max wait
			"a@21.75s: task changed", // 11.5s, the first change after it, + max wait
			"a@26.5s: task changed",  // 24.5s, the last, + quiet period
		)
	})
}

// At most wakeSlots wakes run at once; the others wait in line and start,
// oldest first, as slots come free.
func TestSchedulerBoundsWakesBySlotsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		takes := map[string]time.Duration{"a": 10 * time.Second, "b": 20 * time.Second, "c": 15 * time.Second, "d": time.Second, "e": time.Second}
		r := newSchedRig(t, Options{Concurrency: 1}, func(_ context.Context, id string) time.Time {
			time.Sleep(takes[id])
			return time.Time{}
		})
		if r.s.slots != 2 {
			t.Fatalf("%d wake slots for a concurrency of 1, want 2", r.s.slots)
		}
		r.begin()
		r.kick(0, "a", request("startup"))
		r.kick(500*time.Millisecond, "b", request("startup"))
		r.kick(1*time.Second, "c", request("startup"))
		r.kick(2*time.Second, "d", request("startup"))
		r.kick(3*time.Second, "e", request("startup"))
		r.until(5 * time.Second)
		if queued, running := r.s.counts(); queued != 3 || running != 2 {
			t.Errorf("at 5s %d queued and %d running, want 3 and 2", queued, running)
		}
		r.until(time.Minute)
		r.expect("a@0s: startup", "b@500ms: startup", // both slots
			"c@10s: startup",   // a's slot
			"d@20.5s: startup", // b's
			"e@21.5s: startup") // d's
		if r.most != 2 {
			t.Errorf("at most %d wakes ran at once, want 2", r.most)
		}
	})
}

// What is asked for while the agent's wake runs wakes it once more when
// that wake ends, with every reason, and not a third time.
func TestSchedulerRequestDuringARunningWakeRunsOnceAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second}, func(context.Context, string) time.Time {
			time.Sleep(10 * time.Second)
			return time.Time{}
		})
		r.begin()
		r.kick(0, "a", request("created"))
		r.kick(2*time.Second, "a", request("requested"))
		r.kick(3*time.Second, "a", change("task changed")) // due at 5s, while it runs
		r.until(9 * time.Second)
		if queued, running := r.s.state("a"); !queued || !running {
			t.Errorf("at 9s queued %v, running %v: want both", queued, running)
		}
		r.until(time.Minute)
		r.expect("a@0s: created", "a@10s: requested, task changed, changes during the last wake")
	})
}

// agents/create's wake joins the agent's wake queued, running, or begun
// since it was asked for (began), whichever margin's startup wake it
// raced with: none is added behind it. Without one it wakes the agent.
func TestSchedulerJoiningRequestAddsNoWakeBehindAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{Concurrency: 2}, func(context.Context, string) time.Time {
			time.Sleep(10 * time.Second)
			return time.Time{}
		})
		created := func(began int) kick { return kick{reason: "created", mode: kickNow, join: true, began: began} }
		r.kick(0, "queued", request("startup"))
		r.kick(0, "queued", created(0))
		r.kick(0, "running", request("startup"))
		r.kick(0, "ended", request("startup"))
		r.kick(0, "new", created(0))
		r.begin()
		r.kick(5*time.Second, "running", created(0))
		r.kick(20*time.Second, "ended", created(0))
		r.kick(30*time.Second, "again", request("startup"))
		r.until(time.Minute)
		r.kick(time.Minute, "again", created(r.s.began("again")))
		r.until(time.Hour)
		synctest.Wait()
		r.mu.Lock()
		woke := slices.Clone(r.woke)
		r.mu.Unlock()
		slices.Sort(woke) // those due at 0s start at once, in no set order
		if want := []string{"again@1m0s: created", "again@30s: startup", "ended@0s: startup", "new@0s: created",
			"queued@0s: startup", "running@0s: startup"}; !slices.Equal(woke, want) {
			t.Errorf("the wakes were\n\t%q\nwant\n\t%q", woke, want)
		}
	})
}

// A wake that fails is retried after its backoff, and what was asked for
// meanwhile waits for that retry instead of waking the agent at once:
// whether it found the failing wake running or was not due yet.
func TestSchedulerRequestDuringAFailedWakeWaitsForTheBackoff(t *testing.T) {
	for _, tt := range []struct {
		name string
		k    kick
		at   time.Duration
		want []string
	}{
		{"due while it runs", request("requested"), 5 * time.Second,
			[]string{"a@0s: created", "a@40s: requested, retry after a failed wake"}},
		{"not due when it fails", change("task changed"), 9 * time.Second, // due at 11s
			[]string{"a@0s: created", "a@40s: task changed, retry after a failed wake"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second}, failOnce(10*time.Second, 30*time.Second))
				r.begin()
				r.kick(0, "a", request("created"))
				r.kick(tt.at, "a", tt.k)
				r.until(39999 * time.Millisecond)
				r.expect(tt.want[0])
				if queued, running := r.s.state("a"); !queued || running {
					t.Errorf("waiting for the retry: queued %v, running %v; want queued only", queued, running)
				}
				r.until(time.Hour)
				r.expect(tt.want...)
			})
		})
	}
}

// failOnce is work whose first wake takes d and fails, to be retried after
// backoff; the others succeed at once.
func failOnce(d, backoff time.Duration) work {
	var once sync.Once
	return func(context.Context, string) time.Time {
		var retryAt time.Time
		once.Do(func() {
			time.Sleep(d)
			retryAt = time.Now().Add(backoff)
		})
		return retryAt
	}
}

// A person's wake, asked for while a wake fails, does not wait for the
// backoff: it runs as the failed one ends, and takes the retry with it.
func TestSchedulerForcedWakeDoesNotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{}, failOnce(10*time.Second, 30*time.Second))
		r.begin()
		r.kick(0, "a", request("created"))
		r.kick(5*time.Second, "a", kick{reason: "requested", mode: kickNow, force: true})
		r.until(time.Hour)
		r.expect("a@0s: created",
			"a@10s: requested, retry after a failed wake, changes during the last wake (forced)")
	})
}

// No wake runs before the scheduler begins (the runtime seeds its
// templates first); what came due waits and runs then.
func TestSchedulerRunsNoWakeBeforeItBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{}, nil)
		r.kick(0, "a", request("startup"))
		r.until(time.Minute)
		r.expect()
		r.begin()
		r.expect("a@1m0s: startup")
	})
}

// Pausing an agent drops its pending wake.
func TestSchedulerCancelDropsThePendingWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second}, nil)
		r.begin()
		r.kick(0, "a", change("task changed"))
		r.until(time.Second)
		r.s.cancel("a")
		r.until(time.Hour)
		r.expect()
		if queued, running := r.s.state("a"); queued || running {
			t.Errorf("queued %v, running %v after cancel; want neither", queued, running)
		}
	})
}

// Stopping cancels every timer and waits for the running wakes, whose
// failure then schedules no retry; a request after is refused.
func TestSchedulerStopCancelsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{QuietPeriod: 2 * time.Second}, func(ctx context.Context, id string) time.Time {
			if id != "running" {
				return time.Time{}
			}
			<-ctx.Done()
			return time.Now().Add(time.Second)
		})
		r.begin()
		r.kick(0, "running", request("created"))
		r.kick(0, "changed", change("task changed"))
		r.kick(0, "retry", kick{reason: "retry after a failed wake", mode: kickAt, at: r.t0.Add(time.Hour)})
		r.until(time.Second)
		r.cancel()
		r.s.stop()
		if _, running := r.s.state("running"); running {
			t.Error("a wake still runs after stop")
		}
		r.s.mu.Lock()
		for id, q := range r.s.queues {
			if q.timer != nil && q.timer.Stop() {
				t.Errorf("%s's timer still runs after stop", id)
			}
		}
		r.s.mu.Unlock()
		r.until(2 * time.Second)
		if r.s.schedule(kick{agent: "late", reason: "requested", mode: kickNow}) {
			t.Error("a stopped scheduler took a request")
		}
		r.until(3 * time.Hour)
		r.expect("running@0s: created")
	})
}

// The wakes waiting for a slot start by priority, not by arrival: what a
// person asked for, then the wakes that cost no model call, then tasks by
// nearest due date, in-progress before open, recently edited first, and
// those without a due date last.
func TestSchedulerStartsWaitingWakesByPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{Concurrency: 1}, func(_ context.Context, id string) time.Time {
			if id == "hog" {
				time.Sleep(time.Hour) // holds one slot: the others start one at a time
			} else {
				time.Sleep(time.Second)
			}
			return time.Time{}
		})
		now := time.Now()
		task := func(status, due string, edited time.Duration) wakePriority {
			return taskPriority(index.TaskMeta{Status: status, Due: due}, now.Add(-edited).UnixNano())
		}
		r.begin()
		r.kick(0, "hog", request("startup"))
		r.expect("hog@0s: startup")
		r.kick(0, "first", request("startup")) // takes the free slot
		r.expect("hog@0s: startup", "first@0s: startup")
		for _, w := range []struct {
			id   string
			prio wakePriority
		}{
			{"no-due", task("open", "", 0)},
			{"later-open", task("open", "2026-12-01", time.Hour)},
			{"later-in-progress", task("in-progress", "2026-12-01", 2*time.Hour)},
			{"later-open-recent", task("open", "2026-12-01", time.Minute)},
			{"sooner", task("open", "2026-11-25", 3*time.Hour)},
			{"done", task("done", "2026-11-20", 0)},
			{"decision", askedPriority()},
		} {
			r.s.schedule(kick{agent: w.id, reason: "startup", mode: kickNow, prio: w.prio})
		}
		r.until(time.Minute)
		r.expect("hog@0s: startup", "first@0s: startup",
			"decision@1s: startup", "done@2s: startup", "sooner@3s: startup", "later-in-progress@4s: startup",
			"later-open-recent@5s: startup", "later-open@6s: startup", "no-due@7s: startup")
	})
}

// A change to a task that waits in line takes its new standing, and a
// person's request raises it above the rest until its wake starts.
func TestSchedulerPriorityFollowsTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{Concurrency: 1, QuietPeriod: time.Second}, func(_ context.Context, id string) time.Time {
			if id == "hog" {
				time.Sleep(time.Hour) // holds one slot: the others start one at a time
			} else {
				time.Sleep(10 * time.Second)
			}
			return time.Time{}
		})
		open := func(due string) wakePriority { return taskPriority(index.TaskMeta{Status: "open", Due: due}, 0) }
		r.begin()
		r.kick(0, "hog", request("startup"))
		r.expect("hog@0s: startup")
		r.kick(0, "x", request("startup"))
		r.expect("hog@0s: startup", "x@0s: startup")
		r.s.schedule(kick{agent: "a", reason: "startup", mode: kickNow, prio: open("2026-11-25")})
		r.s.schedule(kick{agent: "b", reason: "startup", mode: kickNow, prio: open("2026-11-26")})
		r.s.schedule(kick{agent: "c", reason: "startup", mode: kickNow, prio: open("2026-11-27")})
		// c's due date moves up while it waits; b's agent is asked for.
		r.s.schedule(kick{agent: "c", reason: "task changed", mode: kickNow, prio: open("2026-11-24")})
		r.s.schedule(kick{agent: "b", reason: "requested", mode: kickNow, prio: askedPriority()})
		r.until(time.Minute)
		r.expect("hog@0s: startup", "x@0s: startup",
			"b@10s: startup, requested", "c@20s: startup, task changed", "a@30s: startup")
	})
}

// Once the day's token budget is spent, wakes that need the model wait for
// the next day, and start at midnight; a wake that needs no model (a done
// task) still runs.
func TestSchedulerHoldsModelWakesUntilTheNextDayOnceTheBudgetIsSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		utc := func() time.Time { return time.Now().UTC() } // the bubble's clock starts at midnight UTC
		var r *schedRig
		r = newSchedRig(t, Options{DailyTokenBudget: 1000, Now: utc}, func(_ context.Context, id string) time.Time {
			if id != "done" {
				r.s.budget.add(utc(), 600)
			}
			return time.Time{}
		})
		r.begin()
		r.kick(time.Hour, "a", request("startup"))
		r.kick(2*time.Hour, "b", change("task changed")) // spends the rest, and more
		r.kick(3*time.Hour, "c", request("requested"))
		r.kick(4*time.Hour, "d", change("task changed"))
		r.kick(5*time.Hour, "done", kick{reason: "task changed", mode: kickNow, prio: taskPriority(index.TaskMeta{Status: "done"}, 0)})
		r.until(24*time.Hour - time.Second)
		r.expect("a@1h0m0s: startup", "b@2h0m2s: task changed", "done@5h0m0s: task changed")
		if queued, _ := r.s.counts(); queued != 2 {
			t.Errorf("%d wakes queued for the next day, want 2", queued)
		}
		if !r.s.budget.spentAt(utc()) || r.s.budget.today(utc()) != 1200 {
			t.Errorf("before midnight: spent %v, %d tokens today; want spent, 1200", r.s.budget.spentAt(utc()), r.s.budget.today(utc()))
		}
		r.until(47 * time.Hour)
		synctest.Wait()
		r.mu.Lock()
		woke := slices.Clone(r.woke)
		r.mu.Unlock()
		slices.Sort(woke[min(3, len(woke)):]) // both slots start at midnight, in no set order
		if want := []string{"a@1h0m0s: startup", "b@2h0m2s: task changed", "done@5h0m0s: task changed",
			"c@24h0m0s: requested", "d@24h0m0s: task changed"}; !slices.Equal(woke, want) {
			t.Errorf("by the second day the wakes were\n\t%q\nwant\n\t%q", woke, want)
		}
		if got := r.s.budget.today(utc()); got != 1200 {
			t.Errorf("%d tokens on the second day, want 1200", got)
		}
	})
}

// The startup wakes, scheduled before the scheduler begins, start by
// priority even when their timers have not fired yet when it begins.
func TestSchedulerBeginsWithTheWaitingLineByPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newSchedRig(t, Options{Concurrency: 1}, func(context.Context, string) time.Time {
			time.Sleep(time.Second)
			return time.Time{}
		})
		open := func(due string) wakePriority { return taskPriority(index.TaskMeta{Status: "open", Due: due}, 0) }
		for _, w := range []struct {
			id, due string
		}{{"d", ""}, {"c", "2026-12-01"}, {"b", "2026-11-28"}, {"a", "2026-11-25"}} {
			r.s.schedule(kick{agent: w.id, reason: "startup", mode: kickNow, prio: open(w.due)})
		}
		r.begin() // before any of their timers fired
		r.until(time.Minute)
		synctest.Wait()
		r.mu.Lock()
		woke := slices.Clone(r.woke)
		r.mu.Unlock()
		slices.Sort(woke) // two start at once, in no set order
		if want := []string{"a@0s: startup", "b@0s: startup", "c@1s: startup", "d@1s: startup"}; !slices.Equal(woke, want) {
			t.Errorf("the wakes were %q, want %q", woke, want)
		}
	})
}
