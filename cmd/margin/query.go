package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/workspace"
)

// queryOptions turns the config into the query engine's typed options.
// now, when set, pins the engine's clock (see the hidden --now flag).
func (c Config) queryOptions(now time.Time) query.Options {
	o := query.Options{
		MaxEntries:       c.Query.MaxEntries,
		ResponseStyle:    c.Query.ResponseStyle,
		SessionTTL:       c.Query.SessionTTL,
		Deadline:         c.Query.Deadline,
		LoopMax:          c.LLM.Retry.LoopMax,
		ContextMaxTokens: c.Context.MaxTokens,
	}
	if o.LoopMax == 0 {
		o.LoopMax = -1 // the engine reads 0 as "default"; the config means none
	}
	if !now.IsZero() {
		o.Now = func() time.Time { return now }
	}
	return o
}

// nowFlag is --now: pretend it is this time. It makes demos, benchmarks and
// end-to-end tests on the sample vault (whose "today" is 2026-11-22)
// reproducible; it is hidden because nobody needs it day to day.
type nowFlag struct{ t time.Time }

func (f *nowFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format("2006-01-02T15:04")
}
func (f *nowFlag) Type() string { return "time" }
func (f *nowFlag) Set(s string) error {
	t, err := query.ParseWhen(s)
	if err != nil {
		return err
	}
	f.t = t
	return nil
}

func addNowFlag(cmd *cobra.Command, f *nowFlag) {
	cmd.Flags().Var(f, "now", "pretend it is this time (YYYY-MM-DDTHH:MM)")
	_ = cmd.Flags().MarkHidden("now")
}

// openEngine opens and indexes the vault and builds the query engine on it.
// The engine's model calls go to the ledger in the vault's state database,
// as the server's do.
func openEngine(cmd *cobra.Command, g *globals, now time.Time) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	// The slot lets a bad model configuration fail before the vault is scanned.
	slot := &ledger.Slot{}
	client, err := llm.New(cfg.LLM, llm.WithLogger(logger), llm.WithRecorder(slot))
	if err != nil {
		return nil, usageError(err)
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{Parts: workspace.Query, LLM: client, Ledger: slot, Query: cfg.queryOptions(now)})
}

// stderrProgress draws the flow's stages on stderr when it is a terminal.
func stderrProgress() query.Progress {
	if !isTerminal(os.Stderr) {
		return nil
	}
	return func(stage string) { fmt.Fprintf(os.Stderr, "\r\033[K%s…", stage) }
}

