package task

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// followRename moves agent a to its task's new path, and with it every
// output that names the task: the report, the journal, the change sets,
// the decisions and margin's history of its writes. The files take the
// new stem's name at the agent's next wake (renameOutputs).
func (r *Runtime) followRename(ctx context.Context, a *Agent, to, fingerprint string) error {
	from := a.Task
	if err := r.store.moveTask(ctx, a.ID, to, fingerprint); err != nil {
		return err
	}
	a.Task = to
	if err := r.changes.FollowTask(ctx, a.ID, from, to); err != nil {
		return err
	}
	if r.opts.History != nil {
		if err := r.opts.History.MoveTask(ctx, from, to); err != nil {
			return err
		}
	}
	ctx = edit.WithCause(ctx, edit.Cause{Actor: a.ID, Task: to})
	if a.Lifecycle != Active {
		// An active agent's report is its next wake's to relink (the
		// rename brings one): a wake running now would find its report
		// changed under it and fail.
		if err := r.relinkReport(ctx, a, from); err != nil {
			return err
		}
	}
	r.relink(ctx, JournalPath(r.outputFolder(), a.OutputName), from, to, "# Journal: ")
	return nil
}

// relinkReport points the report's `task:` at a's task when it names the
// task at from ("": any other task), and records the report as the
// agent's own still.
func (r *Runtime) relinkReport(ctx context.Context, a *Agent, from string) error {
	res, ok := r.relink(ctx, ReportPath(r.outputFolder(), a.OutputName), from, a.Task, "")
	if !ok || res.InEditor {
		return nil
	}
	return r.store.setReport(ctx, a.ID, string(res.Fingerprint), a.reportGenerator)
}

// relink points the `task:` of the output at p at the task's new path
// when it still names the task at from (from "": when it names another),
// and retitles the heading that starts with title and names the old stem
// (title "" for none). Anything
// else in the file stays as it is; a file the person damaged, relinked or
// deleted is left alone. ok says it was written.
func (r *Runtime) relink(ctx context.Context, p, from, to, title string) (res edit.Changed, ok bool) {
	res, err := r.v.Files.Change(ctx, r.opts.Editor, p, func(cur edit.Current) ([]byte, error) {
		if !cur.Exists {
			return nil, nil
		}
		n := note.Parse(p, cur.Content, note.Options{})
		if n.FrontmatterError != "" || n.Frontmatter == nil {
			return nil, nil
		}
		if link := n.Frontmatter.String("task"); from != "" && link != note.Wikilink(from) || link == "" || link == note.Wikilink(to) {
			return nil, nil
		}
		out, err := edit.SetFrontmatter(cur.Content, "task", note.Wikilink(to))
		if err != nil || title == "" {
			return out, err
		}
		for i, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSuffix(l, "\r"); i >= n.BodyLine-1 && l == title+stem(from) {
				return edit.ReplaceLine(out, i+1, l, title+stem(to))
			}
		}
		return out, nil
	})
	switch {
	case errors.Is(err, edit.ErrConflict):
		r.log.Info("the output kept changing while margin named the renamed task in it; left as it is", "path", p)
	case err != nil:
		r.log.Warn("naming the renamed task in an output", "path", p, "err", err)
	}
	return res, err == nil && res.Written
}

// namedAfter reports whether an output name is the one the task at task
// would be given: its stem, or its stem and what sets it apart ("Plan
// (Work)", "Plan (2)").
func namedAfter(name, task string) bool {
	k, s := nameKey(name), nameKey(stem(task))
	return k == s || strings.HasPrefix(k, s+" (")
}

// renameOutputs brings the outputs of a renamed task in line with it as
// the agent's wake starts, when no other wake of the agent can be writing
// them: their files take the name of its new stem (SPEC §3.3 names them
// by it; see moveOutputs), and the report names its new path even when
// this wake writes none.
func (r *Runtime) renameOutputs(ctx context.Context, a *Agent) error {
	ctx = edit.WithCause(ctx, edit.Cause{Actor: a.ID, Task: a.Task})
	if !namedAfter(a.OutputName, a.Task) {
		if err := r.moveOutputs(ctx, a); err != nil {
			return err
		}
	}
	return r.relinkReport(ctx, a, "")
}

// moveOutputs moves the report and the journal to the name a new agent of
// the task would get, and the change set files into its folder. A move
// never replaces a file (a name some file has already is passed over)
// and never loses a save a person made meanwhile (edit.Root.MoveContext),
// nor moves a file open in the editor: then the outputs keep their name,
// and the next wake tries again.
func (r *Runtime) moveOutputs(ctx context.Context, a *Agent) error {
	old, folder := a.OutputName, r.outputFolder()
	if ed := r.opts.Editor; ed != nil {
		for _, p := range []string{ReportPath(folder, old), JournalPath(folder, old)} {
			if _, _, open := ed.Open(p); open {
				// Moved from under the editor, the file would come
				// back at its old name with the person's next save.
				return nil
			}
		}
	}
	// A name that any file has already, a person's or an earlier
	// agent's, is passed over, as if it were another task's report.
	taken := func(name string) string {
		for _, p := range []string{ReportPath(folder, name), JournalPath(folder, name), path.Join(folder, "Changes", name)} {
			if _, err := r.v.Files.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				return p
			}
		}
		return ""
	}
	name, err := r.store.claimOutputName(ctx, a.ID, a.Task, taken)
	if err != nil {
		return err
	}
	var moved [][2]string
	for _, m := range [][2]string{
		{ReportPath(folder, old), ReportPath(folder, name)},
		{JournalPath(folder, old), JournalPath(folder, name)},
	} {
		ok, err := r.v.Files.MoveContext(ctx, m[0], m[1])
		if err == nil {
			if ok {
				moved = append(moved, m)
			}
			continue
		}
		r.log.Warn("the renamed task's outputs keep their name", "agent", a.ID, "name", old, "err", err)
		for i := len(moved) - 1; i >= 0; i-- {
			if _, err := r.v.Files.MoveContext(ctx, moved[i][1], moved[i][0]); err != nil {
				// Both names hold outputs now: the new one stands, and
				// what is left under the old one stays for the person.
				r.log.Warn("moving an output back", "from", moved[i][1], "to", moved[i][0], "err", err)
				a.OutputName = name
				return nil
			}
		}
		return r.store.setOutputName(ctx, a.ID, old)
	}
	a.OutputName = name
	r.log.Info("the renamed task's outputs follow its name", "agent", a.ID, "from", old, "to", name)
	return r.changes.MoveSets(ctx, a.ID, name)
}

// claimOutputName gives agent id the output name a new agent of the task
// at task would get (newOutputName), in one transaction, and returns it.
func (s *Store) claimOutputName(ctx context.Context, id, task string, reportTask func(string) string) (string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("renaming the outputs of agent %s: %w", id, err)
	}
	defer tx.Rollback()
	name, err := newOutputName(ctx, tx, task, reportTask)
	if err != nil {
		return "", fmt.Errorf("renaming the outputs of agent %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE agents SET output_name = ?, output_key = ? WHERE id = ?`, name, nameKey(name), id); err != nil {
		return "", fmt.Errorf("renaming the outputs of agent %s: %w", id, err)
	}
	return name, tx.Commit()
}

// setOutputName gives agent id back an output name it had.
func (s *Store) setOutputName(ctx context.Context, id, name string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE agents SET output_name = ?, output_key = ? WHERE id = ?`, name, nameKey(name), id); err != nil {
		return fmt.Errorf("naming the outputs of agent %s %q again: %w", id, name, err)
	}
	return nil
}
