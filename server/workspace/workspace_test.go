package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/store"
)

// counter counts the model calls it hears.
type counter struct{ n atomic.Int64 }

func (c *counter) Record(context.Context, llm.Record) { c.n.Add(1) }

func call() llm.Record {
	return llm.Record{Time: time.Now(), Role: "query", Provider: "ollama", Model: "m", Outcome: "ok"}
}

func noteVault(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Plan.md"), []byte("# Plan\n\nShip the export.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestFailedOpenDetachesTheLedger: when a part cannot open (the agents'
// tables written by a newer margin), Open closes the vault, and a model
// call after that reaches neither the closed database nor the recorders.
func TestFailedOpenDetachesTheLedger(t *testing.T) {
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

	slot, heard := &ledger.Slot{}, &counter{}
	_, err = Open(ctx, Options{Vault: vault.Options{Dir: dir}, Parts: Agents, Ledger: slot, Recorders: []llm.Recorder{heard}})
	if err == nil || !strings.Contains(err.Error(), "newer margin") {
		t.Fatalf("Open = %v, want the agents' refusal of a newer database", err)
	}
	slot.Record(ctx, call())
	if heard.n.Load() != 0 {
		t.Error("a model call after a failed Open still went to the ledger and its recorders")
	}
}

// TestOpenRunClose opens every part, runs them, and closes: while open the
// slot records into the ledger and the recorders; after Close it records
// nowhere, and a second Close is harmless.
func TestOpenRunClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slot, heard := &ledger.Slot{}, &counter{}
	w, err := Open(ctx, Options{Vault: vault.Options{Dir: noteVault(t)}, Parts: Agents | Evolution | Query, Ledger: slot, Recorders: []llm.Recorder{heard}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Agents == nil || w.Changes == nil || w.Templates == nil || w.Evolution == nil || w.Query == nil || w.Ledger == nil {
		t.Fatalf("parts %+v, want every one", w)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	select {
	case <-w.Vault.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the first scan never finished")
	}
	slot.Record(ctx, call())
	if heard.n.Load() != 1 {
		t.Errorf("recorders heard %d calls while open, want 1", heard.n.Load())
	}
	cancel()
	<-ran
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	slot.Record(ctx, call())
	if heard.n.Load() != 1 {
		t.Error("a model call after Close still went to the ledger and its recorders")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestPartsOpenOnlyWhatIsAskedFor: the command line's parts, and Scan
// indexes before they open.
func TestPartsOpenOnlyWhatIsAskedFor(t *testing.T) {
	ctx := context.Background()
	dir := noteVault(t)
	w, err := Open(ctx, Options{Vault: vault.Options{Dir: dir}, Parts: Templates | Query, Scan: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.Vault.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notes != 1 || w.Templates == nil || w.Query == nil || w.Agents != nil || w.Changes != nil || w.Evolution != nil || w.Ledger != nil {
		t.Errorf("notes %d, parts %+v; want the note indexed, templates and query alone", st.Notes, w)
	}
	w.Close()

	w, err = Open(ctx, Options{Vault: vault.Options{Dir: dir}, Parts: Evolution})
	if err != nil {
		t.Fatal(err)
	}
	if w.Evolution == nil || w.Templates == nil || w.Agents != nil || w.Changes != nil {
		t.Errorf("parts %+v, want evolution on its templates, no agents", w)
	}
	w.Close()

	w, err = Open(ctx, Options{Vault: vault.Options{Dir: dir}, Parts: Changes})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Changes == nil || w.Agents != nil || w.Templates != nil {
		t.Errorf("parts %+v, want the change sets alone, no agents", w)
	}
}

// TestRunKeepsTheLedger: margin serve's Run forgets the ledger's calls
// older than history.keep, and keeps the newer ones.
func TestRunKeepsTheLedger(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := Open(ctx, Options{Vault: vault.Options{Dir: noteVault(t)}, Ledger: &ledger.Slot{}, History: history.Options{Keep: 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := w.Ledger.RecordToolCalls(ctx, []ledger.ToolCall{
		{Time: now.Add(-48 * time.Hour), Client: "old", Tool: "search_notes"},
		{Time: now.Add(-time.Hour), Client: "recent", Tool: "search_notes"},
	}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	var calls []ledger.ToolCall
	for range 500 {
		if calls, err = w.Ledger.ToolCalls(ctx, 10); err != nil || len(calls) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-ran
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Client != "recent" {
		t.Errorf("calls left = %+v, %v", calls, err)
	}
}
