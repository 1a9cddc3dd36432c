package query

import (
	"context"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
)

// NewEngine is newEngine, for the external tests (package query_test).
var NewEngine = newEngine

// newEngine opens the engine on v as the composition root does: its store
// in v's state database, and the parts of v it is handed.
func newEngine(ctx context.Context, v *vault.Vault, client *llm.Client, opts Options) (*Engine, error) {
	st, err := OpenStore(ctx, v.DB())
	if err != nil {
		return nil, err
	}
	qv := Vault{Files: v.Root(), Index: v.Index(), Daily: v, Rules: v.Rules(), OutputFolder: v.Options().OutputFolder}
	return New(qv, st, client, opts), nil
}
