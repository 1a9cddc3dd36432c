package mcp_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// TestAskWeakModel asks, through MCP, a question whose offline answer cites
// the heavy bench evening, of a model (router included) with each fault
// of the weak profile. Whatever the fault, the client gets an answer that
// cites at least the offline citations, no citation of a note that does
// not exist, and a text that says how it was made.
func TestAskWeakModel(t *testing.T) {
	const question = "Why did my bench press feel heavy?"
	offline := structured[query.Result](t, newRig(t, nil).call(t, "ask", map[string]any{"question": question}))
	if !slices.ContainsFunc(offline.Citations, func(c query.Citation) bool { return c.Link == "[[Daily/2026-11-13#18:15]]" }) {
		t.Fatalf("offline citations %v miss the heavy bench", offline.Citations)
	}
	for _, tc := range []struct {
		fault llmtest.Fault
		// says is what the text tells the client about how it was made.
		says string
	}{
		{llmtest.Filler, "Degraded answer"},           // the plan's "ok" dates fail the schema
		{llmtest.DatesInWords, "Degraded answer"},     // so do dates in words
		{llmtest.Headings, "Degraded answer"},         // and headings in one-line fields
		{llmtest.Cut, "Degraded answer"},              // and replies cut mid-JSON
		{llmtest.EveryOptional, "came up empty"},      // junk glob and tags dropped: the plain search stands in
		{llmtest.NearDuplicates, "came up empty"},     // near-duplicate keywords find nothing
		{llmtest.MissingPaths, "answer said nothing"}, // an empty draft citing missing notes
		{llmtest.OtherLanguage, "also found"},         // the foreign answer, the offline citations under it
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			fake := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
			fake.Handle(llmtest.Weak{Fault: tc.fault}.Ollama)
			cfg := fake.Config()
			cfg.Retry.LLMRetry, cfg.Retry.ParseRetry = 0, 1
			client, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res := newRig(t, client).call(t, "ask", map[string]any{"question": question})
			got := structured[query.Result](t, res)
			if res.IsError || !strings.Contains(text(res), tc.says) {
				t.Errorf("want the text to say %q: %s", tc.says, text(res))
			}
			for _, c := range offline.Citations {
				if !slices.ContainsFunc(got.Citations, func(g query.Citation) bool { return g.Link == c.Link }) {
					t.Errorf("lacks the offline citation %s: %s", c.Link, text(res))
				}
			}
			if strings.Contains(text(res), "no model was reachable") {
				t.Errorf("a model that answered is called unreachable: %s", text(res))
			}
			if strings.Contains(text(res), "Never written") {
				t.Errorf("a citation of a missing note survived: %s", text(res))
			}
		})
	}
}
