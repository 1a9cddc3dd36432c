//go:build marginfaults

package server

import (
	"context"
	"errors"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/margin-md/margin/vault/watch"
)

// Fault methods exist only in test builds (-tags marginfaults), so the
// end-to-end tests can show how the server survives a panicking handler,
// cancels a long request, loses watcher events or watches, and whether it
// leaks goroutines. Release builds do not have them.
func init() {
	methods["margin/test.panic"] = reader((*Server).testPanic)
	methods["margin/test.block"] = reader((*Server).testBlock)
	methods["margin/test.goroutines"] = reader((*Server).testGoroutines)
	methods["margin/test.watchLimit"] = writer((*Server).testWatchLimit)
	methods["margin/test.watchError"] = writer((*Server).testWatchError)
}

func (s *Server) testPanic(ctx context.Context, _ *empty) (any, error) {
	panic("a handler bug")
}

// testBlock waits until the request is cancelled.
func (s *Server) testBlock(ctx context.Context, _ *empty) (any, error) {
	reportProgress(ctx, "blocking until cancelled", -1)
	<-ctx.Done()
	return nil, ctx.Err()
}

// testGoroutines counts the process's goroutines, for leak checks, and
// gives their stacks, alike ones counted together, so that a leak says
// where it is.
func (s *Server) testGoroutines(ctx context.Context, _ *empty) (any, error) {
	var stacks strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&stacks, 1); err != nil {
		return nil, err
	}
	return map[string]any{"goroutines": runtime.NumGoroutine(), "stacks": stacks.String()}, nil
}

// testWatchLimit makes adding a watch for a directory not yet watched fail
// with ENOSPC, as the kernel does at fs.inotify.max_user_watches, or stops
// doing so.
func (s *Server) testWatchLimit(ctx context.Context, p *struct {
	On bool `json:"on"`
}) (any, error) {
	watch.LimitWatches(p.On)
	return map[string]bool{"on": p.On}, nil
}

// testWatchError reports an error on the watcher's error stream, as
// fsnotify does when reading events fails.
func (s *Server) testWatchError(ctx context.Context, p *struct {
	Message string `json:"message"`
}) (any, error) {
	if p.Message == "" {
		return nil, invalidParams("message", "required")
	}
	return map[string]bool{}, watch.InjectError(ctx, errors.New(p.Message))
}
