package task

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Another margin process on the vault (`margin agents resume`, or a margin
// serve that follows this one, see lead) creates and resumes agents in the
// state database only; the runtime that runs the wakes notices them here
// and wakes them. SQLite's data_version, read on one pinned connection,
// changes only when another connection committed, so a quiet vault costs
// one pragma a poll, and the agents' lifecycles are read only after a write.

// othersPoll is how often the runtime looks for other processes' writes,
// and a follower for the agents lock.
const othersPoll = 2 * time.Second

// others is what watchOthers last saw of the state database.
type others struct {
	conn  *sql.Conn // pinned: data_version is per connection
	last  int64
	known map[string]Lifecycle
}

// lookAtOthers reads the agents' lifecycles for watchOthers to compare
// with. Run takes it before it reconciles with the vault, or waits to run
// the agents, so that a resume made while it does is seen either there or
// here.
func (r *Runtime) lookAtOthers(ctx context.Context) (*others, error) {
	conn, err := r.store.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	o := &others{conn: conn}
	if o.last, err = dataVersion(ctx, conn); err == nil {
		o.known, err = r.store.lifecycles(ctx)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return o, nil
}

// watchOthers wakes the agents that became active through another
// connection (created, resumed, brought back) since o, until ctx is done.
func (r *Runtime) watchOthers(ctx context.Context, o *others, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := dataVersion(ctx, o.conn)
		if err != nil || v == o.last {
			continue
		}
		now, err := r.store.lifecycles(ctx)
		if err != nil {
			continue // looked at again after the next write
		}
		o.last = v
		for id, l := range now {
			was, seen := o.known[id]
			if l != Active || was == Active {
				continue
			}
			if queued, running := r.sched.state(id); queued || running {
				continue // this process created or resumed it, and kicked it
			}
			k := kick{agent: id, reason: "resumed", mode: kickNow}
			if !seen || was == Destroyed {
				k.reason = "created"
			}
			if a, err := r.store.Agent(ctx, id); err == nil {
				k.prio = r.askedFor(ctx, a.Task)
			}
			if err := r.kick(k); err != nil {
				return // the agents are stopping
			}
		}
		o.known = now
	}
}

func dataVersion(ctx context.Context, conn *sql.Conn) (int64, error) {
	var v int64
	err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, err
}

// lifecycles are the lifecycles of all agents, by id.
func (s *Store) lifecycles(ctx context.Context) (map[string]Lifecycle, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, lifecycle FROM agents`)
	if err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	defer rows.Close()
	out := map[string]Lifecycle{}
	for rows.Next() {
		var id string
		var l Lifecycle
		if err := rows.Scan(&id, &l); err != nil {
			return nil, fmt.Errorf("listing agents: %w", err)
		}
		out[id] = l
	}
	return out, rows.Err()
}
