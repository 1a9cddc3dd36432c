package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// TestFailedOpenVaultDetachesTheLedger: when the agents cannot open (a
// state database written by a newer margin), openVault fails and closes
// the vault; a model call after that must not be written to the closed
// database through a ledger still attached to it.
func TestFailedOpenVaultDetachesTheLedger(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, v.DB(), "test", nil); err != nil { // creates the table of applied steps
		t.Fatal(err)
	}
	if _, err := v.DB().Exec(`INSERT INTO schema_migrations (component, step, applied_at) VALUES ('agents', 999, '2030-01-01')`); err != nil {
		t.Fatal(err)
	}
	v.Close()

	var logs bytes.Buffer
	slot := &ledger.Slot{}
	s := New(Options{Ledger: slot, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := s.openVault(ctx, vault.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "newer margin") {
		t.Fatalf("openVault = %v, want the agents' refusal of a newer database", err)
	}
	slot.Record(ctx, llm.Record{Time: time.Now(), Role: "query", Provider: "ollama", Model: "m", Outcome: "ok"})
	if strings.Contains(logs.String(), "recording a model call") {
		t.Errorf("a model call went to the closed database:\n%s", logs.String())
	}
}

// TestCloseVaultDropsEveryPartOfTheVault: after closeVault the server
// holds nothing that reads the closed vault, the query engine included.
func TestCloseVaultDropsEveryPartOfTheVault(t *testing.T) {
	s := New(Options{})
	inProcess(t, s) // the vault's status notifications need a connection
	<-s.connected
	if err := s.openVault(context.Background(), vault.Options{Dir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	s.closeVault()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vault != nil || s.agents != nil || s.query != nil {
		t.Errorf("after closeVault: vault %v, agents %v, query %v; want none", s.vault, s.agents, s.query)
	}
}
