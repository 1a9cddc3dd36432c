package main

import (
	"os"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	mcpserver "github.com/margin-md/margin/server/mcp"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault/history"
)

func newMCPCommand(g *globals) *cobra.Command {
	var now nowFlag
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the vault to AI applications over MCP (stdio)",
		Long: `mcp speaks the Model Context Protocol on stdin and stdout, for Claude Desktop,
Claude Code, Cursor or any MCP client: tools to search and read the notes,
list tasks and reports, ask the query flow and log, and to propose edits and
task changes. A proposal changes nothing: it waits in a change set under
Margin/Changes until you approve it (tick its line, the editor lens, margin
approve). It runs beside margin serve on the same vault, or alone. Logs go
to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			slot := &ledger.Slot{}
			client, err := llm.New(cfg.LLM, llm.WithLogger(logger), llm.WithRecorder(slot))
			if err != nil {
				return usageError(err)
			}
			dir, err := cfg.vaultDir()
			if err != nil {
				return err
			}
			// The server indexes the vault as the client connects (a first
			// index takes seconds), not before: no openWorkspace.
			// Embeddings for related_notes: margin mcp reads the vectors
			// and leaves embedding to margin serve or margin embed.
			o := workspace.Options{Parts: workspace.Changes | workspace.Query | workspace.Reviews | workspace.Embeddings, LLM: client, Ledger: slot,
				Agents: cfg.agentsOptions(), Query: cfg.queryOptions(now.t), Vault: cfg.vaultOptions(), Logger: logger,
				History: history.Options{Keep: cfg.History.Keep}}
			o.Vault.Dir = dir
			ws, err := workspace.Open(cmd.Context(), o)
			if err != nil {
				return err
			}
			defer ws.Close()
			s, err := mcpserver.New(cmd.Context(), ws, mcpserver.Options{Version: version, Logger: logger})
			if err != nil {
				return err
			}
			go func() {
				<-s.Indexed()
				collectLessOften()
				// As margin serve does after its first scan (vault.Run).
				if _, err := ws.Vault.Index().MergeCold(cmd.Context()); err != nil && cmd.Context().Err() == nil {
					logger.Warn("merging the search index after the first scan", "err", err)
				}
			}()
			return s.Run(cmd.Context(), &mcp.StdioTransport{})
		},
	}
	addNowFlag(cmd, &now)
	return cmd
}

// mcpGCPercent is margin mcp's GOGC once the first scan is done. Its live
// heap is about a megabyte (the index is SQLite's), and each tool call
// allocates some hundreds of kilobytes the SDK's JSON decoding drops at
// once, so at the default 100 the collector ran every three calls, a
// quarter of the time, slowing the searches it overlapped (a search_notes
// round trip p50 0.3 to 0.6 ms slower on the 10k vault). At 400 its heap
// goal is 16 MB. A first index, which holds much more, runs at the default.
const mcpGCPercent = 400

// collectLessOften sets mcpGCPercent, unless the person set GOGC.
func collectLessOften() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(mcpGCPercent)
	}
}
