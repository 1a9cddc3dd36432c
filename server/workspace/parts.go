package workspace

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// The functions below hand each agents package the parts of a vault it
// declares it needs; the composition root is the one place that reaches
// into the vault for its files, index and state database. They are
// exported for the other roots that open parts without a workspace
// (marginbench).

// TemplatesVault is the template library's view of v.
func TemplatesVault(v *vault.Vault) templates.Vault {
	return templates.Vault{Files: v.Root(), Events: v, OutputFolder: v.Options().OutputFolder}
}

// ChangesVault is the change sets' view of v.
func ChangesVault(v *vault.Vault) changes.Vault {
	o := v.Options()
	return changes.Vault{Files: v.Root(), Events: v, Rules: v.Rules(), OutputFolder: o.OutputFolder, MaxFileSize: o.MaxFileSize}
}

// TaskVault is the task runtime's view of v; related finds the notes near
// a task by meaning (a Workspace), nil where no vectors are open.
func TaskVault(v *vault.Vault, related task.Related) task.Vault {
	o := v.Options()
	return task.Vault{
		Files: v.Root(), Index: v.Index(), Events: v, Rules: v.Rules(), OutputFolder: o.OutputFolder, MaxFileSize: o.MaxFileSize,
		Related: related,
		Lock:    func() (*store.Lock, error) { return store.TryLock(filepath.Join(v.StateDir(), task.AgentsLock)) },
	}
}

// TaskStores opens the agents' tables and their change sets' in v's state
// database.
func TaskStores(ctx context.Context, v *vault.Vault) (task.Stores, error) {
	st, err := task.OpenStore(ctx, v.DB())
	if err != nil {
		return task.Stores{}, err
	}
	cs, err := changes.OpenStore(ctx, v.DB())
	if err != nil {
		return task.Stores{}, err
	}
	return task.Stores{Agents: st, Changes: cs}, nil
}

// EvolutionVault is evolution's view of v.
func EvolutionVault(v *vault.Vault) evolution.Vault {
	return evolution.Vault{Files: v.Root(), OutputFolder: v.Options().OutputFolder}
}

// EvolutionStores opens evolution's sessions and the ledger in v's state
// database, beside the agents' stores its metrics read (TaskStores): all
// are migrated, so a command line run works on a fresh vault.
func EvolutionStores(ctx context.Context, v *vault.Vault, agents task.Stores, logger *slog.Logger) (evolution.Stores, error) {
	sessions, err := evolution.OpenStore(ctx, v.DB())
	if err != nil {
		return evolution.Stores{}, err
	}
	l, err := ledger.Open(ctx, v.DB(), logger)
	if err != nil {
		return evolution.Stores{}, err
	}
	return evolution.Stores{Sessions: sessions, Agents: agents.Agents, Changes: agents.Changes, Ledger: l}, nil
}

// QueryVault is the query engine's view of v.
func QueryVault(v *vault.Vault) query.Vault {
	return query.Vault{Files: v.Root(), Index: v.Index(), Daily: v, Rules: v.Rules(), OutputFolder: v.Options().OutputFolder}
}
