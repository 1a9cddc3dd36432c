package agents

import (
	"context"
	"fmt"
)

const lifecycleCountsSQL = `SELECT lifecycle, COUNT(*) FROM agents GROUP BY lifecycle`

// lifecycleCounts counts agents by lifecycle in the database. vault/status
// asks for it on every call, so it reads one index (agents_lifecycle), not
// every agent's row.
func (s *Store) lifecycleCounts(ctx context.Context) (map[Lifecycle]int, error) {
	rows, err := s.db.QueryContext(ctx, lifecycleCountsSQL)
	if err != nil {
		return nil, fmt.Errorf("counting agents: %w", err)
	}
	defer rows.Close()
	out := map[Lifecycle]int{}
	for rows.Next() {
		var l Lifecycle
		var n int
		if err := rows.Scan(&l, &n); err != nil {
			return nil, fmt.Errorf("counting agents: %w", err)
		}
		out[l] = n
	}
	return out, rows.Err()
}
