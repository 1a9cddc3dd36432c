// Package server speaks margin's protocol: JSON-RPC 2.0 over stdio with LSP
// framing. It owns the connection, the LSP lifecycle, message ordering,
// cancellation and the open-document table, and turns each method into a
// call on the vault, the task agents or the query flows.
//
// Handlers are thin: decode, delegate, encode. The server never reads flags,
// config files or the environment; cmd hands it typed Options.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
)

// Options configure a Server.
type Options struct {
	// Vault is opened from these options at initialize; Vault.Dir may be
	// empty, in which case initialize's root decides.
	Vault vault.Options
	// LLM serves the agents' model calls; nil means no model (offline).
	LLM *llm.Client
	// Agents configure the task agents of the vault.
	Agents task.Options
	// Ledger, when set, is attached to the vault's ledger while a vault is
	// open, so the model calls LLM records land in its state database.
	Ledger *ledger.Slot
	// Query configures the query and log flows (query/*, log/append).
	Query query.Options
	// History configures the record of margin's writes into the vault.
	History history.Options
	// Embed configures the notes' embedding, which runs in the background.
	Embed workspace.EmbedOptions
	// MaxMessageSize caps one incoming message; larger ones are discarded.
	MaxMessageSize int64
	// Version is reported in serverInfo.
	Version string
	Logger  *slog.Logger
}

// Server is one editor connection.
type Server struct {
	opts   Options
	logger *slog.Logger // logs to stderr and, once connected, to window/logMessage

	conn  *jsonrpc2.Conn
	out   *outbox // conn's writes: they never wait for the client
	docs  documents
	model modelWatch
	// connected is closed once conn and logger are set: the connection's
	// read loop starts inside jsonrpc2.NewConn, before Serve can set them.
	connected chan struct{}

	// serial runs state-changing messages one at a time in arrival order.
	serial chan func()
	// enqueued counts state-changing messages handed to serial; only Handle
	// (the connection's read loop) touches it.
	enqueued uint64
	// exited receives the process exit code when the client sends exit.
	exited chan int
	// lensRefresh queues a workspace/codeLens/refresh (see refresh.go).
	lensRefresh chan struct{}
	// embedding is the background embedding's progress for the client.
	embedding embedProgress

	mu         sync.Mutex // guards the fields below
	state      lifecycle
	client     clientCapabilities   // set at initialize
	clientInfo string               // the client's name, set at initialize
	encoding   positionEncoding     // negotiated at initialize
	ws         *workspace.Workspace // the open vault and its parts; nil until initialize opens one
	stopVault  context.CancelFunc   // stops ws.Run
	vaultDone  chan struct{}        // closed when ws.Run has returned
	inflight   map[jsonrpc2.ID]context.CancelFunc
	applied    uint64        // state-changing messages finished
	appliedNow chan struct{} // closed and replaced whenever applied grows
}

type lifecycle int

const (
	stateNew lifecycle = iota
	stateRunning
	stateShutdown
)

// New returns a server ready to Serve.
func New(opts Options) *Server {
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = 64 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		opts:        opts,
		logger:      opts.Logger,
		serial:      make(chan func(), 256),
		connected:   make(chan struct{}),
		exited:      make(chan int, 1),
		lensRefresh: make(chan struct{}, 1),
		embedding:   embedProgress{wake: make(chan struct{}, 1)},
		inflight:    make(map[jsonrpc2.ID]context.CancelFunc),
		appliedNow:  make(chan struct{}),
	}
}

// Serve speaks the protocol on r and w until the client sends exit or closes
// the stream. It returns the LSP exit code: 0 after shutdown, 1 otherwise.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s.out = newOutbox(w)
	st := newStream(r, s.out, nil, s.opts.MaxMessageSize)
	s.conn = jsonrpc2.NewConn(ctx, st, s, jsonrpc2.SetLogger(slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug)))
	s.logger = slog.New(&clientLogHandler{next: s.opts.Logger.Handler(), s: s})
	close(s.connected)

	go s.runSerial(ctx)
	go s.runLensRefresh(ctx)
	go s.runEmbedProgress(ctx)

	code := 1
	select {
	case code = <-s.exited:
	case <-s.conn.DisconnectNotify():
		s.mu.Lock()
		if s.state == stateShutdown {
			code = 0
		}
		s.mu.Unlock()
	case <-ctx.Done():
	}
	s.closeVault()
	s.conn.Close()
	s.out.Close(flushGrace)
	return code
}

// flushGrace is how long Serve waits at the end for the client to read
// what is still queued for it.
const flushGrace = 2 * time.Second

func (s *Server) runSerial(ctx context.Context) {
	for {
		select {
		case f := <-s.serial:
			f()
		case <-ctx.Done():
			return
		}
	}
}

