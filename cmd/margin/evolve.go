package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
)

func newEvolveCommand(g *globals) *cobra.Command {
	var (
		approve  bool
		reject   string
		messages []string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "evolve TEMPLATE",
		Short: "Improve a template's directives with the evolution agent",
		Long: `evolve starts an evolution session on a template (task-agent, or
template-improver for the evolution agent's own): the evolution agent reads
the template's directives, how its agents did (wakes, failures, tokens, how
often people confirmed or rejected each tool's proposals and why), their
recent reports and observations and the version history, and proposes new
directives, shown as a diff of each.

In a terminal you then approve, reject, or answer the agent and get a new
proposal. --message sends messages first; --approve or --reject decide
without asking. Without a terminal and without either, the session stays
open and evolution/approve or evolution/reject can decide it later. Every
session is written to <output folder>/Evolution/<template>-<time>.md.`,
		Example: `  margin evolve task-agent
  margin evolve task-agent --message "Stop proposing estimates" --approve
  margin evolve task-agent --reject "the report is fine as it is"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if approve && cmd.Flags().Changed("reject") {
				return usageError(errors.New("--approve and --reject exclude each other"))
			}
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			v, err := openScanned(cmd.Context(), cfg, logger)
			if err != nil {
				return err
			}
			defer v.Close()
			led, err := ledger.Open(cmd.Context(), v.DB(), logger)
			if err != nil {
				return err
			}
			client, err := llm.New(cfg.LLM, llm.WithLogger(logger), llm.WithRecorder(led))
			if err != nil {
				return usageError(err)
			}
			opts := cfg.agentsOptions()
			opts.Logger = logger
			lib := templates.New(v, opts.TemplatesOptions())
			if err := lib.Seed(cmd.Context()); err != nil {
				return err
			}
			evo, err := evolution.New(cmd.Context(), v, lib, client, evolution.Options{Logger: logger, Now: opts.Now})
			if err != nil {
				return err
			}
			s := evolveSession{ctx: cmd.Context(), evo: evo, out: cmd.OutOrStdout(), json: asJSON}
			progress("the evolution agent is reading " + args[0])
			turn, err := evo.Start(cmd.Context(), args[0])
			clearProgress()
			if err != nil {
				return err
			}
			if err := s.show(turn); err != nil {
				return err
			}
			for _, m := range messages {
				if turn, err = s.send(turn.SessionID, m); err != nil {
					return err
				}
			}
			switch {
			case approve:
				return s.approve(turn.SessionID)
			case cmd.Flags().Changed("reject"):
				return s.reject(turn.SessionID, reject)
			case isTerminal(os.Stdin) && !asJSON:
				return s.interact(turn, cmd.InOrStdin())
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "session %s stays open (%s): decide it with evolution/approve or evolution/reject\n", turn.SessionID, turn.Path)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&approve, "approve", false, "approve the proposal: it becomes the template's active version")
	f.StringVar(&reject, "reject", "", "reject the proposal, with this reason (may be empty)")
	f.StringArrayVar(&messages, "message", nil, "send this message to the evolution agent before deciding (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print each turn and the outcome as JSON")
	return cmd
}

// evolveSession prints a session's turns and decides it.
type evolveSession struct {
	ctx  context.Context
	evo  *evolution.Evolution
	out  io.Writer
	json bool
}

func (s evolveSession) show(t evolution.Turn) error {
	if s.json {
		return writeJSON(s.out, t)
	}
	fmt.Fprintf(s.out, "Evolution agent: %s\n", t.Message)
	if p := t.Proposal; p != nil {
		fmt.Fprintf(s.out, "\nProposal (from v%d): %s\n", p.BaseVersion, p.Rationale)
		for _, d := range []struct{ what, diff string }{{"General directive", p.GeneralDiff}, {"Report directive", p.ReportDiff}} {
			if d.diff == "" {
				fmt.Fprintf(s.out, "\n%s: unchanged\n", d.what)
			} else {
				fmt.Fprintf(s.out, "\n%s:\n%s", d.what, d.diff)
			}
		}
	}
	return nil
}

func (s evolveSession) send(id, text string) (evolution.Turn, error) {
	progress("the evolution agent is answering")
	turn, err := s.evo.Send(s.ctx, id, text)
	clearProgress()
	if err != nil {
		return turn, err
	}
	return turn, s.show(turn)
}

func (s evolveSession) approve(id string) error {
	t, err := s.evo.Approve(s.ctx, id)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(s.out, t)
	}
	fmt.Fprintf(s.out, "approved: %s is active (%s); agents use it from their next wake\n", t.Label(), t.Path)
	return nil
}

func (s evolveSession) reject(id, reason string) error {
	sess, err := s.evo.Reject(s.ctx, id, reason)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(s.out, sess)
	}
	fmt.Fprintf(s.out, "rejected; %s stays as it is (%s)\n", sess.Template, sess.Path)
	return nil
}

// interact asks the person what to do until they approve, reject or quit.
func (s evolveSession) interact(turn evolution.Turn, in io.Reader) error {
	lines := bufio.NewScanner(in)
	for {
		if turn.Proposal != nil {
			fmt.Fprint(s.out, "\n[a]pprove, [r]eject, [q]uit leaving it open, or type a message: ")
		} else {
			fmt.Fprint(s.out, "\n[r]eject, [q]uit leaving it open, or type a message: ")
		}
		if !lines.Scan() {
			// End of input (or /dev/null, which passes for a terminal).
			fmt.Fprintf(s.out, "\nsession %s stays open (%s)\n", turn.SessionID, turn.Path)
			return lines.Err()
		}
		answer := strings.TrimSpace(lines.Text())
		switch strings.ToLower(answer) {
		case "":
			continue
		case "a", "approve":
			if turn.Proposal == nil {
				fmt.Fprintln(s.out, "there is no proposal to approve yet")
				continue
			}
			return s.approve(turn.SessionID)
		case "r", "reject":
			fmt.Fprint(s.out, "reason (optional): ")
			reason := ""
			if lines.Scan() {
				reason = lines.Text()
			}
			return s.reject(turn.SessionID, reason)
		case "q", "quit":
			fmt.Fprintf(s.out, "session %s stays open (%s)\n", turn.SessionID, turn.Path)
			return nil
		}
		next, err := s.send(turn.SessionID, answer)
		if err != nil {
			return err
		}
		turn = next
	}
}

// progress says on stderr, when it is a terminal, what is being waited for.
func progress(what string) {
	if isTerminal(os.Stderr) {
		fmt.Fprintf(os.Stderr, "\r\033[K%s…", what)
	}
}
