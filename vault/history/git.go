package history

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Ref is where margin's history commits go. Nothing else of the
// repository is touched: not HEAD, a branch, the index or the work tree.
const Ref = "refs/margin/history"

// repo is the git work tree the vault is in, driven through git plumbing
// with an index file of margin's own, so the person's index is never read
// or written: the commits are built in the object store alone.
type repo struct {
	git    string // the git program
	dir    string // the vault directory, where git runs
	prefix string // the vault's path in the work tree, "" or ending in "/"
	env    []string
}

// findRepo returns the work tree the vault at dir is in; nil when there is
// no git program or no work tree, which is not an error: the database
// alone keeps the history then.
func findRepo(ctx context.Context, dir, git string, log *slog.Logger) *repo {
	if git == "-" {
		return nil
	}
	if git == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			log.Debug("no git program: margin's history is kept in the state database alone")
			return nil
		}
		git = p
	}
	r := &repo{git: git, dir: dir, env: gitEnv()}
	out, err := r.run(ctx, nil, nil, "rev-parse", "--is-inside-work-tree", "--show-prefix")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if err != nil || len(lines) < 1 || lines[0] != "true" {
		log.Debug("the vault is not in a git work tree: margin's history is kept in the state database alone")
		return nil
	}
	if len(lines) > 1 {
		r.prefix = lines[1]
	}
	return r
}

// gitEnv is the environment margin's git commands run in: the person's,
// without what would point git at another repository or index (a margin
// started from a git hook inherits GIT_DIR and GIT_INDEX_FILE).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR", "LC_ALL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_AUTHOR_NAME=margin", "GIT_AUTHOR_EMAIL=margin@localhost",
		"GIT_COMMITTER_NAME=margin", "GIT_COMMITTER_EMAIL=margin@localhost")
}

