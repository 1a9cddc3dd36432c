package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// get_review reads the note of a review's latest run, or its run on a
// date; an unknown review or date is an error the model reads.
func TestGetReview(t *testing.T) {
	r := newRig(t, nil)
	def := "---\nschedule: weekly mon 08:00\n---\n# Weekly\n\nWhat was done and what slipped.\n"
	if err := os.MkdirAll(filepath.Join(r.dir, "Margin", "Reviews"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "Margin", "Reviews", "weekly.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := r.ws.Reviews.RunNow(context.Background(), "weekly")
	if err != nil {
		t.Fatal(err)
	}
	res := r.call(t, "get_review", map[string]any{"name": "weekly"})
	got := structured[struct {
		Path        string `json:"path"`
		Date        string `json:"date"`
		GeneratedBy string `json:"generated_by"`
		Content     string `json:"content"`
	}](t, res)
	if got.Path != run.Note || got.Date != run.Date || got.GeneratedBy != "offline" || !strings.Contains(got.Content, "margin: review") || text(res) != got.Content {
		t.Errorf("get_review = %+v (text %q), want run %+v", got, text(res), run)
	}
	if res := r.call(t, "get_review", map[string]any{"name": "weekly", "date": run.Date}); res.IsError {
		t.Errorf("get_review on %s: %s", run.Date, text(res))
	}
	for _, args := range []map[string]any{{"name": "weekly", "date": "2001-01-01"}, {"name": "monthly"}, {"name": "weekly", "date": "last week"}} {
		res, err := r.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "get_review", Arguments: args})
		if err == nil && !res.IsError {
			t.Errorf("get_review %v: no error", args)
		}
	}
}
