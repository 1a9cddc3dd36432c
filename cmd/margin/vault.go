package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/retrieve"
)

// openVault is what every in-process command starts with: read the
// configuration, open the vault and bring its index up to date.
func (g *globals) openVault(cmd *cobra.Command) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{})
}

// openTasks is openVault with the agents' records.
func (g *globals) openTasks(cmd *cobra.Command) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{Parts: workspace.Tasks})
}

// openWorkspace opens the vault of cfg in-process with the parts o names,
// its index brought up to date before they open, drawing the scan's
// progress on stderr when it is a terminal.
func openWorkspace(ctx context.Context, cfg Config, logger *slog.Logger, o workspace.Options) (*workspace.Workspace, error) {
	dir, err := cfg.vaultDir()
	if err != nil {
		return nil, err
	}
	o.Vault, o.History = cfg.vaultOptions(), history.Options{Keep: cfg.History.Keep}
	o.Vault.Dir, o.Logger, o.Scan = dir, logger, true
	if isTerminal(os.Stderr) {
		last := time.Time{}
		o.Progress = func(done, total int) {
			if time.Since(last) > 100*time.Millisecond || done == total {
				fmt.Fprintf(os.Stderr, "\rindexing %d/%d files", done, total)
				last = time.Now()
			}
		}
		defer fmt.Fprint(os.Stderr, "\r\033[K")
	}
	return workspace.Open(ctx, o)
}

// openSearch opens the vault with the retriever, its queries embedded by
// the embed role's model, for a search by meaning.
func (g *globals) openSearch(cmd *cobra.Command) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	slot := &ledger.Slot{} // the query's embed call goes to the ledger, as every model call does
	client, err := llm.New(cfg.LLM, llm.WithLogger(logger), llm.WithRecorder(slot))
	if err != nil {
		return nil, usageError(err)
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{Parts: workspace.Search, LLM: client, Ledger: slot})
}

func newStatusCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Index the vault and show what margin sees in it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.openEmbeddings(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			v := ws.Vault
			st, err := v.Status(cmd.Context())
			if err != nil {
				return err
			}
			problems, err := v.Index().Coverage(cmd.Context(), index.StateFailed)
			if err != nil {
				return err
			}
			e, err := ws.Vectors.Status(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					vault.Status
					Embedding protocol.EmbeddingStatus `json:"embedding"`
				}{st, wire.EmbeddingStatus(e)})
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "vault\t%s\n", st.Vault)
			fmt.Fprintf(w, "notes\t%s\n", noteCounts(st))
			fmt.Fprintf(w, "outputs\t%d (margin's reports, journals, change sets and templates)\n", st.Outputs)
			fmt.Fprintf(w, "files\t%d indexed, %d skipped, %d failed\n", st.Indexed, st.Skipped, st.Failed)
			w.Flush()
			writeEmbedding(cmd.OutOrStdout(), e)
			for _, warning := range st.Warnings {
				fmt.Fprintf(cmd.OutOrStdout(), "  warning: %s\n", warning)
			}
			for _, f := range problems {
				fmt.Fprintf(cmd.OutOrStdout(), "  failed: %s: %s\n", f.Path, f.Reason)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// noteCounts describes the user's notes: "120 (30 daily, 1 task, 3 templates)".
func noteCounts(st vault.Status) string {
	return fmt.Sprintf("%d (%d daily, %s, %s)", st.Notes, st.DailyNotes,
		plural(st.Tasks, "task"), plural(st.Templates, "template"))
}

func newSearchCommand(g *globals) *cobra.Command {
	var (
		q      index.Query
		mode   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "search [flags] [words...]",
		Short: "Search the vault's notes and daily entries",
		Example: `  margin search bench press
  margin search "why did my bench press feel heavy?"
  margin search --mode phrase "felt heavy"
  margin search --mode hybrid "how do I sleep better"
  margin search --from 2026-11-09 --to 2026-11-15 sleep
  margin search --glob 'Tasks/**' --tag work
  margin search status:done rating:7
  margin search tag:work budget`,
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Text, q.Mode = strings.Join(args, " "), index.Mode(mode)
			if err := retrieve.Validate(q); err != nil {
				return usageError(searchFlagError(err))
			}
			byMeaning := q.Mode == retrieve.ModeSemantic || q.Mode == retrieve.ModeHybrid
			var ws *workspace.Workspace
			var err error
			if byMeaning {
				ws, err = g.openSearch(cmd)
			} else {
				ws, err = g.openVault(cmd)
			}
			if err != nil {
				return err
			}
			defer ws.Close()
			var r retrieve.Result
			if byMeaning {
				r, err = ws.Retrieve.Find(cmd.Context(), q)
			} else {
				r.Mode = q.Mode
				r.Result, err = ws.Vault.Index().Find(cmd.Context(), q)
			}
			if err != nil {
				return err
			}
			if r.Fallback != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "searched by keyword: %s\n", r.Fallback)
			}
			if asJSON {
				if r.Hits == nil {
					r.Hits = []index.Hit{}
				}
				return writeJSON(cmd.OutOrStdout(), r)
			}
			// path:line first, as grep and editors read it.
			for _, h := range r.Hits {
				anchor := ""
				if h.Heading != "" {
					anchor = "  #" + h.Heading
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s:%d%s\n", h.Path, h.Line, anchor)
				// A note found by its name or properties may have no
				// text to show.
				if s := note.OneLine(h.Snippet); strings.TrimSpace(s) != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "    %s\n", s)
				}
			}
			switch {
			case r.Total == 0:
				fmt.Fprintln(cmd.ErrOrStderr(), "no matches")
			case r.Truncated:
				fmt.Fprintf(cmd.ErrOrStderr(), "showing %d of %d matching notes; --limit shows more\n", len(r.Hits), r.Total)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "auto", "auto (all words, or for a question the most of its words), all, any, phrase, semantic (by meaning) or hybrid (by meaning and words)")
	f.StringVar(&q.From, "from", "", "only daily entries on or after this date (YYYY-MM-DD)")
	f.StringVar(&q.To, "to", "", "only daily entries on or before this date (YYYY-MM-DD)")
	f.StringVar(&q.Glob, "glob", "", "only paths matching this glob (** crosses folders)")
	f.StringSliceVar(&q.Tags, "tag", nil, "only notes with this tag (repeatable)")
	f.IntVar(&q.Limit, "limit", 20, "at most this many hits")
	f.BoolVar(&q.Outputs, "include-outputs", false, "also search margin's own outputs (reports, journals, change sets)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// searchFlagError names the flag of what index.Query.Validate turned
// away: a date that is no date would otherwise read as "no matches".
func searchFlagError(err error) error {
	var qe *index.QueryError
	if !errors.As(err, &qe) {
		return err
	}
	if qe.Field == "query" {
		return errors.New("search needs words, or --from, --to, --glob or --tag")
	}
	return fmt.Errorf("--%s %s", qe.Field, qe.Reason)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
