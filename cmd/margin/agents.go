package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
)

// agentsOptions turns agents.* into the agents' typed options.
func (c Config) agentsOptions() task.Options {
	a := c.Agents
	return task.Options{
		AutoCreate:     a.AutoCreate,
		QuietPeriod:    a.QuietPeriod,
		MaxWait:        a.MaxWait,
		MaxTurns:       a.MaxTurns,
		Concurrency:    a.Concurrency,
		ContextTokens:  a.ContextTokens,
		BackoffInitial: a.Backoff.Initial,
		BackoffMax:     a.Backoff.Max,
		DormantAfter:   a.DormantAfter,
		MaxItems:       a.ChangeSet.MaxItems,
		ExpireAfter:    a.ChangeSet.ExpireAfter,
		WakeDeadline:   a.WakeDeadline,

		DailyTokenBudget: a.DailyTokenBudget,
	}
}

func newAgentsCommand(g *globals) *cobra.Command {
	var (
		lifecycle string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List the task agents and where each stands",
		Long: `agents lists the task agents recorded in the vault's state database: their
task, lifecycle, last and next wake, failures and pending proposals. Agents
are created and woken by margin serve (agents.auto_create) or agents/create.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch task.Lifecycle(lifecycle) {
			case "", task.Active, task.Dormant, task.Destroyed:
			default:
				return usageError(fmt.Errorf("--lifecycle must be active, dormant or destroyed, got %q", lifecycle))
			}
			ws, err := g.openTasks(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			st := ws.Tasks
			list, err := st.Agents(cmd.Context(), task.Lifecycle(lifecycle))
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), list)
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no agents yet: margin serve creates them (agents.auto_create) or agents/create does")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tTASK\tLIFECYCLE\tLAST WAKE\tNEXT WAKE\tFAILURES\tPENDING")
			for _, a := range list {
				life := string(a.Lifecycle)
				if a.DormantReason != "" {
					life += " (" + firstWords(a.DormantReason, 6) + ")"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", a.ID, a.Task, life, when(a.LastWake), when(a.NextWake), a.Failures, a.PendingChanges)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&lifecycle, "lifecycle", "", "only agents in this lifecycle (active, dormant, destroyed)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newAgentsResumeCommand(g))
	return cmd
}

func newReportCommand(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report TASK",
		Short: "Print the agent's report on a task",
		Long: `report prints the report margin's agent keeps on a task note, from
<output folder>/Reports/<task>.md (<task> (<folder>).md when another task
of that name had an agent first). TASK is the task note's path in the vault,
or its name.`,
		Example: `  margin report "Tasks/Ship invoice export.md"
  margin report "Ship invoice export"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.openTasks(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			v, st := ws.Vault, ws.Tasks
			taskPath, err := findTask(cmd, v, args[0])
			if err != nil {
				return err
			}
			a, err := st.AgentForTask(cmd.Context(), taskPath)
			if errors.Is(err, task.ErrNotFound) {
				return fmt.Errorf("no report on %s yet: the task has no agent: %w", taskPath, vault.ErrNotFound)
			}
			if err != nil {
				return err
			}
			rep, err := task.ReadReport(v.Root(), v.Options().OutputFolder, a)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s — %s\n", taskPath, rep.Path)
			fmt.Fprintf(out, "updated %s by %s\n\nTLDR: %s\n\n%s\n", when(rep.Updated), rep.GeneratedBy, rep.TLDR, rep.Content)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// findTask resolves a task by path, or by name among the indexed tasks.
func findTask(cmd *cobra.Command, v *vault.Vault, name string) (string, error) {
	if _, err := v.Path(name); err != nil {
		return "", usageError(err)
	}
	p, err := v.FindTask(cmd.Context(), name)
	if errors.Is(err, vault.ErrAmbiguous) {
		return "", usageError(err)
	}
	return p, err
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		return strings.Join(f[:n], " ") + "…"
	}
	return s
}
