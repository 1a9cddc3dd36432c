package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/workspace"
)

// openChanges opens the vault and its change sets without running the
// agents: the command line decides through the same Changes.Decide as
// margin serve, and the decision reaches the agent through its next
// wake's run key.
func (g *globals) openChanges(cmd *cobra.Command) (*workspace.Workspace, error) {
	cfg, logger, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	return openWorkspace(cmd.Context(), cfg, logger, workspace.Options{Parts: workspace.Changes, Agents: cfg.agentsOptions()})
}

func newChangesCommand(g *globals) *cobra.Command {
	var (
		task, status string
		asJSON       bool
	)
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "List the change sets agents proposed",
		Long: `changes lists the change sets the task agents proposed, newest first: the
open ones (pending and partially resolved) unless --status says otherwise.
Decide with margin approve and margin reject, or tick the lines of the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch status {
			case "", "all", changes.SetPending, changes.SetPartial, changes.SetResolved, changes.SetExpired, changes.SetSuperseded:
			default:
				return usageError(fmt.Errorf("--status must be pending, partially-resolved, resolved, expired, superseded or all, got %q", status))
			}
			ws, err := g.openChanges(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			v, ch := ws.Vault, ws.Changes
			f := changes.ChangeSetFilter{Status: status}
			if task != "" {
				if f.Task, err = findTask(cmd, v, task); err != nil {
					return err
				}
			}
			sets, err := ch.ChangeSets(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), sets)
			}
			if len(sets) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no change sets")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tITEM\tSTATUS\tSUMMARY")
			for _, cs := range sets {
				fmt.Fprintf(w, "%s\t\t%s\t%s (%s, expires %s)\n", cs.ID, cs.Status, cs.Task, cs.Path, when(cs.Expires))
				for _, it := range cs.Items {
					fmt.Fprintf(w, "\t%s\t%s\t%s\n", it.ID, it.Status, it.Summary)
				}
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "only change sets of this task (path or name)")
	cmd.Flags().StringVar(&status, "status", "", "pending, partially-resolved, resolved, expired, superseded or all")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// newDecideCommand is margin approve and margin reject: a verdict on the
// named items of a change set, or on all its open items.
func newDecideCommand(g *globals, verdict string) *cobra.Command {
	var reason string
	use, short := "approve ID [ITEM...]", "Confirm and apply proposed changes"
	if verdict == changes.Rejected {
		use, short = "reject ID [ITEM...]", "Reject proposed changes, with a reason the agent reads"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `. ID is a change set id (margin changes lists them); without
ITEMs every open item of the set is decided. Confirmed items are re-checked
against the task note first: one whose field changed since it was proposed
is marked stale and not applied.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.openChanges(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			ch := ws.Changes
			id, items := args[0], args[1:]
			if len(items) == 0 {
				cs, err := ch.Store().ChangeSet(cmd.Context(), id)
				if err != nil {
					return err
				}
				for _, it := range cs.Items {
					if it.Status == changes.ItemPending || it.Status == changes.ItemDeferred {
						items = append(items, it.ID)
					}
				}
			}
			ds := make([]changes.ItemDecision, len(items))
			for i, it := range items {
				ds[i] = changes.ItemDecision{Item: it, Verdict: verdict, Reason: reason}
			}
			cs, err := ch.Decide(cmd.Context(), id, ds)
			if errors.Is(err, changes.ErrBadVerdict) {
				return usageError(err)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %s\n", cs.ID, cs.Status)
			for _, it := range cs.Items {
				line := fmt.Sprintf("  %s %-10s %s", it.ID, it.Status, it.Summary)
				if it.Detail != "" {
					line += " — " + it.Detail
				}
				fmt.Fprintln(out, line)
			}
			return nil
		},
	}
	if verdict == changes.Rejected {
		cmd.Flags().StringVar(&reason, "reason", "", "why, in a few words: the agent reads it on its next wake")
	}
	return cmd
}
