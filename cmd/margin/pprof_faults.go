//go:build marginfaults

package main

import (
	"log"
	"net/http"
	_ "net/http/pprof" // serves /debug/pprof on MARGIN_PPROF
	"os"
	"runtime"
)

// In test builds (-tags marginfaults) MARGIN_PPROF=host:port serves pprof,
// with block and mutex profiling on, so a latency problem of `margin serve`
// can be traced in the process an editor talks to. Release builds lack it.
func init() {
	addr := os.Getenv("MARGIN_PPROF")
	if addr == "" {
		return
	}
	runtime.SetBlockProfileRate(int(1e5)) // one sample per 100 µs blocked
	runtime.SetMutexProfileFraction(10)
	go func() { log.Print(http.ListenAndServe(addr, nil)) }()
}
