package main

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// minMemoryLimit is the least server.memory_limit accepted: below it the
// live heap of a small vault's serve is already over, and the runtime
// would collect without pause to no avail.
const minMemoryLimit = 32 << 20

// applyMemoryLimit sets the Go runtime's soft memory limit of a serve to
// limit bytes (0: none) and, until ctx ends, keeps it above the live heap
// (see limitFor). The runtime's default lets the heap grow to twice what
// is live before collecting: at 100k notes with vectors, some 70 MB of
// garbage on top of 70 MB live (45 of them the codes). GOMEMLIMIT, the
// runtime's own knob, wins when set: whoever set it meant it for this
// process.
func applyMemoryLimit(ctx context.Context, limit int64) {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
	go followLiveHeap(ctx, limit, 2*time.Second)
}

// followLiveHeap sets the memory limit to limitFor(limit, the live heap)
// every period until ctx ends.
func followLiveHeap(ctx context.Context, limit int64, period time.Duration) {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(live)
		debug.SetMemoryLimit(limitFor(limit, int64(live[0].Value.Uint64())))
	}
}

// limitFor is the memory limit of a serve configured with limit whose
// live heap is live: limit, or a third over the live heap when that is
// more. A limit at or under the live heap makes the runtime collect
// without pause, up to half the CPU, for no memory back: a vault larger
// than the limit was set for collects as often as with GOGC=33 instead.
func limitFor(limit, live int64) int64 {
	return max(limit, live+live/3)
}
