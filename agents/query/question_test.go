package query_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
)

// A question an AI application asks (margin mcp's ask) writes nothing:
// an input the Router takes for a log, or a log and a question, is
// answered as a question, and the Observer leaves the global context.
func TestQuestionWritesNothing(t *testing.T) {
	for name, route := range map[string]map[string]any{
		"log":  querytest.Route("log", "Strength training"),
		"both": querytest.RouteBoth("Slept 5 hours again.", "Why am I always tired?", "Work"),
	} {
		t.Run(name, func(t *testing.T) {
			v := querytest.SampleVault(t)
			_, model, client := fakeModel(t, querytest.Replies{
				"router":      {route},
				"parser":      {querytest.Parse("General", map[string]any{"sleep_hours": 5}, true)},
				"planner":     {querytest.Plan("insight", querytest.Instr("sleep", "2026-11-15", "2026-11-22", "sleep"))},
				"analyzer":    {querytest.Analysis(true, []map[string]any{querytest.Finding("little sleep")}, []string{"sleep drops before heavy days"})},
				"synthesizer": {querytest.Draft("You sleep little before heavy days.", "medium")},
				"evaluator":   {querytest.Eval(true)},
				"observer":    {querytest.Observe("patterns", "sleep", "drops before heavy days", "likely")},
			})
			r, err := engine(t, v, client, querytest.Now).Question(context.Background(), "Slept 5 hours again. Why am I always tired?", nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Type != query.InputQuery || r.Status != query.StatusAnswered || r.Logged != nil {
				t.Errorf("type %s status %s logged %+v; path %s", r.Type, r.Status, r.Logged, states(r))
			}
			for _, p := range []string{"Daily/2026-11-22.md", "Margin/Context.md"} {
				if _, err := os.Stat(filepath.Join(v.Dir(), p)); !os.IsNotExist(err) {
					t.Errorf("%s was written: %v", p, err)
				}
			}
			if calls := model.Calls(); calls["parser"] != 0 || calls["observer"] != 0 {
				t.Errorf("model calls %v: the parser or the observer ran", calls)
			}
		})
	}
}
