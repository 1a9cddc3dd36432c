package server

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/sourcegraph/jsonrpc2"
)

type initializeParams struct {
	RootURI               string `json:"rootUri"`
	RootPath              string `json:"rootPath"`
	InitializationOptions struct {
		Vault string `json:"vault"`
	} `json:"initializationOptions"`
	Capabilities clientCapabilities `json:"capabilities"`
	ClientInfo   struct {
		Name string `json:"name"`
	} `json:"clientInfo"`
}

// clientCapabilities are the parts of the client's capabilities margin
// acts on.
type clientCapabilities struct {
	General struct {
		PositionEncodings []string `json:"positionEncodings"`
	} `json:"general"`
	Workspace struct {
		CodeLens struct {
			RefreshSupport bool `json:"refreshSupport"`
		} `json:"codeLens"`
	} `json:"workspace"`
	Window struct {
		ShowDocument struct {
			Support bool `json:"support"`
		} `json:"showDocument"`
		// WorkDoneProgress: the client accepts progress tokens the server
		// creates, for the background embedding.
		WorkDoneProgress bool `json:"workDoneProgress"`
	} `json:"window"`
}

type initializeResult struct {
	ServerInfo   serverInfo   `json:"serverInfo"`
	Capabilities capabilities `json:"capabilities"`
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type capabilities struct {
	PositionEncoding       positionEncoding `json:"positionEncoding"`
	TextDocumentSync       textDocumentSync `json:"textDocumentSync"`
	CodeLensProvider       struct{}         `json:"codeLensProvider"`
	HoverProvider          bool             `json:"hoverProvider"`
	ExecuteCommandProvider struct {
		Commands []string `json:"commands"`
	} `json:"executeCommandProvider"`
	// Experimental lists margin's own methods so a plugin can feature-detect.
	Experimental struct {
		Margin []string `json:"margin"`
	} `json:"experimental"`
}

type textDocumentSync struct {
	OpenClose bool `json:"openClose"`
	Change    int  `json:"change"` // 2 = incremental: only the changed ranges
	Save      struct {
		IncludeText bool `json:"includeText"`
	} `json:"save"`
}

func (s *Server) initialize(ctx context.Context, p *initializeParams) (any, error) {
	s.mu.Lock()
	started := s.state != stateNew
	s.mu.Unlock()
	if started {
		return nil, invalidParams("initialize", "sent twice")
	}

	opts := s.opts.Vault
	if opts.Dir == "" {
		dir, err := rootDir(*p)
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	if opts.Dir != "" {
		if err := s.openVault(ctx, opts); err != nil {
			return nil, err
		}
	}

	s.mu.Lock()
	s.state = stateRunning
	s.client, s.clientInfo = p.Capabilities, p.ClientInfo.Name
	s.encoding = negotiateEncoding(p.Capabilities.General.PositionEncodings)
	s.mu.Unlock()

	var res initializeResult
	res.ServerInfo = serverInfo{Name: "margin", Version: s.opts.Version}
	res.Capabilities.PositionEncoding = s.encoding
	res.Capabilities.HoverProvider = true
	res.Capabilities.TextDocumentSync.OpenClose = true
	res.Capabilities.TextDocumentSync.Change = 2
	res.Capabilities.TextDocumentSync.Save.IncludeText = true
	res.Capabilities.ExecuteCommandProvider.Commands = editorCommands
	res.Capabilities.Experimental.Margin = methodNames()
	return res, nil
}

// rootDir picks the vault from initialize params, most specific first.
func rootDir(p initializeParams) (string, error) {
	switch {
	case p.InitializationOptions.Vault != "":
		return filepath.Abs(p.InitializationOptions.Vault)
	case p.RootURI != "":
		u, err := url.Parse(p.RootURI)
		if err != nil || u.Scheme != "file" {
			return "", invalidParams("rootUri", fmt.Sprintf("%q is not a file:// URI", p.RootURI))
		}
		return filepath.FromSlash(u.Path), nil
	case p.RootPath != "":
		return filepath.Abs(p.RootPath)
	}
	return "", nil
}

// openVault opens the vault's workspace — the index, the ledger, the
// agents, evolution sessions and the query engine — and runs its scan,
// watcher and agents in the background; requests that read the index wait
// for the first scan.
func (s *Server) openVault(ctx context.Context, opts vault.Options) error {
	opts.OnStatus = func(st vault.IndexEvent) { s.notifyDroppable("margin/indexStatus", wire.IndexStatus(st)) }
	aopts := s.opts.Agents
	aopts.Notifier = task.NotifyFunc(s.agentNotify)
	aopts.Editor = editor{s}
	qopts := s.opts.Query
	qopts.Editor = editor{s}
	eopts := s.opts.Embed
	eopts.Background, eopts.OnProgress = true, s.hearEmbedding
	// The agents subscribe to the vault as it opens, before it runs, so
	// they miss no change.
	ws, err := workspace.Open(ctx, workspace.Options{
		Vault: opts, Parts: workspace.Agents | workspace.Evolution | workspace.Query | workspace.Reviews | workspace.Embeddings,
		LLM: s.opts.LLM, Ledger: s.opts.Ledger, Recorders: []llm.Recorder{&s.model},
		Agents: aopts, Query: qopts, Embed: eopts, History: s.opts.History, Logger: s.logger,
	})
	if err != nil {
		return fmt.Errorf("opening vault %s: %w", opts.Dir, err)
	}
	v := ws.Vault
	// The state dir ignores itself now; the line margin once added to the
	// vault's .gitignore goes, here and not in the reading commands.
	if removed, err := v.RemoveOldIgnoreLine(); err != nil {
		s.logger.Warn("could not remove margin's old line from .gitignore", "err", err)
	} else if removed {
		s.logger.Info("removed margin's old line from .gitignore: the state dir has a .gitignore of its own")
	}
	s.probeModel(ctx, ws.Templates)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		ws.Run(runCtx)
	}()
	s.mu.Lock()
	s.ws, s.stopVault, s.vaultDone = ws, stop, done
	s.mu.Unlock()
	return nil
}

// closeVault stops the workspace's scan, watcher and agents, and closes
// it: the ledger is detached before its database closes.
func (s *Server) closeVault() {
	s.mu.Lock()
	ws, stop, done := s.ws, s.stopVault, s.vaultDone
	s.ws = nil
	s.mu.Unlock()
	if ws == nil {
		return
	}
	stop()
	<-done
	if err := ws.Close(); err != nil {
		s.opts.Logger.Error("closing vault", "err", err)
	}
}

// open is the open workspace, nil when there is none.
func (s *Server) open() *workspace.Workspace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws
}

