package workspace

import (
	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
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
