package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestMemoryLimitOfServe(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name       string
		limit      int64
		gomemlimit string
		want       int64
	}{
		{"config sets it", 128 << 20, "", 128 << 20},
		{"0 leaves the runtime's", 0, "", math.MaxInt64},
		{"GOMEMLIMIT wins", 128 << 20, "300MiB", math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			debug.SetMemoryLimit(math.MaxInt64) // what the runtime starts with when GOMEMLIMIT is unset
			applyMemoryLimit(t.Context(), tc.limit)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemoryLimitStaysAboveTheLiveHeap(t *testing.T) {
	for _, tc := range []struct {
		limit, live, want int64
	}{
		{96 << 20, 40 << 20, 96 << 20},
		{96 << 20, 72 << 20, 96 << 20},
		{96 << 20, 90 << 20, 120 << 20},
		{96 << 20, 300 << 20, 400 << 20},
	} {
		if got := limitFor(tc.limit, tc.live); got != tc.want {
			t.Errorf("limitFor(%d MiB, live %d MiB) = %d MiB, want %d", tc.limit>>20, tc.live>>20, got>>20, tc.want>>20)
		}
	}
}

// TestMemoryLimitFollowsTheLiveHeap: a live heap that outgrows the limit
// raises it at the next check, and the limit comes back down to the
// configured one when the heap shrinks.
func TestMemoryLimitFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const limit = 32 << 20
	debug.SetMemoryLimit(limit)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		followLiveHeap(ctx, limit, time.Millisecond)
	}()
	wait := func(what string, cond func(int64) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if cond(debug.SetMemoryLimit(-1)) {
				return
			}
			runtime.GC()
		}
		t.Fatalf("memory limit %d MiB, still not %s", debug.SetMemoryLimit(-1)>>20, what)
	}
	held := make([]byte, 64<<20)
	for i := range held {
		held[i] = 1
	}
	runtime.GC()
	wait("a third over 64 MiB live", func(l int64) bool { return l >= 64<<20+64<<20/3 })
	runtime.KeepAlive(held)
	held = nil
	wait("back to the configured 32 MiB", func(l int64) bool { return l == limit })
	stop()
	<-done
}
