package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
)

// The query methods (SPEC §6): query/ask, query/reply, log/append,
// context/get. They run as reads, concurrently, even though a log appends
// to a daily note: their writes are compare-and-swap appends that do not
// depend on the order of editor messages, and a flow of several model calls
// must not hold up didChange and the other state changes queued behind it.

func (s *Server) queryAsk(ctx context.Context, p *protocol.AskParams) (protocol.Answer, error) {
	e, err := s.queryEngine(ctx)
	if err != nil {
		return protocol.Answer{}, err
	}
	res, err := e.Ask(ctx, p.Text, stageProgress(ctx))
	return wire.Answer(res), queryError(err)
}

func (s *Server) queryReply(ctx context.Context, p *protocol.ReplyParams) (protocol.Answer, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return protocol.Answer{}, invalidParams("sessionId", "required")
	}
	e, err := s.queryEngine(ctx)
	if err != nil {
		return protocol.Answer{}, err
	}
	res, err := e.Reply(ctx, p.SessionID, p.Answers, p.Decline, stageProgress(ctx))
	return wire.Answer(res), queryError(err)
}

func (s *Server) logAppend(ctx context.Context, p *protocol.LogParams) (protocol.LogResult, error) {
	var at time.Time
	if p.Time != "" {
		t, err := query.ParseWhen(p.Time)
		if err != nil {
			return protocol.LogResult{}, invalidParams("time", err.Error())
		}
		at = t
	}
	e, err := s.queryEngine(ctx)
	if err != nil {
		return protocol.LogResult{}, err
	}
	res, err := e.Log(ctx, p.Text, at, stageProgress(ctx))
	if err := queryError(err); err != nil {
		return protocol.LogResult{}, err
	}
	return wire.LogResult(res), nil
}

func (s *Server) contextGet(ctx context.Context, _ *empty) (protocol.ContextResult, error) {
	e, err := s.queryEngine(ctx)
	if err != nil {
		return protocol.ContextResult{}, err
	}
	p, content, err := e.Context(ctx)
	return protocol.ContextResult{Path: p, Content: content}, err
}

// queryEngine returns the engine once the vault's first scan is done.
func (s *Server) queryEngine(ctx context.Context) (*query.Engine, error) {
	if _, err := s.openVaultReady(ctx); err != nil {
		return nil, err
	}
	ws := s.open()
	if ws == nil {
		return nil, errNoVault
	}
	return ws.Query, nil
}

func stageProgress(ctx context.Context) query.Progress {
	return func(stage string) { reportProgress(ctx, stage, -1) }
}

func queryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, query.ErrEmptyInput):
		return invalidParams("text", "must not be empty")
	case errors.Is(err, query.ErrInputTooLong):
		return invalidParams("text", err.Error())
	}
	return err
}
