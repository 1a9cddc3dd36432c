package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// margin serve runs a review as it starts (its latest scheduled time has
// passed and it never ran), with the model, and reviews/latest gives its
// note; bad params and an unknown review are errors a client can act on.
func TestServeRunsReviewAndLatestReadsIt(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{JSON: map[string]any{"tldr": "Training went on through the week.", "proposals": []any{},
			"sections": []any{map[string]any{"heading": "Training", "claims": []any{
				map[string]any{"text": "Bench felt heavy on Friday.", "cites": []string{"[[Daily/2026-11-13#18:15]]"}},
				map[string]any{"text": "A made-up claim.", "cites": []string{"[[Daily/1999-01-01#07:00]]"}}}}}}}
	})
	dir := editortest.SampleVault(t)
	if err := os.MkdirAll(filepath.Join(dir, "Margin", "Reviews"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nschedule: daily 07:00\nscope:\n  folders: [Daily]\n---\n# Daily\n\nWhat the training log says.\n"
	if err := os.WriteFile(filepath.Join(dir, "Margin", "Reviews", "daily.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)

	var r protocol.Review
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := e.Call("reviews/latest", map[string]any{"name": "daily"}, &r); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("reviews/latest: %v", err)
		}
	}
	if !strings.HasPrefix(r.Path, "Margin/Reviews/daily/") || r.GeneratedBy != taskModel || r.Status != "done" || r.Template != "review-daily@1" {
		t.Errorf("reviews/latest = %+v", r)
	}
	if got := readFile(t, dir, r.Path); got != r.Content || !strings.Contains(got, "- Bench felt heavy on Friday. [[Daily/2026-11-13#18:15]]") || strings.Contains(got, "made-up") {
		t.Errorf("the note:\n%s", got)
	}

	for _, c := range []struct {
		params map[string]any
		code   int
	}{
		{map[string]any{}, -32602},
		{map[string]any{"name": "daily", "date": "last week"}, -32602},
		{map[string]any{"name": "../daily"}, -32602},
		{map[string]any{"name": "monthly"}, server.CodeNotFound},
		{map[string]any{"name": "daily", "date": "2001-01-01"}, server.CodeNotFound},
	} {
		err := e.Call("reviews/latest", c.params, nil)
		if err == nil || err.Code != c.code {
			t.Errorf("reviews/latest %v: %v, want code %d", c.params, err, c.code)
		}
	}
}
