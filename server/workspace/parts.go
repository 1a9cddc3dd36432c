package workspace

import (
	"context"
	"path/filepath"

	"github.com/margin-md/margin/agents/changes"
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

// TaskVault is the task runtime's view of v.
func TaskVault(v *vault.Vault) task.Vault {
	o := v.Options()
	return task.Vault{
		Files: v.Root(), Index: v.Index(), Events: v, Rules: v.Rules(), OutputFolder: o.OutputFolder, MaxFileSize: o.MaxFileSize,
		Lock: func() (*store.Lock, error) { return store.TryLock(filepath.Join(v.StateDir(), task.AgentsLock)) },
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
