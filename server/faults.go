//go:build marginfaults

package server

import "context"

// Fault methods exist only in test builds (-tags marginfaults), so the
// end-to-end tests can show how the server survives a panicking handler and
// cancels a long request. Release builds do not have them.
func init() {
	methods["margin/test.panic"] = reader((*Server).testPanic)
	methods["margin/test.block"] = reader((*Server).testBlock)
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
