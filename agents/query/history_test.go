package query_test

import (
	"context"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
)

// The query agents' writes name in margin's history what they wrote and
// the model whose answer led to each (SPEC §11): the log entry the
// Router's, the global context the Observer's.
func TestHistoryNamesTheQueryAgentsAndTheirModels(t *testing.T) {
	v := querytest.SampleVault(t)
	h := historytest.Record(t, v.DB(), v.Root(), history.Options{Git: "-"})
	fake, _, client := fakeModel(t, querytest.Replies{
		"router":   {querytest.Route("log", "Strength training")},
		"parser":   {querytest.Parse("Strength training", map[string]any{}, true)},
		"observer": {querytest.Observe("fact", "bench_pr", "200 lbs 3x5", "certain")},
	})
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Ask(context.Background(), "Bench 3x5 @ 200, new PR!", nil); err != nil {
		t.Fatal(err)
	}
	models := map[string]string{}
	for _, r := range fake.Requests() {
		models[querytest.RoleOf(r)] = r.Model
	}
	es, err := h.List(context.Background(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"query (log)": models["router"], "query (global context)": models["observer"]}
	for _, e := range es {
		if m, ok := want[e.Actor]; ok && m != "" && e.Model == m {
			delete(want, e.Actor)
		}
	}
	if len(want) > 0 {
		t.Errorf("margin's history lacks writes by %v with their models: %+v", want, es)
	}
}
