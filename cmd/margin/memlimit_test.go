package main

import (
	"math"
	"runtime/debug"
	"testing"
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
			applyMemoryLimit(tc.limit)
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Errorf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}
