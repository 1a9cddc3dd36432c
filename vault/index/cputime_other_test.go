//go:build !unix

package index

import "time"

// cpuTime is 0 where the process's CPU time is not read: no figure.
func cpuTime() time.Duration { return 0 }
