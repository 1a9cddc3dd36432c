package templates

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/history"
	"github.com/margin-md/margin/vault/history/historytest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// Every write of the template files is recorded in margin's history as the
// templates', naming the version it is for: the seed, a hand edit made a
// version (the earlier one archived), a rollback, and the active file put
// back after it was deleted.
func TestTemplateWritesNameTheirVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	v, err := vault.Open(ctx, vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	h := historytest.Record(t, v.DB(), v.Root(), history.Options{Git: "-"})
	l := New(vaultOf(v), Options{})
	if _, err := l.Active(ctx, TaskAgent); err != nil {
		t.Fatal(err)
	}
	active := vaulttest.Read(t, dir, "Margin/Templates/task-agent.md")
	vaulttest.Write(t, dir, "Margin/Templates/task-agent.md", strings.Replace(active, "calm,\ndirect", "cheerful,\ndirect", 1))
	if v2, err := l.Active(ctx, TaskAgent); err != nil || v2.Version != 2 {
		t.Fatalf("after a hand edit: %+v, %v", v2, err)
	}
	if _, err := l.Rollback(ctx, TaskAgent, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "Margin/Templates/task-agent.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Active(ctx, TaskAgent); err != nil {
		t.Fatal(err)
	}
	es, err := h.List(ctx, history.Filter{Limit: 100})
	if err != nil || len(es) < 7 {
		t.Fatalf("history = %+v, %v; want the seed, the new version, the archiving, the rollback and the restore", es, err)
	}
	for _, e := range es {
		if !strings.HasPrefix(e.Actor, "templates (") || !strings.HasPrefix(e.Template, TaskAgent+"@") {
			t.Errorf("write of %s by %q for %q, want the templates' for a version of %s", e.Path, e.Actor, e.Template, TaskAgent)
		}
	}
}