// openVaultReady returns the vault once its first scan is done, or says
// why there will be none: the vault stopped before it (the watcher could
// not start, the scan failed).
func (s *Server) openVaultReady(ctx context.Context) (*vault.Vault, error) {
	ws := s.open()
	if ws == nil {
		return nil, errNoVault
	}
	v := ws.Vault
	if err := v.WaitReady(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &jsonrpc2.Error{Code: CodeNoVault, Message: "margin cannot read the vault: " + err.Error() + "; restart margin once that is fixed"}
	}
	return v, nil
}

type empty struct{}

// clientName names the editor in margin's history: the person's undo
// from it is "person via <name>".
func (s *Server) clientName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientInfo == "" {
		return "editor"
	}
	return s.clientInfo
}

func (s *Server) initialized(ctx context.Context, _ *empty) (any, error) { return nil, nil }

func (s *Server) shutdown(ctx context.Context, _ *empty) (any, error) {
	s.mu.Lock()
	s.state = stateShutdown
	s.mu.Unlock()
	s.closeVault()
	return nil, nil
}

// exit ends Serve with LSP's exit code: 0 if shutdown came first, else 1.
func (s *Server) exit() {
	s.mu.Lock()
	code := 1
	if s.state == stateShutdown {
		code = 0
	}
	s.mu.Unlock()
	select {
	case s.exited <- code:
	default:
	}
}
