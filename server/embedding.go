package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vectors"
)

// relatedLimit is vault/related's number of notes when the call names none.
const relatedLimit = 10

func (s *Server) vaultRelated(ctx context.Context, p *protocol.RelatedParams) (protocol.RelatedResult, error) {
	if p.Limit < 0 {
		return protocol.RelatedResult{}, invalidParams("limit", "must not be negative")
	}
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return protocol.RelatedResult{}, err
	}
	path, err := vaultPath(v, "path", p.Path)
	if err != nil {
		return protocol.RelatedResult{}, err
	}
	limit := p.Limit
	if limit == 0 {
		limit = relatedLimit
	}
	r, err := s.open().Related(ctx, path, limit)
	if errors.Is(err, index.ErrNotFound) {
		return protocol.RelatedResult{}, &jsonrpc2.Error{Code: CodeNotFound, Message: fmt.Sprintf("%s is not an indexed note", path)}
	}
	if err != nil {
		return protocol.RelatedResult{}, err
	}
	res := protocol.RelatedResult{Notes: make([]protocol.RelatedNote, len(r.Notes)), Reason: r.Why}
	for i, n := range r.Notes {
		res.Notes[i] = protocol.RelatedNote{Path: n.Path, Heading: n.Heading, Line: n.Line, Score: n.Score}
	}
	return res, nil
}

// embedProgress shows the background embedding as LSP work-done progress:
// a token the server creates (window/workDoneProgress/create) when the
// queue starts embedding, a report per batch, and end when it is idle,
// paused or waiting. Only for a client that said it supports that.
type embedProgress struct {
	wake chan struct{} // holds at most one

	mu     sync.Mutex // guards latest
	latest workspace.Embedding
}

// hearEmbedding takes the queue's progress, from its goroutine: the client is told
// from runEmbedProgress, so the queue never waits on it.
func (s *Server) hearEmbedding(e workspace.Embedding) {
	s.embedding.mu.Lock()
	was := s.embedding.latest.State
	s.embedding.latest = e
	s.embedding.mu.Unlock()
	if was == vectors.Embedding && e.State != vectors.Embedding {
		s.refreshLenses() // notes may have related notes now: a Related lens
	}
	select {
	case s.embedding.wake <- struct{}{}:
	default:
	}
}

// progressCreateTimeout bounds the wait for the client to accept a
// progress token: a client that does not answer gets no progress.
const progressCreateTimeout = 10 * time.Second

// runEmbedProgress sends the embedding's progress until ctx is done.
func (s *Server) runEmbedProgress(ctx context.Context) {
	var token string // of the progress under way; "" when none
	tokens := 0
	for {
		select {
		case <-s.embedding.wake:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		ok := s.client.Window.WorkDoneProgress
		s.mu.Unlock()
		if !ok {
			continue
		}
		s.embedding.mu.Lock()
		e := s.embedding.latest
		s.embedding.mu.Unlock()
		message := fmt.Sprintf("%d of %d chunks", e.Embedded, e.Embedded+e.Left)
		if e.Rate > 0 {
			message += fmt.Sprintf(", %.1f a second", e.Rate)
		}
		percent := e.Embedded * 100 / max(e.Embedded+e.Left, 1)
		switch {
		case e.State == vectors.Embedding && token == "":
			tokens++
			t := fmt.Sprintf("margin/embedding/%d", tokens)
			callCtx, cancel := context.WithTimeout(ctx, progressCreateTimeout)
			err := s.conn.Call(callCtx, "window/workDoneProgress/create", map[string]string{"token": t}, nil)
			cancel()
			if err != nil {
				s.opts.Logger.Debug("progress token refused", "err", err)
				continue
			}
			token = t
			title := "Embedding notes"
			if e.Reembedding {
				title = "Embedding notes again for " + e.Model
			}
			(&progress{s: s, token: quoted(token)}).send(progressValue{Kind: "begin", Title: title, Message: message, Percentage: &percent})
		case e.State == vectors.Embedding:
			(&progress{s: s, token: quoted(token)}).send(progressValue{Kind: "report", Message: message, Percentage: &percent})
		case token != "":
			end := message + " embedded"
			if e.Note != "" {
				end += "; " + e.Note
			}
			(&progress{s: s, token: quoted(token)}).send(progressValue{Kind: "end", Message: end})
			token = ""
		}
	}
}

func quoted(s string) []byte { return []byte(`"` + s + `"`) }