// Handle implements jsonrpc2.Handler. It runs on the connection's read loop,
// so it only decides where a message goes and never blocks on work.
func (s *Server) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	<-s.connected
	switch req.Method {
	case "$/cancelRequest":
		s.cancelRequest(req)
		if !req.Notif {
			// A client that sent it with an id waits for an answer.
			s.replyError(ctx, req, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: "$/cancelRequest is a notification: send it without an id"})
		}
		return
	case "initialize":
		// Synchronous, so no later message can overtake it.
		s.reply(ctx, req, s.safely(ctx, req, adapt((*Server).initialize)))
		return
	case "exit":
		s.exit()
		return
	}

	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state == stateNew {
		if !req.Notif {
			s.replyError(ctx, req, &jsonrpc2.Error{Code: codeServerNotInitialized, Message: fmt.Sprintf("%s before initialize", req.Method)})
		}
		return
	}
	if state == stateShutdown && !req.Notif {
		s.replyError(ctx, req, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: fmt.Sprintf("%s after shutdown", req.Method)})
		return
	}

	m, ok := methods[req.Method]
	if !ok {
		if !req.Notif {
			s.replyError(ctx, req, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %s", req.Method)})
		}
		return
	}

	reqCtx, cancel := context.WithCancel(ctx)
	if !req.Notif {
		s.mu.Lock()
		s.inflight[req.ID] = cancel
		s.mu.Unlock()
	}
	run := func() {
		defer cancel()
		defer s.forget(req)
		result := s.safely(reqCtx, req, m.call)
		if !req.Notif {
			s.reply(reqCtx, req, result)
		}
	}
	mutates := m.mutates
	if m.orderedAs != nil {
		mutates = methods[m.orderedAs(req.Params)].mutates
	}
	if mutates {
		s.enqueued++
		s.serial <- func() {
			run()
			s.markApplied()
		}
		return
	}
	// A read sees every state change that arrived before it (a codeLens
	// after a didChange sees the new text), and runs alongside other reads.
	barrier := s.enqueued
	go func() {
		if s.waitApplied(reqCtx, barrier) {
			run()
			return
		}
		cancel()
		s.forget(req)
		if !req.Notif {
			s.reply(reqCtx, req, outcome{err: reqCtx.Err()})
		}
	}()
}

func (s *Server) markApplied() {
	s.mu.Lock()
	s.applied++
	close(s.appliedNow)
	s.appliedNow = make(chan struct{})
	s.mu.Unlock()
}

// waitApplied waits until n state-changing messages have been applied.
func (s *Server) waitApplied(ctx context.Context, n uint64) bool {
	for {
		s.mu.Lock()
		done, next := s.applied >= n, s.appliedNow
		s.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-next:
		case <-ctx.Done():
			return false
		}
	}
}

// outcome is a handler's result or error.
type outcome struct {
	result any
	err    error
}

// safely runs a handler, turning a panic into an internal error so one bad
// request cannot take the server down.
func (s *Server) safely(ctx context.Context, req *jsonrpc2.Request, call handlerFunc) (out outcome) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error("handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			out = outcome{err: &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: fmt.Sprintf("internal error in %s: %v", req.Method, p)}}
		}
	}()
	ctx, done := s.startProgress(ctx, req)
	defer done()
	res, err := call(s, ctx, req.Params)
	return outcome{res, err}
}

func (s *Server) reply(ctx context.Context, req *jsonrpc2.Request, out outcome) {
	if req.Notif {
		if out.err != nil {
			s.logger.Warn("notification failed", "method", req.Method, "err", out.err)
		}
		return
	}
	if out.err != nil {
		s.replyError(ctx, req, toRPCError(ctx, out.err))
		return
	}
	if err := s.conn.Reply(context.WithoutCancel(ctx), req.ID, out.result); err != nil {
		s.opts.Logger.Debug("reply not sent", "method", req.Method, "err", err)
	}
}

func (s *Server) replyError(ctx context.Context, req *jsonrpc2.Request, e *jsonrpc2.Error) {
	if err := s.conn.ReplyWithError(context.WithoutCancel(ctx), req.ID, e); err != nil {
		s.opts.Logger.Debug("error reply not sent", "method", req.Method, "err", err)
	}
}

func (s *Server) cancelRequest(req *jsonrpc2.Request) {
	var p struct {
		ID jsonrpc2.ID `json:"id"`
	}
	if err := decodeParams(req.Params, &p); err != nil {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[p.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *Server) forget(req *jsonrpc2.Request) {
	if req.Notif {
		return
	}
	s.mu.Lock()
	delete(s.inflight, req.ID)
	s.mu.Unlock()
}

// notify sends a server → client notification. It never blocks on the
// client (see outbox).
func (s *Server) notify(method string, params any) {
	if err := s.conn.Notify(context.Background(), method, params); err != nil {
		s.opts.Logger.Debug("notification not sent", "method", method, "err", err)
	}
}

// notifyDroppable sends a notification the client can do without (a log
// line, a progress report), unless the client has stopped reading: then it
// is dropped rather than queued.
func (s *Server) notifyDroppable(method string, params any) {
	if s.out.Backlogged() {
		s.opts.Logger.Debug("notification dropped: the client is not reading", "method", method)
		return
	}
	s.notify(method, params)
}

// handlerFunc is the shape every method is adapted to.
type handlerFunc func(s *Server, ctx context.Context, params *json.RawMessage) (any, error)

type method struct {
	// mutates marks methods that change state: they run in arrival order on
	// the serial queue. The rest run concurrently.
	mutates bool
	// orderedAs, when set, names the method a request with these params is
	// ordered as, in place of mutates (a command as the method it reaches).
	orderedAs func(params *json.RawMessage) string
	call      handlerFunc
	// params and result are the types call decodes and returns, which a
	// test holds to protocol.Methods.
	params, result reflect.Type
}

// reader adapts a read-only method with typed params.
func reader[P, R any](f func(*Server, context.Context, *P) (R, error)) method {
	return method{call: adapt(f), params: reflect.TypeFor[P](), result: reflect.TypeFor[R]()}
}

// writer adapts a state-changing method with typed params.
func writer[P, R any](f func(*Server, context.Context, *P) (R, error)) method {
	return method{mutates: true, call: adapt(f), params: reflect.TypeFor[P](), result: reflect.TypeFor[R]()}
}

func adapt[P, R any](f func(*Server, context.Context, *P) (R, error)) handlerFunc {
	return func(s *Server, ctx context.Context, raw *json.RawMessage) (any, error) {
		p := new(P)
		if err := decodeParams(raw, p); err != nil {
			return nil, err
		}
		return f(s, ctx, p)
	}
}
