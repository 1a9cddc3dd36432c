// Package mcp serves a vault to AI applications over the Model Context
// Protocol (SPEC §10), with the official Go SDK: tools that read the
// vault (search, notes, tasks, reports, the query flow), one that logs,
// and two that propose changes, which go into change sets a person
// decides. Nothing a client sends changes a note until a person approves
// it. Every call is recorded in the ledger with the client's name.
//
// It runs on a workspace the command line opens (server/workspace) with
// the change sets and the query flow, and no watcher and no agents: beside
// margin serve it shares the state database and index, whose watcher and
// agents are serve's; alone, a tool reads an index that a warm scan
// brought up to date less than Options.Refresh ago. The first scan runs
// as the client connects: a first index of a large vault takes seconds,
// and clients give initialize less; the tools that read the index wait
// for it. After it, the server prunes the ledger's old calls (the
// workspace's KeepLedger), as margin serve does.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault/edit"
)

// Options configure the MCP server.
type Options struct {
	Version string
	Logger  *slog.Logger
	// Refresh is how old the index may be when a tool reads it: the
	// scan it reads began less than Refresh before the call; 1 s by
	// default.
	Refresh time.Duration
}

// Server is margin's MCP server on one open workspace, which must have
// the change sets, the query flow and the ledger.
type Server struct {
	ws    *workspace.Workspace
	tasks *task.Store
	opts  Options
	log   *slog.Logger
	mcp   *sdk.Server
	tools []string // names, in the order added

	scanMu   sync.Mutex    // guards the fields up to closed
	scanned  time.Time     // when the last scan that succeeded began; zero before one
	took     time.Duration // how long it took
	scanning chan struct{} // the scan under way, closed when it ends; nil when none is
	scanErr  error         // of the last scan
	followed bool          // another process watched the vault at the last call
	closed   bool          // no scan after Close: the vault is closing
	scans    sync.WaitGroup

	bg    context.Context    // of the scans and the pruning
	stop  context.CancelFunc // stops them
	ready chan struct{}      // closed when the first scan is done or has failed
	kept  chan struct{}      // closed when the ledger's pruning has stopped

	callsMu     sync.Mutex // guards callsClosed and sending on calls
	callsClosed bool
	calls       chan ledger.ToolCall
	done        chan struct{} // closed when writeCalls has written every call
}

// New builds the server on ws.
func New(ctx context.Context, ws *workspace.Workspace, opts Options) (*Server, error) {
	if ws.Changes == nil || ws.Query == nil || ws.Ledger == nil {
		return nil, errors.New("the MCP server needs a workspace with change sets, the query flow and the ledger")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	s := &Server{ws: ws, tasks: ws.Tasks, opts: opts, log: opts.Logger, ready: make(chan struct{}), kept: make(chan struct{}),
		calls: make(chan ledger.ToolCall, 1024), done: make(chan struct{})}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: "margin", Title: "margin", Version: opts.Version}, &sdk.ServerOptions{
		Logger:       opts.Logger,
		Instructions: instructions,
	})
	s.mcp.AddReceivingMiddleware(s.record)
	s.addTools()
	if err := s.addResources(); err != nil {
		return nil, err
	}
	go s.writeCalls()
	s.bg, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	s.scanMu.Lock()
	first := s.scan()
	s.scanMu.Unlock()
	go func() {
		<-first
		close(s.ready)
	}()
	go func() {
		defer close(s.kept)
		select { // after the first scan, which the client's first calls wait for
		case <-s.ready:
		case <-s.bg.Done():
			return
		}
		s.ws.KeepLedger(s.bg)
	}()
	return s, nil
}

// scan starts a warm scan, which brings the index up to date with the
// vault, and returns the channel closed when it ends. The caller holds
// scanMu, and no scan is under way.
func (s *Server) scan() <-chan struct{} {
	done := make(chan struct{})
	s.scanning = done
	s.scans.Add(1)
	go func() {
		defer s.scans.Done()
		start := time.Now()
		_, err := s.ws.Vault.Scan(s.bg, nil)
		if err != nil && s.bg.Err() == nil {
			// The next tool that reads the index scans again.
			s.log.Error("indexing the vault", "err", err)
		}
		s.scanMu.Lock()
		defer s.scanMu.Unlock()
		if err == nil {
			s.scanned, s.took = start, time.Since(start)
		}
		s.scanErr, s.scanning = err, nil
		close(done)
	}()
	return done
}

const instructions = `margin serves a markdown vault (an Obsidian-style folder of notes, daily logs and task notes).
Read with search_notes, read_note, list_tasks, get_report and ask. Nothing you send changes a note:
propose_edit and propose_task_change put a change into a change set the person reads as a diff and
approves or rejects; tell them what you proposed and why. Paths are relative to the vault.`

// Indexed is closed once the first scan is done, or has failed.
func (s *Server) Indexed() <-chan struct{} { return s.ready }

// Run serves one client on t until it disconnects or ctx is done, then
// writes the tool calls still queued for the ledger.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.mcp.Run(ctx, t)
	s.Close()
	return err
}

