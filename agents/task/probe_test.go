package task

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/margin-md/margin/llm"
)

// awayFor is a probe that finds the model away for its first n calls and
// records when each call came.
type awayFor struct {
	mu    sync.Mutex
	n     int
	calls []time.Time
}

func (a *awayFor) Ready(context.Context, llm.Request) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, time.Now())
	if len(a.calls) <= a.n {
		return &llm.UnavailableError{Role: "task", Reasons: []error{&llm.CallError{Class: llm.ErrUnreachable, Provider: "ollama"}}}
	}
	return nil
}

// gapsSince is the time between start and the first probe, and between
// each probe and the next.
func (a *awayFor) gapsSince(start time.Time) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var gaps []time.Duration
	for _, c := range a.calls {
		gaps = append(gaps, c.Sub(start))
		start = c
	}
	return gaps
}

// One probe serves every waiting agent, backed off from initial to max;
// when it finds the model back, every agent that waited is handed back
// once, in the order they began to wait.
func TestModelWatchProbesBackedOffThenHandsTheAgentsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		probe := &awayFor{n: 5}
		var back [][]string
		m := &modelWatch{ready: probe.Ready, initial: time.Second, max: 4 * time.Second, log: discard,
			back: func(ids []string) { back = append(back, ids) }}
		start := time.Now()
		for _, id := range []string{"a1", "a2", "a1", "a3"} {
			m.wait(ctx, id, "model server unreachable", llm.Request{Role: "task"})
		}
		if m.away() == "" {
			t.Fatal("the watch does not know the model is away")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		gaps := probe.gapsSince(start)
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
		if !slices.Equal(gaps, want) {
			t.Errorf("probes after %v, want %v (one probe, backed off, capped)", gaps, want)
		}
		if len(back) != 1 || !slices.Equal(back[0], []string{"a1", "a2", "a3"}) {
			t.Errorf("handed back %v, want [a1 a2 a3] once", back)
		}
		if m.away() != "" {
			t.Errorf("after the model came back the watch still says it is away: %q", m.away())
		}
		// Away again: a new probe, from the initial wait.
		m.wait(ctx, "a2", "model not available on the server", llm.Request{Role: "task"})
		time.Sleep(time.Hour)
		synctest.Wait()
		if len(back) != 2 || !slices.Equal(back[1], []string{"a2"}) {
			t.Errorf("handed back %v, want a2 again", back)
		}
		m.stop()
	})
}

// A server that lists the model but cannot serve it (its chat answers 404)
// passes every probe while each wake finds the model away again at once:
// the probes keep backing off instead of starting over at the initial wait.
func TestModelWatchBacksOffAModelAwayAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		probe := &awayFor{}
		var m *modelWatch
		m = &modelWatch{ready: probe.Ready, initial: time.Second, max: 8 * time.Second, log: discard,
			back: func(ids []string) {
				// The wake runs and the chat fails: away again.
				go m.wait(ctx, ids[0], "model not available on the server", llm.Request{Role: "task"})
			}}
		start := time.Now()
		m.wait(ctx, "a1", "model not available on the server", llm.Request{Role: "task"})
		time.Sleep(35 * time.Second)
		synctest.Wait()
		gaps := probe.gapsSince(start)
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
		if !slices.Equal(gaps, want) {
			t.Errorf("probes after %v, want %v", gaps, want)
		}
		cancel()
		m.stop()
	})
}

// A probe that fails for another reason than the model being away (a 5xx
// on the model list) lets the wakes run, so their failures count.
func TestModelWatchHandsBackOnAnotherFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var back []string
		m := &modelWatch{initial: time.Second, max: time.Second, log: discard, back: func(ids []string) { back = ids },
			ready: func(context.Context, llm.Request) error {
				return &llm.UnavailableError{Role: "task", Reasons: []error{&llm.CallError{Class: llm.ErrServer, Provider: "ollama"}}}
			}}
		m.wait(t.Context(), "a1", "model server unreachable", llm.Request{Role: "task"})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !slices.Equal(back, []string{"a1"}) {
			t.Errorf("handed back %v, want a1", back)
		}
		m.stop()
	})
}

// Stopping ends the probe without handing anyone back, and no probe
// starts after.
func TestModelWatchStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		probe := &awayFor{n: 1000}
		m := &modelWatch{ready: probe.Ready, initial: time.Second, max: time.Second, log: discard,
			back: func(ids []string) { t.Errorf("handed back %v while stopping", ids) }}
		m.wait(ctx, "a1", "model server unreachable", llm.Request{Role: "task"})
		time.Sleep(1500 * time.Millisecond)
		cancel()
		m.stop()
		if m.away() != "" {
			t.Errorf("a stopped watch says the model is away: %q", m.away())
		}
		if m.wait(t.Context(), "a2", "model server unreachable", llm.Request{Role: "task"}) {
			t.Error("a stopped watch took a waiting agent")
		}
		if len(probe.calls) != 1 {
			t.Errorf("%d probes, want 1 before the stop", len(probe.calls))
		}
	})
}

var discard = slog.New(slog.DiscardHandler)
