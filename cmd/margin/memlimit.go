package main

import (
	"os"
	"runtime/debug"
)

// minMemoryLimit is the least server.memory_limit accepted: below it the
// live heap of a small vault's serve is already over, and the runtime
// would collect without pause to no avail.
const minMemoryLimit = 32 << 20

// applyMemoryLimit sets the Go runtime's soft memory limit of a serve to
// limit bytes (0: none). The runtime's default lets the heap grow to
// twice what is live before collecting: at 100k notes with vectors, some
// 75 MB of garbage on top of 75 MB live (43 of them the codes).
// GOMEMLIMIT, the runtime's own knob, wins when set: whoever set it meant
// it for this process.
func applyMemoryLimit(limit int64) {
	if limit <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(limit)
}
