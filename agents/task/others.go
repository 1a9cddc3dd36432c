package task

import (
	"context"
	"database/sql"
	"time"
)

// Another margin process on the vault (`margin agents resume` beside a
// running `margin serve`) resumes an agent in the state database only; the
// runtime that runs the wakes notices it here and wakes the agent. SQLite's
// data_version, read on one pinned connection, changes only when another
// connection committed, so a quiet vault costs one pragma a poll and the
// dormant agents are listed only after a write.

// othersPoll is how often the runtime looks for other processes' writes.
const othersPoll = 2 * time.Second

// watchOthers wakes the agents that another connection resumed, until ctx
// is done.
func (r *Runtime) watchOthers(ctx context.Context, every time.Duration) {
	conn, err := r.store.db.Conn(ctx)
	if err != nil {
		r.log.Error("watching for agents resumed by another process", "err", err)
		return
	}
	defer conn.Close()
	last, err := dataVersion(ctx, conn)
	if err != nil {
		r.log.Error("watching for agents resumed by another process", "err", err)
		return
	}
	dormant, err := r.dormantIDs(ctx)
	if err != nil {
		r.log.Error("watching for agents resumed by another process", "err", err)
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := dataVersion(ctx, conn)
		if err != nil || v == last {
			continue
		}
		now, err := r.dormantIDs(ctx)
		if err != nil {
			continue // looked at again after the next write
		}
		last = v
		for id := range dormant {
			if now[id] {
				continue
			}
			a, err := r.store.Agent(ctx, id)
			if err != nil || a.Lifecycle != Active {
				continue // destroyed, or gone
			}
			r.log.Info("agent resumed by another process", "agent", a.ID, "task", a.Task)
			if err := r.kick(kick{agent: a.ID, reason: "resumed", mode: kickNow, prio: r.askedFor(ctx, a.Task)}); err != nil {
				return // the agents are stopping
			}
		}
		dormant = now
	}
}

func dataVersion(ctx context.Context, conn *sql.Conn) (int64, error) {
	var v int64
	err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, err
}

// dormantIDs are the dormant agents' ids.
func (r *Runtime) dormantIDs(ctx context.Context) (map[string]bool, error) {
	agents, err := r.store.Agents(ctx, Dormant)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(agents))
	for _, a := range agents {
		ids[a.ID] = true
	}
	return ids, nil
}
