package server

import (
	"context"
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// progress reports LSP work-done progress for a request that carried a
// workDoneToken.
type progress struct {
	s     *Server
	token json.RawMessage
}

type progressKey struct{}

type progressValue struct {
	Kind       string `json:"kind"` // begin | report | end
	Title      string `json:"title,omitempty"`
	Message    string `json:"message,omitempty"`
	Percentage *int   `json:"percentage,omitempty"`
}

// startProgress sends begin when the request has a workDoneToken and returns
// the func that sends end. Handlers report stages with reportProgress.
func (s *Server) startProgress(ctx context.Context, req *jsonrpc2.Request) (context.Context, func()) {
	token := workDoneToken(req.Params)
	if token == nil {
		return ctx, func() {}
	}
	p := &progress{s: s, token: token}
	p.send(progressValue{Kind: "begin", Title: req.Method})
	return context.WithValue(ctx, progressKey{}, p), func() { p.send(progressValue{Kind: "end"}) }
}

func (p *progress) send(v progressValue) {
	params := struct {
		Token json.RawMessage `json:"token"`
		Value progressValue   `json:"value"`
	}{p.token, v}
	if v.Kind == "report" {
		// Begin and end always go: a client shown a begin waits for its end.
		p.s.notifyDroppable("$/progress", params)
		return
	}
	p.s.notify("$/progress", params)
}

// reportProgress tells the client which stage a long request is in; it does
// nothing when the client asked for no progress. percent < 0 means unknown.
func reportProgress(ctx context.Context, message string, percent int) {
	p, ok := ctx.Value(progressKey{}).(*progress)
	if !ok {
		return
	}
	v := progressValue{Kind: "report", Message: message}
	if percent >= 0 {
		v.Percentage = &percent
	}
	p.send(v)
}

func workDoneToken(raw *json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var p struct {
		Token json.RawMessage `json:"workDoneToken"`
	}
	if json.Unmarshal(*raw, &p) != nil || len(p.Token) == 0 || string(p.Token) == "null" {
		return nil
	}
	return p.Token
}
