package changes

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// FollowTask follows a rename of the agent's task note: its change sets
// and decisions, and those of clients' changes of the task's fields, name
// it by its new path, in the database and in the `task:` of the sets'
// files, so that listings and decisions/list find them there. The files
// move with the agent's output name (MoveSets).
func (c *Changes) FollowTask(ctx context.Context, agent, from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, err := c.store.moveTask(ctx, agent, from, to)
	if err != nil {
		return err
	}
	for _, id := range ids {
		cs, err := c.store.ChangeSet(ctx, id)
		if err != nil {
			return err
		}
		c.relinkSetFile(edit.WithCause(ctx, c.cause(ctx, cs, to)), cs, from)
	}
	return nil
}

// MoveSets moves the agent's change set files into the folder of its
// output name, after its task was renamed: each file moves as it is
// (edit.Root.MoveContext) and its row follows. A file that cannot move,
// or is open in the editor, stays where it is, with its row, and is still
// decided there.
func (c *Changes) MoveSets(ctx context.Context, agent, outputName string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sets, err := c.store.ChangeSets(ctx, ChangeSetFilter{Agent: agent, Status: "all"})
	if err != nil {
		return err
	}
	left := map[string]bool{} // the folders the files moved out of
	for _, cs := range sets {
		to := path.Join(c.outputFolder(), "Changes", outputName, path.Base(cs.Path))
		if to == cs.Path {
			continue
		}
		if c.opts.Editor != nil {
			if _, _, open := c.opts.Editor.Open(cs.Path); open {
				// A save of the buffer would bring it back where no
				// set is: it is decided where it is.
				continue
			}
		}
		if _, err := c.v.Files.MoveContext(edit.WithCause(ctx, c.cause(ctx, cs, cs.Task)), cs.Path, to); err != nil {
			c.log.Warn("a change set file keeps its place", "path", cs.Path, "err", err)
			continue
		}
		if err := c.store.setPath(ctx, cs.ID, to); err != nil {
			return err
		}
		left[path.Dir(cs.Path)] = true
	}
	for dir := range left {
		// An empty folder of the old name would read as the task's still.
		if _, err := c.v.Files.RemoveEmptyFolder(dir); err != nil {
			c.log.Warn("removing the emptied change set folder", "path", dir, "err", err)
		}
	}
	return nil
}

// relinkSetFile points the `task:` of a set's file at the set's task,
// when it still names the task at from: a link the person changed, or a
// file they damaged or deleted, is left as they made it.
func (c *Changes) relinkSetFile(ctx context.Context, cs ChangeSet, from string) {
	res, err := c.v.Files.Change(ctx, c.opts.Editor, cs.Path, func(cur edit.Current) ([]byte, error) {
		if !cur.Exists {
			return nil, nil
		}
		n := note.Parse(cs.Path, cur.Content, note.Options{})
		if n.FrontmatterError != "" || n.Frontmatter == nil || n.Frontmatter.String("task") != note.Wikilink(from) {
			return nil, nil
		}
		return edit.SetFrontmatter(cur.Content, "task", note.Wikilink(cs.Task))
	})
	switch {
	case errors.Is(err, edit.ErrConflict):
		c.log.Info("the change set file kept changing while margin named the renamed task in it; left as it is", "path", cs.Path)
	case err != nil:
		c.log.Warn("naming the renamed task in a change set file", "path", cs.Path, "err", err)
	case res.Written && !res.InEditor:
		if err := c.store.setFileFingerprint(ctx, cs.ID, string(res.Fingerprint)); err != nil {
			c.log.Warn("recording a change set file", "path", cs.Path, "err", err)
		}
	}
}

// setPath records that the file of set id is at p now.
func (s *Store) setPath(ctx context.Context, id, p string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE change_sets SET path = ? WHERE id = ?`, p, id); err != nil {
		return fmt.Errorf("moving change set %s to %s: %w", id, p, err)
	}
	return nil
}

// moveTask names the task at to in the change sets and decisions that
// name it at from, the agent's and clients' changes of its fields, in one
// transaction; it returns the ids of the sets.
func (s *Store) moveTask(ctx context.Context, agent, from, to string) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("moving the change sets of %s to %s: %w", from, to, err)
	}
	defer tx.Rollback()
	// A client's change of a task field follows too; its edits of the
	// note's text (propose_edit, which may create a note at that path)
	// stay on the path they were proposed on, and turn stale there.
	rows, err := tx.QueryContext(ctx, `UPDATE change_sets SET task = ? WHERE task = ? AND (agent_id = ? OR (agent_id LIKE ? || '%'
		AND NOT EXISTS (SELECT 1 FROM change_items WHERE set_id = change_sets.id AND tool = ?))) RETURNING id`, to, from, agent, ClientPrefix, EditTool)
	if err != nil {
		return nil, fmt.Errorf("moving the change sets of %s to %s: %w", from, to, err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("moving the change sets of %s to %s: %w", from, to, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("moving the change sets of %s to %s: %w", from, to, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE decisions SET task = ? WHERE task = ? AND (agent_id = ? OR set_id IN
		(SELECT id FROM change_sets WHERE task = ? AND agent_id LIKE ? || '%'))`, to, from, agent, to, ClientPrefix); err != nil {
		return nil, fmt.Errorf("moving the decisions on %s to %s: %w", from, to, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("moving the change sets of %s to %s: %w", from, to, err)
	}
	return ids, nil
}
