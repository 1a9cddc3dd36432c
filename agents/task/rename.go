package task

import (
	"context"
	"errors"
	"strings"

	"github.com/margin-md/margin/agents/internal/kit"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// followRename moves agent a to its task's new path, and with it every
// output that names the task: the report, the journal, the change sets
// and the decisions. The outputs keep their file names, the agent's
// output name: a person's links to them and their place in the vault stay
// good, and margin never moves a file it might clobber.
func (r *Runtime) followRename(ctx context.Context, a *Agent, to, fingerprint string) error {
	from := a.Task
	if err := r.store.moveTask(ctx, a.ID, to, fingerprint); err != nil {
		return err
	}
	a.Task = to
	if err := r.changes.FollowTask(ctx, a.ID, from, to); err != nil {
		return err
	}
	ctx = edit.WithCause(ctx, edit.Cause{Actor: a.ID, Task: to})
	if res, ok := r.relink(ctx, ReportPath(r.outputFolder(), a.OutputName), from, to, ""); ok && !res.InEditor {
		// The report is still the agent's own, not one the person edited.
		if err := r.store.setReport(ctx, a.ID, string(res.Fingerprint), a.reportGenerator); err != nil {
			return err
		}
	}
	r.relink(ctx, JournalPath(r.outputFolder(), a.OutputName), from, to, "# Journal: ")
	return nil
}

// relink points the `task:` of the output at p at the task's new path
// when it still names the task at from, and retitles the heading that
// starts with title and names the old stem (title "" for none). Anything
// else in the file stays as it is; a file the person damaged, relinked or
// deleted is left alone. ok says it was written.
func (r *Runtime) relink(ctx context.Context, p, from, to, title string) (res edit.Changed, ok bool) {
	res, err := r.v.Root().Change(ctx, r.opts.Editor, p, func(cur edit.Current) ([]byte, error) {
		if !cur.Exists {
			return nil, nil
		}
		n := note.Parse(p, cur.Content, note.Options{})
		if n.FrontmatterError != "" || n.Frontmatter == nil || n.Frontmatter.String("task") != kit.TaskLink(from) {
			return nil, nil
		}
		out, err := edit.SetFrontmatter(cur.Content, "task", kit.TaskLink(to))
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
