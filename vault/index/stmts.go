package index

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// stmtCache keeps the statements searches run prepared: SQLite takes
// about as long to compile a search's five statements as to run a search
// of a rare word. A search builds its SQL from the query's filters, so
// the texts vary; the cache holds the last few dozen and starts over when
// full.
//
// A text is never prepared on the pool during a search: preparing reads
// the schema on another connection, and with the index's rollback journal
// a writer waiting to commit holds that read off while it waits for the
// search's own read lock, so both would wait out the busy timeout. A text
// the cache lacks runs in the search's transaction and is prepared once
// the search is over (fill).
type stmtCache struct {
	mu     sync.Mutex
	m      map[string]*sql.Stmt
	missed []string // texts run unprepared, for fill
}

const maxCachedStmts = 64

// get returns the statement prepared for query, or nil when there is
// none yet, noting the text for fill.
func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[query]
	if s == nil && !slices.Contains(c.missed, query) {
		c.missed = append(c.missed, query)
	}
	return s
}

// fill prepares on db the texts get missed; run it outside any
// transaction of db's. A text that fails to prepare is left unprepared.
func (c *stmtCache) fill(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	missed := c.missed
	c.missed = nil
	c.mu.Unlock()
	for _, query := range missed {
		s, err := db.PrepareContext(ctx, query)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if c.m[query] != nil { // prepared meanwhile by another search
			s.Close()
		} else {
			if len(c.m) >= maxCachedStmts {
				// A statement in use by a transaction stays open until it
				// ends (database/sql tracks that), so closing here is safe.
				c.closeLocked()
			}
			if c.m == nil {
				c.m = make(map[string]*sql.Stmt)
			}
			c.m[query] = s
		}
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *stmtCache) closeLocked() {
	for _, s := range c.m {
		s.Close()
	}
	c.m = nil
}

// readTx is a read transaction of a search that runs its statements
// prepared once (see stmtCache).
type readTx struct {
	tx    *sql.Tx
	stmts *stmtCache

	// ranker is the pool of the transactions beside this one (see
	// beside), nil for none.
	ranker      *sql.DB
	rankerStmts *stmtCache
}

// reading is tx, a read transaction of ix's pool, with ix's prepared
// statements and its ranker pool.
func (ix *Index) reading(tx *sql.Tx) readTx {
	return readTx{tx: tx, stmts: &ix.stmts, ranker: ix.ranker, rankerStmts: &ix.rankerStmts}
}

// beside runs f in a read transaction on r's ranker pool, beside r.
func (r readTx) beside(ctx context.Context, f func(readTx) error) error {
	tx, err := r.ranker.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return f(readTx{tx: tx, stmts: r.rankerStmts})
}

func (r readTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := r.stmts.get(query); s != nil {
		return r.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return r.tx.QueryContext(ctx, query, args...)
}

// QueryRowContext is QueryContext for one row; a preparing error is the
// row's Scan error, as with sql.Tx.
func (r readTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := r.stmts.get(query); s != nil {
		return r.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return r.tx.QueryRowContext(ctx, query, args...)
}
