package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
)

func newAgentsResumeCommand(g *globals) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "resume [ID|TASK]",
		Short: "Bring dormant agents back",
		Long: `resume makes a dormant agent active again with a clean failure count: the
one named by its ID or its task (path or name), or with --all every dormant
agent. An agent whose task note was deleted is left: it wakes by itself when
the task comes back. A margin serve running on the vault wakes a resumed agent
within seconds; one started later wakes it when it starts.`,
		Example: `  margin agents resume "Ship invoice export"
  margin agents resume --all`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) {
				return usageError(errors.New("name one agent (its ID or TASK), or pass --all"))
			}
			ws, err := g.openTasks(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			ctx, st := cmd.Context(), ws.Tasks
			var agents []task.Agent
			if all {
				if agents, err = st.Agents(ctx, task.Dormant); err != nil {
					return err
				}
			} else {
				a, err := findAgent(cmd, ws.Vault, st, args[0])
				if err != nil {
					return err
				}
				agents = []task.Agent{a}
			}
			out := cmd.OutOrStdout()
			resumed := 0
			for _, a := range agents {
				switch {
				case a.Lifecycle == task.Active:
					fmt.Fprintf(out, "%s (%s) is active already\n", a.Task, a.ID)
					continue
				case all && a.TaskDeleted():
					fmt.Fprintf(out, "left %s (%s): its task was deleted; it wakes when the task comes back\n", a.Task, a.ID)
					continue
				}
				if _, err := st.Resume(ctx, a.ID); err != nil {
					return err
				}
				resumed++
				fmt.Fprintf(out, "resumed %s (%s), dormant because: %s\n", a.Task, a.ID, a.DormantReason)
			}
			if all && len(agents) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no dormant agents")
			}
			if resumed > 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "a running margin serve wakes them within seconds; one started later, when it starts")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "resume every dormant agent")
	return cmd
}

// findAgent resolves an agent by its ID, else by its task's path or name.
func findAgent(cmd *cobra.Command, v *vault.Vault, st *task.Store, ref string) (task.Agent, error) {
	if a, err := st.Agent(cmd.Context(), ref); err == nil {
		return a, nil
	} else if !errors.Is(err, task.ErrNotFound) {
		return a, err
	}
	taskPath, err := findTask(cmd, v, ref)
	if err != nil {
		return task.Agent{}, fmt.Errorf("no agent %q: %w", ref, err)
	}
	a, err := st.AgentForTask(cmd.Context(), taskPath)
	if errors.Is(err, task.ErrNotFound) {
		return a, fmt.Errorf("%s has no agent: %w", taskPath, vault.ErrNotFound)
	}
	return a, err
}

// agentsFinding is doctor's check of the agents: the dormant ones and why
// each sleeps. It warns: margin works, but those tasks get no report.
func agentsFinding(ctx context.Context, v *vault.Vault) finding {
	st, err := task.OpenStore(ctx, v.DB())
	if err != nil {
		return finding{check: "agents", detail: err.Error()}
	}
	all, err := st.Agents(ctx, "")
	if err != nil {
		return finding{check: "agents", detail: err.Error()}
	}
	var dormant []string
	active, deletedOnly := 0, true
	for _, a := range all {
		switch a.Lifecycle {
		case task.Active:
			active++
		case task.Dormant:
			dormant = append(dormant, fmt.Sprintf("%s (%s): %s", a.Task, a.ID, firstWords(a.DormantReason, 24)))
			deletedOnly = deletedOnly && a.TaskDeleted()
		}
	}
	detail := fmt.Sprintf("%d active, %d dormant", active, len(dormant))
	if len(dormant) == 0 {
		return finding{check: "agents", ok: true, detail: detail}
	}
	f := finding{check: "agents", warn: true, detail: detail + ": " + strings.Join(dormant, "; "),
		fix: "margin agents resume --all (or margin agents resume TASK); agents of deleted tasks wake when the task comes back"}
	if deletedOnly {
		// Nothing to do: they wake when their task comes back.
		f.warn, f.ok = false, true
	}
	return f
}
