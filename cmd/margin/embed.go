package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/vectors"
)

// embedOptions are the Embeddings part's options from the config.
func (c Config) embedOptions() workspace.EmbedOptions {
	return workspace.EmbedOptions{DailyTokens: c.Agents.DailyEmbedTokenBudget}
}

// openEmbeddings opens the vault, its index brought up to date, with the
// notes' vectors and the model client that embeds them.
func (g *globals) openEmbeddings(cmd *cobra.Command) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	client, err := llm.New(cfg.LLM, llm.WithLogger(logger))
	if err != nil {
		return nil, usageError(err)
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{Parts: workspace.Embeddings, LLM: client, Embed: cfg.embedOptions()})
}

func newEmbedCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "embed",
		Short: "Embed the notes for search by meaning and related notes, until done",
		Long: `embed brings the notes' vectors up to date in the foreground, the most
recently edited notes first, with progress on stderr, and stops when nothing
is left, the day's budget (agents.daily_embed_token_budget) is spent or the
embedding model cannot be reached. margin serve does the same in the
background; run this once after installing a model to have it all at once.
Only changed sections are embedded again; a kill loses at most one batch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.openEmbeddings(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			draw := isTerminal(os.Stderr)
			last := time.Time{}
			e, err := ws.Vectors.Embed(cmd.Context(), func(e workspace.Embedding) {
				if draw && (time.Since(last) > 100*time.Millisecond || e.State != vectors.Embedding) {
					fmt.Fprintf(os.Stderr, "\r\033[Kembedding: %s", progressLine(e))
					last = time.Now()
				}
			})
			if draw {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), wire.EmbeddingStatus(e))
			}
			writeEmbedding(cmd.OutOrStdout(), e)
			switch e.State {
			case vectors.Waiting:
				return fmt.Errorf("the embedding model failed: %s", e.LastError)
			case vectors.Paused:
				return fmt.Errorf("%s; raise agents.daily_embed_token_budget (0: no limit) to go on today", e.Note)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// progressLine is e in a few words: "120 of 300 chunks, 14.2 a second".
func progressLine(e workspace.Embedding) string {
	if e.Embedded+e.Left == 0 && e.State == vectors.Stopped {
		// No queue has chunked the notes yet, so there is nothing to
		// count; "0 of 0" would read as a vault with nothing to embed.
		return "not started yet"
	}
	s := fmt.Sprintf("%d of %d chunks", e.Embedded, e.Embedded+e.Left)
	if e.Rate > 0 {
		s += fmt.Sprintf(", %.1f a second", e.Rate)
	}
	if e.Note != "" {
		s += "; " + e.Note
	}
	return s
}

// writeEmbedding prints the embedding's lines, as margin status shows them.
func writeEmbedding(w io.Writer, e workspace.Embedding) {
	for _, line := range embeddingLines(e) {
		fmt.Fprintln(w, line)
	}
}

// embeddingLines say how far the notes' vectors are and what search does
// meanwhile.
func embeddingLines(e workspace.Embedding) []string {
	if e.State == workspace.Off {
		return []string{"embedding  off: " + e.Why}
	}
	state := string(e.State)
	switch {
	case e.Elsewhere && e.State != vectors.Stopped:
		state += " (in another margin process)"
	case e.State == vectors.Stopped && e.Left > 0:
		state = "stopped (margin serve embeds in the background; margin embed does it now)"
	}
	lines := []string{
		fmt.Sprintf("embedding  %s, %s", state, progressLine(e)),
		"  model    " + e.Model,
	}
	if e.Reembedding {
		lines = append(lines, fmt.Sprintf("  the model changed from %s: every chunk is embedded again", e.ModelBefore))
	}
	budget := "no daily limit"
	if e.DailyTokens > 0 {
		budget = fmt.Sprintf("of %d (agents.daily_embed_token_budget)", e.DailyTokens)
	}
	lines = append(lines, fmt.Sprintf("  today    %d tokens embedded, %s", e.TokensToday, budget))
	if e.LastError != "" {
		lines = append(lines, "  error    "+e.LastError)
	}
	if !e.Resumes.IsZero() && (e.State == vectors.Paused || e.State == vectors.Waiting) {
		lines = append(lines, "  resumes  "+e.Resumes.Local().Format("2006-01-02 15:04:05"))
	}
	if e.KeywordOnly {
		lines = append(lines, "  search   by keyword: "+e.Why)
	}
	return lines
}

// vectorsDetail is doctor's line on the embedding: "86 of 90 chunks
// embedded with ollama/embeddinggemma@768, 4 left (stopped); 1200 tokens
// today, no daily limit".
func vectorsDetail(e workspace.Embedding) string {
	if e.State == workspace.Off {
		return e.Why
	}
	s := fmt.Sprintf("%d of %d chunks embedded with %s, %d left (%s", e.Embedded, e.Embedded+e.Left, e.Model, e.Left, e.State)
	if e.Embedded+e.Left == 0 && e.State == vectors.Stopped {
		s = fmt.Sprintf("nothing embedded with %s yet (margin serve embeds in the background, margin embed now", e.Model)
	}
	if e.Elsewhere {
		s += " in another margin process"
	}
	if e.Rate > 0 {
		s += fmt.Sprintf(", %.1f chunks a second", e.Rate)
	}
	s += ")"
	if e.Note != "" {
		s += ": " + e.Note
	}
	if e.Reembedding {
		s += fmt.Sprintf("; the model changed from %s, so every chunk is embedded again", e.ModelBefore)
	}
	if e.DailyTokens > 0 {
		s += fmt.Sprintf("; %d of %d tokens today (agents.daily_embed_token_budget)", e.TokensToday, e.DailyTokens)
	} else {
		s += fmt.Sprintf("; %d tokens today, no daily limit (agents.daily_embed_token_budget: 0)", e.TokensToday)
	}
	if e.LastError != "" {
		s += "; last error: " + e.LastError
	}
	if e.KeywordOnly {
		s += "; search is by keyword: " + e.Why
	}
	return s
}

// embeddingFindings are doctor's lines on the notes' vectors: the model
// (reachable, pulled), how far the embedding is, and what stops it.
func embeddingFindings(ctx context.Context, cfg Config, ws *workspace.Workspace) []finding {
	client, err := llm.New(cfg.LLM)
	if err != nil {
		return nil // checkModels reports the llm section
	}
	var out []finding
	if _, err := client.EmbedModel(); err == nil {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		hs := client.ProbeEmbed(pctx)
		cancel()
		for _, h := range hs {
			f := finding{check: "embed " + h.Provider, ok: true, warn: h.Err != nil || !h.Reachable || len(h.Missing) > 0, fix: h.Fix}
			switch {
			case h.Err != nil:
				f.detail = h.Err.Error() + " (search is by keyword meanwhile)"
			case len(h.Missing) > 0:
				f.detail = "missing the embedding model " + strings.Join(h.Missing, ", ") + " (search is by keyword meanwhile)"
			default:
				f.detail = "reachable, with the embedding model"
			}
			out = append(out, f)
		}
	}
	s, err := ws.Vectors.Store(ctx)
	if err == nil {
		err = s.Check(ctx)
	}
	if err != nil {
		return append(out, finding{check: "vectors", detail: err.Error(),
			fix: "move " + vectors.FileName + " out of the state dir: margin embeds the notes again (search is by keyword meanwhile)"})
	}
	e, err := ws.Vectors.Status(ctx)
	if err != nil {
		return append(out, finding{check: "vectors", detail: err.Error()})
	}
	f := finding{check: "vectors", ok: true, detail: vectorsDetail(e)}
	switch {
	case e.State == workspace.Off:
		f.warn = true
		f.fix = "configure llm.tiers.embed (e.g. ollama: embeddinggemma) and run: ollama pull embeddinggemma"
	case e.DailyTokens > 0 && e.Left > 0 && e.TokensToday > 0 && (e.State == vectors.Paused || e.State == vectors.Stopped):
		// A stopped queue records no pause: what today spent says it.
		f.warn = true
		f.detail += "; what is left may wait for tomorrow's budget"
		f.fix = "wait for tomorrow, or raise agents.daily_embed_token_budget (0: no limit) and restart margin"
	case e.State == vectors.Waiting && !e.Elsewhere:
		f.warn = true
		f.fix = "start the model server (ollama serve) and pull the model; margin retries on its own"
	}
	return append(out, f)
}

func newRelatedCommand(g *globals) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "related NOTE",
		Short: "List the notes nearest a note by meaning that it does not link to or from",
		Long: `related lists the notes whose sections are nearest the note's by meaning
and that the note neither links to nor is linked from: links you may be
missing. Each comes as path:line of its nearest section, with a score (cosine
similarity). Before the notes are embedded (margin embed, or margin serve in
the background) the list is empty and says why.`,
		Example: `  margin related "Notes/Sleep.md"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit <= 0 {
				return usageError(fmt.Errorf("--limit must be positive, got %d", limit))
			}
			ws, err := g.openEmbeddings(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			path, err := ws.Vault.Path(args[0])
			if err != nil {
				return usageError(err)
			}
			r, err := ws.Related(cmd.Context(), path, limit)
			if errors.Is(err, index.ErrNotFound) {
				return fmt.Errorf("%s is not a note margin indexes", path)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"notes": r.Notes, "reason": r.Why})
			}
			if len(r.Notes) == 0 {
				why := r.Why
				if why == "" {
					why = "no other note is near it by meaning that it does not already link to or from"
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "no related notes:", why)
				return nil
			}
			// path:line first, as grep and editors read it.
			for _, n := range r.Notes {
				anchor := ""
				if n.Heading != "" {
					anchor = "  #" + n.Heading
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s:%d%s  (%.2f)\n", n.Path, n.Line, anchor, n.Score)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 10, "at most this many notes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
