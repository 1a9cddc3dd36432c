package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
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

// Reset empties the index of notes, keeping its schema, migrations and
// markers, so that notes classified under other rules are indexed again as
// a cold build would: on 10,000 notes, emptying and rebuilding takes a
// fraction of the time of replacing each note where it stands. Readers
// see an empty index until the new notes are applied.
func (ix *Index) Reset(ctx context.Context) error {
	err := ix.inTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		type table struct{ name, sql string }
		var tables []table
		err := collect(ctx, tx, `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('index_state', 'schema_migrations')`, nil, func(r *sql.Rows) error {
			var t table
			err := r.Scan(&t.name, &t.sql)
			tables = append(tables, t)
			return err
		})
		if err != nil {
			return err
		}
		var virtual []string
		for _, t := range tables {
			if strings.HasPrefix(strings.ToUpper(t.sql), "CREATE VIRTUAL TABLE") {
				virtual = append(virtual, t.name)
			}
		}
		for _, t := range tables {
			q := `DELETE FROM "` + t.name + `"`
			switch {
			case slices.Contains(virtual, t.name):
				q = `INSERT INTO "` + t.name + `"("` + t.name + `") VALUES ('delete-all')`
			case slices.ContainsFunc(virtual, func(v string) bool { return strings.HasPrefix(t.name, v+"_") }):
				continue // a search table's own storage, emptied with it
			}
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		return nil
	})
	ix.mu.Lock()
	ix.counts = nil
	ix.gen++
	ix.mu.Unlock()
	if err != nil {
		return fmt.Errorf("emptying the index: %w", err)
	}
	return nil
}
