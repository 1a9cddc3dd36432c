package server_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/vault/store"
)

// TestQueryModelCallsAreInTheLedgerUnderTheSession: the model calls of a
// query/ask are in the ledger as "query:<session id>" (SPEC), so they can
// be told from the agents' runs.
func TestQueryModelCallsAreInTheLedgerUnderTheSession(t *testing.T) {
	t.Parallel()
	sc := querytest.Scenarios()[0] // simple
	fake, _ := newFake(t, sc.Replies)
	dir := editortest.SampleVault(t)
	e := startQuery(t, dir, fake)
	var r struct {
		SessionID string `json:"sessionId"`
	}
	e.MustCall("query/ask", map[string]any{"text": sc.Input}, &r)
	calls := len(fake.Requests())

	db, err := store.Open(context.Background(), filepath.Join(dir, ".margin", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM model_calls WHERE scope = ?`, "query:"+r.SessionID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || n != calls {
		t.Errorf("ledger has %d calls under query:%s, the model was asked %d times", n, r.SessionID, calls)
	}
}
