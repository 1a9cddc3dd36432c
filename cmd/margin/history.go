package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/history"
)

// personViaCLI names the person in margin's history when they act from
// the command line.
const personViaCLI = "person via CLI"

// byPerson is the command's context naming the person as the cause of
// what margin writes for it.
func byPerson(cmd *cobra.Command) context.Context {
	return edit.WithCause(cmd.Context(), edit.Cause{Actor: personViaCLI})
}

func newUndoCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "undo ID [ITEM...] | undo WRITE",
		Short: "Undo applied changes, or any write of margin's: put back exactly what they replaced",
		Long: `undo puts back what the applied items of a change set replaced in the task
note, byte for byte (without ITEMs, every applied item of the set). Your own
edits elsewhere in the note stay; an item whose lines you edited since is
refused with the three versions, and nothing is written. Undoing an undone
item applies it again. The agent reads the undo on its next wake.

undo WRITE undoes any other write of margin's by its id, the WRITE column of
margin history (a report, a journal or log entry, a template), by the same
rule; undoing the undo's own write puts margin's text back.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := g.openChanges(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			out := cmd.OutOrStdout()
			write, isWrite := writeID(args)
			if isWrite && len(args[0]) < changeSetIDLen {
				return undoWrite(cmd, ws.Changes, ws.History, write)
			}
			cs, err := ws.Changes.Undo(byPerson(cmd), ws.History, args[0], args[1:])
			if isWrite && errors.Is(err, changes.ErrChangeSetNotFound) {
				return undoWrite(cmd, ws.Changes, ws.History, write)
			}
			if len(cs.Items) > 0 {
				fmt.Fprintf(out, "%s: %s\n", cs.ID, cs.Status)
				for _, it := range cs.Items {
					fmt.Fprintf(out, "  %s %-10s %s\n", it.ID, it.Status, it.Summary)
				}
			}
			return withVersions(err)
		},
	}
}

// changeSetIDLen is the length of a change set's id: a shorter number is a
// write's id.
const changeSetIDLen = 8

// writeID is the write id undo's only argument names, if it is a number.
func writeID(args []string) (int64, bool) {
	if len(args) != 1 {
		return 0, false
	}
	n, err := strconv.ParseInt(args[0], 10, 64)
	return n, err == nil && n > 0
}

func undoWrite(cmd *cobra.Command, c *changes.Changes, h *history.History, id int64) error {
	u, err := c.UndoWrite(byPerson(cmd), h, id)
	if err != nil {
		return withVersions(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "undid write %d: %s\n", u.Write, u.Path)
	return nil
}

// withVersions adds to a refused undo the three versions a person
// compares: what margin replaced, what it wrote, and the file now.
func withVersions(err error) error {
	var refused *history.ConflictError
	if errors.As(err, &refused) {
		at, texts := differing(refused.Original, refused.Margin, refused.Current)
		return fmt.Errorf("%w\n--- what margin replaced (from line %d)\n%s--- what margin wrote\n%s--- %s now\n%s",
			err, at, texts[0], texts[1], refused.Path, texts[2])
	}
	return err
}

func newHistoryCommand(g *globals) *cobra.Command {
	var (
		task   string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List margin's writes into the vault",
		Long: `history lists what margin wrote into the vault, newest first: the write's
id (margin undo WRITE undoes it), when, which file, for which change set and item, by whom (an agent, an MCP client, you),
and the commit on ` + history.Ref + ` when the vault is in a git work tree
(git log -p ` + history.Ref + ` shows each write's diff).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageError(fmt.Errorf("--limit must be at least 1, got %d", limit))
			}
			ws, err := g.openVault(cmd)
			if err != nil {
				return err
			}
			defer ws.Close()
			f := history.Filter{Limit: limit}
			if task != "" {
				// A note's path as it is (it may be gone since margin
				// wrote it), else a task by name.
				if p, perr := ws.Vault.Path(task); perr == nil && strings.HasSuffix(p, ".md") {
					f.Task = p
				}
				if f.Task == "" {
					if f.Task, err = findTask(cmd, ws.Vault, task); err != nil {
						return err
					}
				}
			}
			es, err := ws.History.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), es)
			}
			switch {
			case len(es) == 0 && f.Task != "":
				fmt.Fprintf(cmd.ErrOrStderr(), "margin has written nothing for %s\n", f.Task)
				return nil
			case len(es) == 0:
				fmt.Fprintln(cmd.ErrOrStderr(), "margin has written nothing into this vault yet")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "WRITE\tWHEN\tFILE\tCHANGE\tBY\tCOMMIT")
			for _, e := range es {
				change := e.ChangeSet
				if len(e.Items) > 0 {
					change += " " + strings.Join(e.Items, ",")
				}
				if e.UndoOf != 0 {
					change += fmt.Sprintf(" (undo of %d)", e.UndoOf)
				}
				if change == "" {
					change = "-"
				}
				by := e.Actor
				if e.Template != "" || e.Model != "" {
					by += " (" + strings.Trim(e.Template+" "+e.Model, " ") + ")"
				}
				commit := "-"
				if e.Commit != "" {
					commit = e.Commit[:min(len(e.Commit), 12)]
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", e.ID, when(e.At), e.Path, change, by, commit)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "only writes for this task or into this note (path or name)")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many writes")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// differing cuts the lines all texts share at their start and end, but
// one, from each: what a person compares. at is the first line kept, from 1.
func differing(texts ...string) (at int, out []string) {
	ls := make([][]string, len(texts))
	for i, t := range texts {
		ls[i] = strings.SplitAfter(t, "\n")
	}
	same := func(at func([]string) (string, bool)) bool {
		first, ok := at(ls[0])
		for _, l := range ls[1:] {
			if s, ok2 := at(l); !ok || !ok2 || s != first {
				return false
			}
		}
		return ok
	}
	pre := 0
	for same(func(l []string) (string, bool) { return get(l, pre) }) {
		pre++
	}
	suf := 0
	for same(func(l []string) (string, bool) { return get(l, len(l)-1-suf) }) && suf < minLen(ls)-pre {
		suf++
	}
	pre, suf = max(pre-1, 0), max(suf-1, 0)
	for _, l := range ls {
		out = append(out, strings.Join(l[pre:len(l)-suf], ""))
	}
	return pre + 1, out
}

func get(l []string, i int) (string, bool) {
	if i < 0 || i >= len(l) {
		return "", false
	}
	return l[i], true
}

func minLen(ls [][]string) int {
	n := len(ls[0])
	for _, l := range ls[1:] {
		n = min(n, len(l))
	}
	return n
}
