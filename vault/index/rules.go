package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Rules returns the fingerprint of the vault rules the index was built
// with (see SetRules), or "" for an index built before they were kept.
func (ix *Index) Rules(ctx context.Context) (string, error) {
	var fp string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM index_state WHERE key = 'rules'`).Scan(&fp)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the index's rules: %w", err)
	}
	return fp, nil
}

// SetRules records the fingerprint of the rules (daily notes, task
// folders, templates, ignores) every note in the index was classified
// with. The caller reclassifies every note before it records a new one.
func (ix *Index) SetRules(ctx context.Context, fingerprint string) error {
	err := ix.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO index_state (key, value) VALUES ('rules', ?)`, fingerprint)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the index's rules: %w", err)
	}
	return nil
}
