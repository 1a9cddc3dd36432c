package evolution

import (
	"context"
	"testing"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
)

// The session file is recorded in margin's history as the evolution
// agent's write, with the improver's version and the model that answered.
func TestSessionFileNamesTheImproverAndItsModel(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	h := historytest.Record(t, f.v.DB(), f.v.Root(), history.Options{Git: "-"})
	improver, err := f.lib.Active(ctx, templates.Improver)
	if err != nil {
		t.Fatal(err)
	}
	f.model.replies = []llm.Message{{Role: llm.RoleAssistant, Content: "Are estimates always yours to set?"}}
	turn, err := f.evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	es, err := h.List(ctx, history.Filter{Task: turn.Path})
	if err != nil || len(es) != 1 || es[0].Actor != "evolution" || es[0].Template != improver.Label() || es[0].Model != "fake" {
		t.Fatalf("history of %s = %+v, %v; want the evolution agent's write, by %s and fake", turn.Path, es, err, improver.Label())
	}
}
