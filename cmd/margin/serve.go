package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/vault/history"
)

func newServeCommand(g *globals) *cobra.Command {
	var now nowFlag
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an editor over stdio (JSON-RPC 2.0, LSP framing)",
		Long: `serve speaks JSON-RPC 2.0 with LSP framing on stdin and stdout, for an editor
plugin or any LSP client. The vault is --vault, else vault.path, else the
editor's workspace root from initialize. Logs go to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			applyMemoryLimit(cmd.Context(), cfg.Server.MemoryLimit)
			opts := cfg.vaultOptions()
			opts.Dir = expandHome(opts.Dir)
			slot := &ledger.Slot{}
			client, err := llm.New(cfg.LLM, llm.WithLogger(logger), llm.WithRecorder(slot))
			if err != nil {
				return usageError(err)
			}
			s := server.New(server.Options{
				Vault:          opts,
				LLM:            client,
				Agents:         cfg.agentsOptions(),
				Ledger:         slot,
				Query:          cfg.queryOptions(now.t),
				History:        history.Options{Keep: cfg.History.Keep},
				Embed:          cfg.embedOptions(),
				MaxMessageSize: cfg.Server.MaxMessageSize,
				Version:        version,
				Logger:         logger,
			})
			if code := s.Serve(cmd.Context(), os.Stdin, os.Stdout); code != 0 {
				return &exitError{code: code}
			}
			return nil
		},
	}
	addNowFlag(cmd, &now)
	return cmd
}