func (r *repo) run(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, r.git, args...)
	cmd.Dir = r.dir
	cmd.Env = append(r.env, env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// pending is a write waiting for its commit.
type pending struct {
	id                                             int64
	at                                             time.Time
	path, task, set, actor, template, model, items string
	undoOf                                         int64
	existed, removed                               bool
	before, after                                  []byte
}

// commitLoop commits recorded writes off the writes' path, whenever one is
// settled, until Close; Close gives it a few seconds to finish. It prunes
// the history now and then, for a margin that runs for months.
func (h *History) commitLoop() {
	defer close(h.stopped)
	prune := time.NewTicker(6 * time.Hour)
	defer prune.Stop()
	for {
		select {
		case <-prune.C:
			if err := h.prune(context.Background()); err != nil {
				h.log.Warn("pruning margin's history", "err", err)
			}
		case <-h.kick:
			h.commitPending(context.Background())
		case <-h.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			h.commitPending(ctx)
			cancel()
			return
		}
	}
}

// commitPending commits every written record not committed yet, oldest
// first, a batch at a time.
func (h *History) commitPending(ctx context.Context) {
	defer h.compactLogged(ctx)
	for ctx.Err() == nil {
		ws, err := h.uncommitted(ctx)
		if err != nil || len(ws) == 0 {
			if err != nil {
				h.log.Warn("reading margin's history to commit it", "err", err)
			}
			return
		}
		git := h.repo(ctx)
		if git == nil {
			if _, err := h.db.ExecContext(ctx, `UPDATE history SET commit_id = '-' WHERE commit_id = '' AND state = 'written'`); err != nil {
				h.log.Warn("margin's history", "err", err)
			}
			return
		}
		ids, err := git.commit(ctx, ws)
		if err != nil && ctx.Err() == nil {
			// Another margin moved the ref since it was read: once more on top of it.
			ids, err = git.commit(ctx, ws)
		}
		if err != nil {
			h.log.Warn("committing margin's history to git; the next write or start tries again", "ref", Ref, "err", err)
			return
		}
		for id, c := range ids {
			if _, err := h.db.ExecContext(ctx, `UPDATE history SET commit_id = ? WHERE id = ?`, c, id); err != nil {
				h.log.Warn("recording a history commit", "err", err)
				return
			}
		}
	}
}

// repo returns the work tree to commit to, looked for when there is first
// something to commit: a margin that writes nothing (status, search) runs
// no git. Only commitLoop calls it.
func (h *History) repo(ctx context.Context) *repo {
	if !h.looked {
		h.git, h.looked = findRepo(ctx, h.root.Dir(), h.opts.Git, h.log), true
	}
	return h.git
}

func (h *History) compactLogged(ctx context.Context) {
	if err := h.compact(ctx); err != nil {
		h.log.Warn("margin's history", "err", err)
	}
}

// uncommitted returns the writes to commit, oldest first: this process's
// and those of processes that are gone. Another margin running on the
// vault commits its own, so no write is committed twice.
func (h *History) uncommitted(ctx context.Context) ([]pending, error) {
	procs, err := h.db.QueryContext(ctx, `SELECT DISTINCT pid, pid_start FROM history WHERE commit_id = '' AND state = 'written'`)
	if err != nil {
		return nil, err
	}
	var (
		which []string
		args  []any
	)
	for procs.Next() {
		var (
			pid   int
			start string
		)
		if err := procs.Scan(&pid, &start); err != nil {
			procs.Close()
			return nil, err
		}
		if mine(pid, start) || !alive(pid, start) {
			which = append(which, "(h.pid = ? AND h.pid_start = ?)")
			args = append(args, pid, start)
		}
	}
	procs.Close()
	if len(which) == 0 {
		return nil, procs.Err()
	}
	rows, err := h.db.QueryContext(ctx, `SELECT h.id, h.at, h.path, h.task, h.change_set, h.actor, h.template, h.model, h.undo_of,
			h.existed, h.removed, h.before, h.before_pre, h.before_suf, h.after, COALESCE((SELECT group_concat(item, ' ') FROM history_items WHERE write_id = h.id), '')
		FROM history h WHERE h.commit_id = '' AND h.state = 'written' AND (`+strings.Join(which, " OR ")+`) ORDER BY h.id LIMIT 100`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pending
	for rows.Next() {
		var (
			w        pending
			at       string
			pre, suf int
		)
		if err := rows.Scan(&w.id, &at, &w.path, &w.task, &w.set, &w.actor, &w.template, &w.model, &w.undoOf,
			&w.existed, &w.removed, &w.before, &pre, &suf, &w.after, &w.items); err != nil {
			return nil, err
		}
		w.before = grow(w.after, pre, suf, w.before)
		w.at, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, w)
	}
	return out, rows.Err()
}

// commit adds one commit per write on top of Ref and moves Ref there, if
// no other margin moved it meanwhile; it returns each write's commit. When
// the file as margin found it is not the file as the previous commit left
// it (the person edited it in between, or margin never wrote it before), a
// commit of the file as found comes first, so each of margin's commits
// shows exactly what it replaced.
func (r *repo) commit(ctx context.Context, ws []pending) (map[int64]string, error) {
	tmp, err := os.MkdirTemp("", "margin-history-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	old, err := r.run(ctx, nil, nil, "rev-parse", "-q", "--verify", Ref+"^{commit}")
	old = strings.TrimSpace(old)
	if err != nil {
		old = "" // no history yet
	}
	if old == "" {
		_, err = r.run(ctx, env, nil, "read-tree", "--empty")
	} else {
		_, err = r.run(ctx, env, nil, "read-tree", old)
	}
	if err != nil {
		return nil, err
	}
	head, ids := old, map[int64]string{}
	for _, w := range ws {
		p := r.prefix + w.path
		inTree, err := r.blobAt(ctx, env, p)
		if err != nil {
			return nil, err
		}
		found := ""
		if w.existed {
			if found, err = r.hash(ctx, w.before); err != nil {
				return nil, err
			}
		}
		if found != inTree {
			if head, err = r.commitFile(ctx, env, head, p, found, w.at, "margin found "+w.path+" as it is here\n"); err != nil {
				return nil, err
			}
		}
		wrote := "" // a removal
		if !w.removed {
			if wrote, err = r.hash(ctx, w.after); err != nil {
				return nil, err
			}
		}
		if head, err = r.commitFile(ctx, env, head, p, wrote, w.at, message(w)); err != nil {
			return nil, err
		}
		ids[w.id] = head
	}
	if _, err := r.run(ctx, nil, nil, "update-ref", "-m", "margin: history", Ref, head, old); err != nil {
		return nil, err
	}
	return ids, nil
}

// blobAt is the blob at p in the private index, "" when there is none.
func (r *repo) blobAt(ctx context.Context, env []string, p string) (string, error) {
	out, err := r.run(ctx, env, nil, "ls-files", "-s", "-z", "--", p)
	if err != nil {
		return "", err
	}
	fields := strings.Fields(strings.SplitN(out, "\t", 2)[0])
	if len(fields) < 2 {
		return "", nil
	}
	return fields[1], nil
}

func (r *repo) hash(ctx context.Context, content []byte) (string, error) {
	out, err := r.run(ctx, nil, nonNil(content), "hash-object", "-w", "--no-filters", "--stdin")
	return strings.TrimSpace(out), err
}

// commitFile puts blob at p in the private index ("" removes it) and
// commits the tree on top of parent.
func (r *repo) commitFile(ctx context.Context, env []string, parent, p, blob string, at time.Time, msg string) (string, error) {
	var err error
	if blob == "" {
		_, err = r.run(ctx, env, nil, "update-index", "--force-remove", "--", p)
	} else {
		_, err = r.run(ctx, env, []byte("100644 "+blob+"\t"+p+"\x00"), "update-index", "-z", "--index-info")
	}
	if err != nil {
		return "", err
	}
	tree, err := r.run(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", "--no-gpg-sign", strings.TrimSpace(tree)}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	date := fmt.Sprintf("@%d +0000", at.Unix())
	out, err := r.run(ctx, []string{"GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}, []byte(msg), args...)
	return strings.TrimSpace(out), err
}

// message is a write's commit message: what and for whom, and the
// trailers that name its cause.
func message(w pending) string {
	actor := w.actor
	if actor == "" {
		actor = "margin"
	}
	verb := "wrote"
	switch {
	case w.undoOf != 0:
		verb = fmt.Sprintf("undid write %d in", w.undoOf)
	case w.removed:
		verb = "removed"
	case !w.existed:
		verb = "created"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\n\n", actor, verb, w.path)
	for _, t := range [][2]string{{"Margin-Agent", actor}, {"Margin-Task", w.task}, {"Margin-Change-Set", w.set},
		{"Margin-Item", w.items}, {"Margin-Template", w.template}, {"Margin-Model", w.model}} {
		if t[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", t[0], t[1])
		}
	}
	fmt.Fprintf(&b, "Margin-Write: %d\n", w.id)
	return b.String()
}
