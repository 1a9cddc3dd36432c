package evolution

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/store"
)

// Vault is what evolution is handed of the vault by the composition
// root: the session files it keeps and the reports and journals it reads,
// under margin's folder.
type Vault struct {
	Files        Files
	OutputFolder string
}

// Files reads and writes session files and reads the agents' outputs,
// confined to the vault: the vault's *edit.Root.
type Files interface {
	task.Reader
	Stat(name string) (fs.FileInfo, error)
	WriteContext(ctx context.Context, name string, base edit.Fingerprint, content []byte) (edit.Fingerprint, error)
}

// Stores are the tables evolution keeps (Sessions) and those its metrics
// read: the agents' runs, the decisions on what they proposed and the
// ledger of model calls. The composition root opens them in the vault's
// state database.
type Stores struct {
	Sessions *Store
	Agents   *task.Store
	Changes  *changes.Store
	Ledger   *ledger.Ledger
}

// Store is the evolution sessions' table in the vault's state database.
type Store struct {
	db *sql.DB
}

// OpenStore migrates the evolution sessions' table in db, the vault's
// state database.
func OpenStore(ctx context.Context, db *sql.DB) (*Store, error) {
	if err := store.Migrate(ctx, db, "evolution", schema); err != nil {
		return nil, fmt.Errorf("opening evolution sessions: %w", err)
	}
	return &Store{db: db}, nil
}
