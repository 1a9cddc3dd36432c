package task

import (
	"context"
	"path"
	"strings"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

// isOutput reports whether p is under margin's output folder: margin's own
// files never wake an agent, even when a person edits them.
func (r *Runtime) isOutput(p string) bool {
	out := strings.Trim(path.Clean("/"+r.outputFolder()), "/")
	return p == out || strings.HasPrefix(p, out+"/")
}

// onChanges routes vault changes, one batch or several in the order they
// came, to the agents they concern.
func (r *Runtime) onChanges(ctx context.Context, changes []vault.Change) error {
	agents, err := r.store.Agents(ctx, "")
	if err != nil {
		return err
	}
	byTask := make(map[string]*Agent, len(agents))
	for i := range agents {
		byTask[agents[i].Task] = &agents[i]
	}

	// Renames first: a task removed and a task created with the same
	// content is one task that moved (editors and git rename this way).
	for _, c := range changes {
		if c.Removed() || !c.Old.IsZero() || c.Kind != note.KindTask || byTask[c.Path] != nil {
			continue
		}
		for i := range agents {
			a := &agents[i]
			if a.taskFingerprint != string(c.New) || a.Lifecycle == Destroyed || !r.taskMissing(changes, a) {
				continue
			}
			r.log.Info("task renamed; the agent follows it", "agent", a.ID, "from", a.Task, "to", c.Path)
			delete(byTask, a.Task)
			if err := r.followRename(ctx, a, c.Path, string(c.New)); err != nil {
				return err
			}
			byTask[c.Path] = a
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
			}
			r.sendStatus(ctx, a.ID)
			break
		}
	}

	wake := map[string]string{} // agent → reason
	read := map[string]noteReaders{}
	for _, c := range changes {
		if r.isOutput(c.Path) {
			// margin's own files never wake an agent; a person's save
			// of a template or a change set file is the template
			// library's and the change sets' (their Watch).
			continue
		}
		if a := byTask[c.Path]; a != nil {
			switch {
			case c.Removed():
				if err := r.taskGone(ctx, *a); err != nil {
					return err
				}
				continue
			case c.Own:
				// margin's own write (an approved change item): remember the
				// content for rename detection, but do not wake.
				if err := r.store.setTaskFingerprint(ctx, a.ID, string(c.New)); err != nil {
					return err
				}
				continue
			}
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
				r.sendStatus(ctx, a.ID)
			}
			if a.Lifecycle == Active && wake[a.ID] == "" {
				wake[a.ID] = "task changed"
			}
			continue
		}
		if c.Own {
			continue
		}
		if c.Kind == note.KindTask && !c.Removed() && r.opts.AutoCreate {
			a, err := r.store.createAgent(ctx, c.Path, string(c.New), r.now())
			if err != nil {
				return err
			}
			r.log.Info("agent created", "agent", a.ID, "task", a.Task)
			byTask[a.Task] = &a
			wake[a.ID] = "created"
			continue
		}
		if c.Kind != note.KindDaily && !c.Removed() {
			continue
		}
		// A daily note: wake the agents whose task one of its entries
		// links now, or linked at their last wake. A note changed in
		// several batches of this pass is looked up once: the index
		// answers for its latest state either way.
		readers, ok := read[c.Path]
		if !ok {
			var err error
			if readers, err = r.readersOf(ctx, c.Path); err != nil {
				return err
			}
			read[c.Path] = readers
		}
		for i := range agents {
			a := &agents[i]
			if a.Lifecycle == Active && wake[a.ID] == "" && (readers.agents[a.ID] || readers.tasks[a.Task]) {
				wake[a.ID] = "linked entry changed"
			}
		}
	}
	return r.scheduleChanged(ctx, byTask, wake)
}

// scheduleChanged schedules the wakes a batch of changes asks for, each
// with its task's standing in the waiting line.
func (r *Runtime) scheduleChanged(ctx context.Context, byTask map[string]*Agent, wake map[string]string) error {
	if len(wake) == 0 {
		return nil
	}
	var paths []string
	for p, a := range byTask {
		if wake[a.ID] != "" {
			paths = append(paths, p)
		}
	}
	prios, err := r.taskPriorities(ctx, paths)
	if err != nil {
		return err
	}
	for _, p := range paths {
		id := byTask[p].ID
		r.sched.schedule(kick{agent: id, reason: wake[id], mode: kickCoalesce, prio: prios[p]})
	}
	return nil
}