// Close stops the first scan if it still runs and the ledger's pruning,
// keeps any later scan from starting, and writes the tool calls still
// queued to the ledger; the server records no call after it. The
// workspace may close after it.
func (s *Server) Close() {
	s.stop()
	s.scanMu.Lock()
	s.closed = true
	s.scanMu.Unlock()
	s.scans.Wait()
	<-s.kept
	s.callsMu.Lock()
	if !s.callsClosed {
		s.callsClosed = true
		close(s.calls)
	}
	s.callsMu.Unlock()
	<-s.done
}

// record is the middleware that puts every tool call in the ledger with
// the client's name: those the SDK refuses (an unknown tool, arguments
// that do not fit the schema) as well as those a tool answers.
func (s *Server) record(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		start := time.Now()
		call := ledger.ToolCall{Time: start, Client: clientName(req.GetSession())}
		if p, ok := req.GetParams().(*sdk.CallToolParamsRaw); ok {
			call.Tool, call.Args = p.Name, string(p.Arguments)
		}
		var (
			res sdk.Result
			err error
		)
		if slices.Contains(s.tools, call.Tool) {
			// margin's history names the client as the cause of what the tool writes.
			ctx = edit.WithCause(ctx, edit.Cause{Actor: changes.ClientPrefix + call.Client})
			res, err = next(ctx, method, req)
		} else {
			// A tool error, not a protocol one, so that the model reads
			// which tools there are and calls one of them.
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{
				Text: fmt.Sprintf("unknown tool %q: margin's tools are %s", call.Tool, strings.Join(s.tools, ", "))}}}
		}
		call.Latency = time.Since(start)
		switch r, _ := res.(*sdk.CallToolResult); {
		case err != nil:
			call.Err = err.Error()
		case r != nil && r.IsError:
			call.Err = "tool error"
			if e := r.GetError(); e != nil {
				call.Err = e.Error()
			} else if len(r.Content) > 0 {
				if tc, ok := r.Content[0].(*sdk.TextContent); ok {
					call.Err = tc.Text
				}
			}
		}
		s.queue(call)
		return res, err
	}
}

// queue hands a call to writeCalls, unless the server is closing.
func (s *Server) queue(call ledger.ToolCall) {
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if s.callsClosed {
		return
	}
	select {
	case s.calls <- call:
	default:
		s.log.Warn("the ledger is behind; a tool call goes unrecorded", "tool", call.Tool)
	}
}

// writeCalls writes queued tool calls to the ledger in batches, off the
// calls' path: a write to the state database waits for its sync.
func (s *Server) writeCalls() {
	defer close(s.done)
	for c := range s.calls {
		batch := []ledger.ToolCall{c}
	more:
		for len(batch) < 256 {
			select {
			case c, ok := <-s.calls:
				if !ok {
					break more
				}
				batch = append(batch, c)
			default:
				break more
			}
		}
		if err := s.ws.Ledger.RecordToolCalls(context.Background(), batch); err != nil {
			s.log.Warn("recording tool calls", "err", err)
		}
	}
}

// clientName is the clientInfo.name the client gave at initialize.
func clientName(sess sdk.Session) string {
	if ss, ok := sess.(*sdk.ServerSession); ok {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			return changes.ClientName(p.ClientInfo.Name)
		}
	}
	return changes.ClientName("")
}

// fresh makes sure the index a tool reads comes from a scan that began
// less than Refresh before the call: otherwise it waits for one (the
// scan under way if that began late enough, else a new one; after a
// scan that failed, this is its retry). Past Refresh less twice the last
// scan's length it starts one for the calls to come, and does not wait
// for it, so that a client calling steadily seldom waits for a scan (one
// at 10,000 notes takes 50 to 90 ms). After the first scan, while
// another margin process watches the vault (margin serve), the index
// follows the vault through that process's watcher, and fresh scans
// nothing.
func (s *Server) fresh(ctx context.Context) error {
	call := time.Now()
	for {
		s.scanMu.Lock()
		if s.closed {
			s.scanMu.Unlock()
			return errors.New("margin mcp is shutting down")
		}
		if !s.scanned.IsZero() && s.watchedElsewhere() {
			s.scanMu.Unlock()
			return nil
		}
		if call.Sub(s.scanned) < s.opts.Refresh {
			if s.scanning == nil && time.Since(s.scanned) >= max(s.opts.Refresh/2, s.opts.Refresh-2*s.took) {
				s.scan()
			}
			s.scanMu.Unlock()
			return nil
		}
		var done <-chan struct{} = s.scanning
		if done == nil {
			done = s.scan()
		}
		s.scanMu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.scanMu.Lock()
		err, closed := s.scanErr, s.closed
		s.scanMu.Unlock()
		switch {
		case closed: // Close stopped the scan
			return errors.New("margin mcp is shutting down")
		case err != nil:
			return fmt.Errorf("the vault could not be indexed: %w", err)
		}
		// A scan that began after the call returns above; one that was
		// under way since before its deadline is followed by another.
	}
}

// watchedElsewhere reports whether another margin process watches the
// vault (see vault.Watched), and logs when that changes. The caller holds
// scanMu.
func (s *Server) watchedElsewhere() bool {
	w, err := s.ws.Vault.Watched()
	if err != nil {
		s.log.Debug("looking for a margin process that watches the vault", "err", err)
	}
	if w != s.followed {
		s.followed = w
		if w {
			s.log.Info("another margin process watches the vault: the index follows it without scans of this one")
		} else {
			s.log.Info("no other margin process watches the vault: scanning it again before the index is read")
		}
	}
	return w
}
