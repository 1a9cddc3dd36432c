package index

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the statements searches run prepared: SQLite takes
// about as long to compile a search's five statements as to run a search
// of a rare word. A search builds its SQL from the query's filters, so
// the texts vary; the cache holds the last few dozen and starts over when
// full.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

const maxCachedStmts = 64

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	s := c.m[query]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[query]; old != nil { // prepared meanwhile by another search
		s.Close()
		return old, nil
	}
	if len(c.m) >= maxCachedStmts {
		// A statement in use by a transaction stays open until it ends
		// (database/sql tracks that), so closing here is safe.
		c.closeLocked()
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = s
	return s, nil
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
	db    *sql.DB
	stmts *stmtCache

	// ranker is the pool of the transactions beside this one (see
	// beside), nil for none.
	ranker      *sql.DB
	rankerStmts *stmtCache
}

// reading is tx, a read transaction of ix's pool, with ix's prepared
// statements and its ranker pool.
func (ix *Index) reading(tx *sql.Tx) readTx {
	return readTx{tx: tx, db: ix.db, stmts: &ix.stmts, ranker: ix.ranker, rankerStmts: &ix.rankerStmts}
}

// beside runs f in a read transaction on r's ranker pool, beside r.
func (r readTx) beside(ctx context.Context, f func(readTx) error) error {
	tx, err := r.ranker.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return f(readTx{tx: tx, db: r.ranker, stmts: r.rankerStmts})
}

func (r readTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := r.stmts.get(ctx, r.db, query)
	if err != nil {
		return nil, err
	}
	return r.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
}

// QueryRowContext is QueryContext for one row; a preparing error is the
// row's Scan error, as with sql.Tx.
func (r readTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := r.stmts.get(ctx, r.db, query)
	if err != nil {
		// A Row carrying err: the transaction's own QueryRowContext of the
		// same text fails the same way.
		return r.tx.QueryRowContext(ctx, query, args...)
	}
	return r.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
}