func clearProgress() {
	if isTerminal(os.Stderr) {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
}

func newAskCommand(g *globals) *cobra.Command {
	var (
		asJSON  bool
		now     nowFlag
		session string
		decline bool
		answers []string
	)
	cmd := &cobra.Command{
		Use:   "ask [flags] TEXT...",
		Short: "Ask a question about your notes (or log something: margin decides)",
		Example: `  margin ask "Why did my bench press feel heavy last week?"
  margin ask --session 3f2a… --answer q1="slept badly"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			if session == "" && strings.TrimSpace(text) == "" {
				return usageError(fmt.Errorf("ask needs a question, or --session with --answer or --decline"))
			}
			ws, err := openEngine(cmd, g, now.t)
			if err != nil {
				return err
			}
			defer ws.Close()
			e := ws.Query
			var res query.Result
			if session != "" {
				byID := map[string]string{}
				for _, a := range answers {
					id, ans, ok := strings.Cut(a, "=")
					if !ok {
						return usageError(fmt.Errorf("--answer %q: want ID=TEXT", a))
					}
					byID[id] = ans
				}
				res, err = e.Reply(byPerson(cmd), session, byID, decline, stderrProgress())
			} else {
				res, err = e.Ask(byPerson(cmd), text, stderrProgress())
			}
			clearProgress()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			printResult(cmd.OutOrStdout(), res)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&session, "session", "", "reply to this clarification session")
	f.StringArrayVar(&answers, "answer", nil, "an answer to a clarification question, ID=TEXT (repeatable)")
	f.BoolVar(&decline, "decline", false, "decline the clarification questions")
	addNowFlag(cmd, &now)
	return cmd
}

func printResult(w io.Writer, r query.Result) {
	fmt.Fprintln(w, r.Answer)
	for _, q := range r.Questions {
		fmt.Fprintf(w, "\n%s: %s\n", q.ID, q.Question)
		if len(q.Options) > 0 {
			fmt.Fprintf(w, "    options: %s\n", strings.Join(q.Options, " | "))
		}
	}
	if r.Status == query.StatusClarification {
		fmt.Fprintf(w, "\nreply with: margin ask --session %s --answer q1=...\n", r.SessionID)
	}
	if len(r.Citations) > 0 {
		fmt.Fprintln(w, "\nsources:")
		for _, c := range r.Citations {
			fmt.Fprintf(w, "  %s\n", c.Link)
		}
	}
	if len(r.Gaps) > 0 {
		fmt.Fprintln(w, "\nmissing:")
		for _, g := range r.Gaps {
			fmt.Fprintf(w, "  %s\n", g)
		}
	}
	// A log's answer says where it went; a question with a log in it
	// says so here.
	if r.Logged != nil && !strings.Contains(r.Answer, r.Logged.Path) {
		fmt.Fprintf(w, "\nlogged: %s ## %s\n", r.Logged.Path, r.Logged.Heading)
	}
	if r.KeywordOnly != "" {
		fmt.Fprintf(w, "\nsearched by keyword: %s\n", r.KeywordOnly)
	}
	if r.Confidence != "" {
		fmt.Fprintf(w, "\n[%s, confidence %s, session %s]\n", r.Status, r.Confidence, r.SessionID)
	} else {
		fmt.Fprintf(w, "\n[%s, session %s]\n", r.Status, r.SessionID)
	}
}

func newLogCommand(g *globals) *cobra.Command {
	var (
		asJSON bool
		now    nowFlag
		at     string
	)
	cmd := &cobra.Command{
		Use:   "log [flags] TEXT...",
		Short: "Log something into today's daily note as a ## HH:MM entry",
		Example: `  margin log "Bench 3x5 @ 190, felt strong"
  margin log --time 2026-11-21T07:30 "Slept 6h, woke up twice"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var when time.Time
			if at != "" {
				t, err := query.ParseWhen(at)
				if err != nil {
					return usageError(fmt.Errorf("--time: %w", err))
				}
				when = t
			}
			ws, err := openEngine(cmd, g, now.t)
			if err != nil {
				return err
			}
			defer ws.Close()
			e := ws.Query
			res, err := e.Log(byPerson(cmd), strings.Join(args, " "), when, stderrProgress())
			clearProgress()
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			printResult(cmd.OutOrStdout(), res)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&at, "time", "", "when it happened (YYYY-MM-DDTHH:MM; default now)")
	addNowFlag(cmd, &now)
	return cmd
}

func newImportCommand(g *globals) *cobra.Command {
	var now nowFlag
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Log every *.md file under DIR, each as one input dated by its modification time",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := markdownFiles(args[0])
			if err != nil {
				return usageError(err)
			}
			ws, err := openEngine(cmd, g, now.t)
			if err != nil {
				return err
			}
			defer ws.Close()
			e := ws.Query
			return importFiles(byPerson(cmd), e, files, cmd.OutOrStdout())
		},
	}
	addNowFlag(cmd, &now)
	return cmd
}

func markdownFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	sort.Strings(files)
	return files, nil
}

// importFiles logs each file in turn; one that fails is reported and the
// rest still go in, and the command fails at the end if any did.
func importFiles(ctx context.Context, e *query.Engine, files []string, out io.Writer) error {
	failed, skipped := 0, 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && strings.TrimSpace(string(data)) == "" {
			fmt.Fprintf(out, "skipped %s: empty\n", f)
			skipped++
			continue
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = os.Stat(f)
		}
		var res query.Result
		if err == nil {
			res, err = e.Log(ctx, string(data), fi.ModTime(), nil)
		}
		if err != nil {
			failed++
			fmt.Fprintf(out, "failed %s: %v\n", f, err)
			continue
		}
		if res.Logged != nil {
			fmt.Fprintf(out, "logged %s → %s ## %s\n", f, res.Logged.Path, res.Logged.Heading)
		}
	}
	fmt.Fprintf(out, "imported %d of %s (%d empty, %d failed)\n", len(files)-failed-skipped, plural(len(files), "file"), skipped, failed)
	if failed > 0 {
		return fmt.Errorf("%s failed", plural(failed, "file"))
	}
	return nil
}
