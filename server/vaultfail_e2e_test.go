package server_test

import (
	"strings"
	"testing"

	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/server/editortest"
)

// TestReadsAnswerWhenTheVaultCannotBeWatched: margin starts at the inotify
// watch limit, so even the vault directory is refused a watch and the vault
// stops before its first scan. Every read then answers at once with an
// error that says so, instead of waiting for a scan that will never come.
func TestReadsAnswerWhenTheVaultCannotBeWatched(t *testing.T) {
	t.Parallel()
	e := editortest.Start(t, []string{"MARGIN_TEST_WATCH_LIMIT=1", "MARGIN_AGENTS_AUTO_CREATE=false", "OLLAMA_HOST=http://127.0.0.1:1"})
	e.Initialize(editortest.SampleVault(t))
	for _, c := range []struct {
		method string
		params any
	}{
		{"vault/status", nil},
		{"vault/search", map[string]any{"query": "bench"}},
		{"agents/list", nil},
		{"query/ask", map[string]any{"text": "How was my bench press?"}},
	} {
		err := e.Call(c.method, c.params, nil)
		if err == nil || err.Code != server.CodeNoVault || !strings.Contains(err.Message, "no space left on device") {
			t.Errorf("%s = %v, want code %d saying the vault cannot be watched", c.method, err, server.CodeNoVault)
		}
	}
	e.MustCall("shutdown", nil, nil)
	e.Notify("exit", nil)
	if code := e.Exit(); code != 0 {
		t.Errorf("exit code %d after a clean shutdown", code)
	}
}
