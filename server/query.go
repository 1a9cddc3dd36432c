package server

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/query"
)

// The query methods (SPEC §6): query/ask, query/reply, log/append,
// context/get. They run as reads, concurrently, even though a log appends
// to a daily note: their writes are compare-and-swap appends that do not
// depend on the order of editor messages, and a flow of several model calls
// must not hold up didChange and the other state changes queued behind it.

type askParams struct {
	Text string `json:"text"`
}

func (s *Server) queryAsk(ctx context.Context, p *askParams) (query.Result, error) {
	e, err := s.queryEngine(ctx)
	if err != nil {
		return query.Result{}, err
	}
	res, err := e.Ask(ctx, p.Text, stageProgress(ctx))
	return res, queryError(err)
}

type replyParams struct {
	SessionID string            `json:"sessionId"`
	Answers   map[string]string `json:"answers"`
	Decline   bool              `json:"decline"`
}

func (s *Server) queryReply(ctx context.Context, p *replyParams) (query.Result, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return query.Result{}, invalidParams("sessionId", "required")
	}
	e, err := s.queryEngine(ctx)
	if err != nil {
		return query.Result{}, err
	}
	res, err := e.Reply(ctx, p.SessionID, p.Answers, p.Decline, stageProgress(ctx))
	return res, queryError(err)
}

type logParams struct {
	Text string `json:"text"`
	// Time is when it happened: RFC 3339, or YYYY-MM-DDTHH:MM in local time.
	Time string `json:"time"`
}

type logResult struct {
	Type    query.InputType `json:"type"`
	Path    string          `json:"path"`
	Heading string          `json:"heading"`
	Parsed  map[string]any  `json:"parsed"`
	// Uncertain lists fields the parser was unsure of or dropped.
	Uncertain []string `json:"uncertain"`
	Corrects  string   `json:"corrects,omitempty"`
	Note      string   `json:"note,omitempty"`
	// Answer is the answer to the question that came with the log (BOTH).
	Answer *query.Result `json:"answer,omitempty"`
}

func (s *Server) logAppend(ctx context.Context, p *logParams) (logResult, error) {
	var at time.Time
	if p.Time != "" {
		t, err := parseLogTime(p.Time)
		if err != nil {
			return logResult{}, invalidParams("time", err.Error())
		}
		at = t
	}
	e, err := s.queryEngine(ctx)
	if err != nil {
		return logResult{}, err
	}
	res, err := e.Log(ctx, p.Text, at, stageProgress(ctx))
	if err := queryError(err); err != nil {
		return logResult{}, err
	}
	out := logResult{Type: res.Type, Uncertain: []string{}}
	if l := res.Logged; l != nil {
		out.Path, out.Heading, out.Parsed, out.Corrects, out.Note = l.Path, l.Heading, l.Parsed, l.Corrects, l.Note
		if l.Uncertain != nil {
			out.Uncertain = l.Uncertain
		}
	}
	if res.Type == query.InputBoth {
		out.Answer = &res
	}
	return out, nil
}

func parseLogTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04", s, time.Local)
	if err != nil {
		return time.Time{}, errors.New("want RFC 3339 or YYYY-MM-DDTHH:MM")
	}
	return t, nil
}

type contextResult struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (s *Server) contextGet(ctx context.Context, _ *empty) (contextResult, error) {
	e, err := s.queryEngine(ctx)
	if err != nil {
		return contextResult{}, err
	}
	p, content, err := e.Context(ctx)
	return contextResult{Path: p, Content: content}, err
}

// queryEngine returns the engine once the vault's first scan is done.
func (s *Server) queryEngine(ctx context.Context) (*query.Engine, error) {
	if _, err := s.openVaultReady(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	e := s.query
	s.mu.Unlock()
	if e == nil {
		return nil, errNoVault
	}
	return e, nil
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
