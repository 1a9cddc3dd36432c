package server

import (
	"context"
	"fmt"
	"time"

	"github.com/margin-md/margin/server/wire"
)

// refreshTimeout bounds the wait for the client's answer to a refresh.
const refreshTimeout = 30 * time.Second

// agentNotify sends an agents' notification and, when it changes what the
// code lenses show (a TLDR, a change set, an item's status), asks the
// client to fetch them again.
func (s *Server) agentNotify(method string, params any) {
	p, ok := wire.Notification(params)
	if !ok {
		// A notification added to the agents without its wire type
		// (server/wire's tests hold the known ones to the protocol).
		s.logger.Error("a notification the protocol does not carry was not sent", "method", method, "params", fmt.Sprintf("%T", params))
		return
	}
	s.notify(method, p)
	switch method {
	case "margin/reportUpdated", "margin/changeSetCreated", "margin/changeApplied":
		s.refreshLenses()
	}
}

// refreshLenses queues a workspace/codeLens/refresh, only for a client
// that said it supports one. Refreshes asked for while one is queued are
// one refresh: the client fetches every lens anyway.
func (s *Server) refreshLenses() {
	s.mu.Lock()
	ok := s.client.Workspace.CodeLens.RefreshSupport
	s.mu.Unlock()
	if !ok {
		return
	}
	select {
	case s.lensRefresh <- struct{}{}:
	default:
	}
}

// runLensRefresh sends the queued refreshes, one at a time: it is a
// request, and the client's answer must not hold up the agents.
func (s *Server) runLensRefresh(ctx context.Context) {
	for {
		select {
		case <-s.lensRefresh:
		case <-ctx.Done():
			return
		}
		callCtx, cancel := context.WithTimeout(ctx, refreshTimeout)
		if err := s.conn.Call(callCtx, "workspace/codeLens/refresh", nil, nil); err != nil {
			s.opts.Logger.Debug("code lens refresh", "err", err)
		}
		cancel()
	}
}