// taskMissing reports whether the agent's task note was removed in this
// batch or is gone (its agent dormant because of it).
func (r *Runtime) taskMissing(changes []vault.Change, a *Agent) bool {
	if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted {
		return true
	}
	for _, c := range changes {
		if c.Path == a.Task && c.Removed() {
			return true
		}
	}
	return false
}

// noteReaders are the agents that read entries of one note: by id those
// that read one at their last wake, by task those whose task it links now.
type noteReaders struct {
	agents map[string]bool
	tasks  map[string]bool
}

// readersOf finds who reads the note at p with two queries, however many
// agents there are.
func (r *Runtime) readersOf(ctx context.Context, p string) (noteReaders, error) {
	ids, err := r.store.readersOf(ctx, p)
	if err != nil {
		return noteReaders{}, err
	}
	tasks := map[string]bool{}
	linked, err := r.v.Index.LinkedTasks(ctx, p) // a removed note links nothing
	if err != nil {
		return noteReaders{}, err
	}
	for _, t := range linked {
		tasks[t] = true
	}
	return noteReaders{agents: ids, tasks: tasks}, nil
}

// reconcile brings the agents in line with the vault at startup: renames
// and deletions while margin was not running, agents for new tasks, wakes
// interrupted by a crash, retries still due, and a wake (usually skipped
// by its run key) for every active agent.
func (r *Runtime) reconcile(ctx context.Context) error {
	tasks, err := r.v.Index.Tasks(ctx)
	if err != nil {
		return err
	}
	agents, err := r.store.Agents(ctx, "")
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, a := range agents {
		owned[a.Task] = true
	}
	isTask := map[string]bool{}
	for _, t := range tasks {
		isTask[t.Path] = true
	}
	for i := range agents {
		a := &agents[i]
		if a.Lifecycle == Destroyed || isTask[a.Task] {
			if a.Lifecycle == Dormant && a.DormantReason == reasonTaskDeleted && isTask[a.Task] {
				if err := r.store.resume(ctx, a.ID); err != nil {
					return err
				}
				a.Lifecycle = Active
			}
			continue
		}
		moved := false
		for _, t := range tasks {
			if owned[t.Path] {
				continue
			}
			m, err := r.v.Index.Note(ctx, t.Path)
			if err != nil || m.Stat.Hash != a.taskFingerprint {
				continue
			}
			r.log.Info("task renamed while margin was not running; the agent follows it", "agent", a.ID, "from", a.Task, "to", t.Path)
			if err := r.followRename(ctx, a, t.Path, m.Stat.Hash); err != nil {
				return err
			}
			owned[t.Path], moved = true, true
			break
		}
		if !moved {
			if err := r.taskGone(ctx, *a); err != nil {
				return err
			}
			a.Lifecycle = Dormant
		}
	}
	if r.opts.AutoCreate {
		for _, t := range tasks {
			if owned[t.Path] || r.isOutput(t.Path) {
				continue
			}
			m, err := r.v.Index.Note(ctx, t.Path)
			if err != nil {
				continue
			}
			a, err := r.store.createAgent(ctx, t.Path, m.Stat.Hash, r.now())
			if err != nil {
				return err
			}
			agents = append(agents, a)
		}
	}
	var paths []string
	for _, a := range agents {
		if a.Lifecycle == Active {
			paths = append(paths, a.Task)
		}
	}
	prios, err := r.taskPriorities(ctx, paths)
	if err != nil {
		return err
	}
	for _, a := range agents {
		if a.Lifecycle != Active {
			continue
		}
		k := kick{agent: a.ID, reason: "startup", mode: kickNow, prio: prios[a.Task]}
		if _, interrupted, err := r.store.interrupted(ctx, a.ID); err != nil {
			return err
		} else if !interrupted && a.Failures > 0 && a.NextWake.After(r.now()) {
			k = kick{agent: a.ID, reason: "retry after a failed wake", mode: kickAt, at: a.NextWake, prio: prios[a.Task]}
		}
		r.sched.schedule(k)
	}
	return nil
}
