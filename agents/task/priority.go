package task

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/index"
)

// wakePriority ranks the wakes waiting for a slot (SPEC §4.1 "Economy"):
// what a person asked for (a request, a decision) first; then wakes that
// cost no model call (done and cancelled tasks: a structural report takes
// milliseconds and delays no one); then the other tasks by nearest due
// date, in-progress before open, recently edited first. The runtime
// computes it from the task; the scheduler only compares.
type wakePriority struct {
	// asked is set while a person's request or decision waits; it goes
	// when the wake starts, the task's standing below stays.
	asked bool
	task  bool // the fields below were computed from the task

	free       bool   // done or cancelled: no model call
	due        string // YYYY-MM-DD; "" when none, after every date
	inProgress bool
	edited     time.Time // the task note's last modification
}

// before reports whether a wake of priority p runs before one of q.
func (p wakePriority) before(q wakePriority) bool {
	switch {
	case p.asked != q.asked:
		return p.asked
	case p.free != q.free:
		return p.free
	case p.due != q.due:
		return q.due == "" || p.due != "" && p.due < q.due
	case p.inProgress != q.inProgress:
		return p.inProgress
	}
	return p.edited.After(q.edited)
}

// merge is the priority of a queued wake that k joins: asked if either
// is, and the task's standing from k when k knows it (the newer reading).
func (p wakePriority) merge(k wakePriority) wakePriority {
	asked := p.asked || k.asked
	if k.task {
		p = k
	}
	p.asked = asked
	return p
}

// askedPriority is the priority of a wake a person asked for.
func askedPriority() wakePriority { return wakePriority{asked: true} }

// askedFor is the priority of a wake a person asked for on the agent of
// task: first in line, and with the task's standing, so that a done
// task's wake still runs when the budget is spent.
func (r *Runtime) askedFor(ctx context.Context, task string) wakePriority {
	p := askedPriority()
	prios, err := r.taskPriorities(ctx, []string{task})
	if err != nil {
		r.log.Warn("reading a task's standing for its wake", "task", task, "err", err)
		return p
	}
	return p.merge(prios[task])
}

// freeStatus reports whether a task of this status gets no model wake.
func freeStatus(status string) bool { return status == "done" || status == "cancelled" }

// taskPriority is the standing of a task in the waiting line.
func taskPriority(t index.TaskMeta, mtimeNS int64) wakePriority {
	p := wakePriority{task: true, free: freeStatus(t.Status), due: t.Due, inProgress: t.Status == "in-progress"}
	if mtimeNS != 0 {
		p.edited = time.Unix(0, mtimeNS)
	}
	return p
}

// taskPriorities reads the standing of the tasks at paths from the index,
// with two queries however many there are. A task the index does not
// know is left out (its wake keeps the lowest standing).
func (r *Runtime) taskPriorities(ctx context.Context, paths []string) (map[string]wakePriority, error) {
	out := make(map[string]wakePriority, len(paths))
	if len(paths) == 0 {
		return out, nil
	}
	tasks, err := r.v.Index.TasksAt(ctx, paths)
	if err != nil {
		return nil, err
	}
	stats, err := r.v.Index.StatPaths(ctx, paths)
	if err != nil {
		return nil, err
	}
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	for _, t := range tasks {
		if want[t.Path] {
			out[t.Path] = taskPriority(t, stats[t.Path].MtimeNS)
		}
	}
	return out, nil
}

// lineUpDue puts in the waiting line every wake that is due and whose
// timer has not fired yet, so that begin starts the startup wakes by
// priority, not in the order their timers happen to fire.
func (s *scheduler) lineUpDue() {
	now := s.now()
	var due []string
	for id, q := range s.queues {
		if !q.running && !q.waiting && !q.dueAt.IsZero() && !q.dueAt.After(now) {
			due = append(due, id)
		}
	}
	slices.SortFunc(due, func(a, b string) int {
		return cmp.Or(s.queues[a].dueAt.Compare(s.queues[b].dueAt), strings.Compare(a, b))
	})
	for _, id := range due {
		q := s.queues[id]
		s.stopTimer(q) // it would start the wake out of turn
		q.waiting = true
		s.waiting = append(s.waiting, id)
	}
}

// nextWaiting is the index in s.waiting of the wake to start next: the
// first of the highest priority, so that equals keep their order of
// arrival; -1 when none may start (the line is empty, or only wakes the
// spent budget holds are in it).
func (s *scheduler) nextWaiting() int {
	best := -1
	for i, id := range s.waiting {
		q := s.queues[id]
		if s.holdForBudget(q) {
			continue
		}
		if best < 0 || q.prio.before(s.queues[s.waiting[best]].prio) {
			best = i
		}
	}
	return best
}
