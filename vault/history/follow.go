package history

import (
	"context"
	"fmt"
)

// MoveTask names the task note at to in the writes that were about the
// task at from: a renamed task's history is listed under its new path
// (List's Task). Where each write landed (its path) stays as it was, and
// so do the commits, which are history.
func (h *History) MoveTask(ctx context.Context, from, to string) error {
	if _, err := h.db.ExecContext(ctx, `UPDATE history SET task = ? WHERE task = ?`, to, from); err != nil {
		return fmt.Errorf("moving the history of %s to %s: %w", from, to, err)
	}
	return nil
}
