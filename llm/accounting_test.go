package llm_test

import (
	"strings"
	"testing"

	"github.com/margin-md/margin/llm"
)

func TestTruncatedRule(t *testing.T) {
	tests := []struct {
		name                      string
		estimate, evalCount, nCtx int
		want                      bool
	}{
		{"cut to the window", 2000, 1024, 1024, true},
		{"cached prefix, old server counting only new tokens", 3000, 40, 4096, false},
		{"cached prefix on an oversized prompt", 6000, 40, 4096, true},
		{"estimate a little over the window, count close to it", 1100, 1000, 1024, false},
		{"no count reported", 5000, 0, 1024, false},
		{"no window known", 5000, 100, 0, false},
		{"fits", 500, 480, 4096, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := llm.Truncated(tt.estimate, tt.evalCount, tt.nCtx); got != tt.want {
				t.Fatalf("Truncated(%d, %d, %d) = %v, want %v", tt.estimate, tt.evalCount, tt.nCtx, got, tt.want)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	req := llm.Request{System: strings.Repeat("s", 400), Messages: []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("u", 400)}}}
	if got := llm.EstimateTokens(req); got != 200 {
		t.Fatalf("EstimateTokens = %d, want 200 (800 chars / 4)", got)
	}
	req.Tools = []llm.ToolSpec{{Name: "update_report", Description: "Replace the report.", Schema: reportSchema()}}
	if got := llm.EstimateTokens(req); got <= 200 {
		t.Fatalf("EstimateTokens with a tool = %d; tool schemas are part of the prompt", got)
	}
}

func TestSystemPromptIsStable(t *testing.T) {
	a := llm.SystemPrompt(
		llm.PromptPart{Heading: "Scaffold", Text: "You maintain one task's report.\n"},
		llm.PromptPart{Heading: "General Directive", Text: "Be brief.  \r\nCite entries.\r\n"},
		llm.PromptPart{Heading: "Empty", Text: " \n "},
		llm.PromptPart{Heading: "Report Directive", Text: "\n\nLead with the status."},
	)
	b := llm.SystemPrompt(
		llm.PromptPart{Heading: "Scaffold", Text: "You maintain one task's report."},
		llm.PromptPart{Heading: "General Directive", Text: "Be brief.\nCite entries."},
		llm.PromptPart{Heading: "Report Directive", Text: "Lead with the status.\n"},
	)
	want := "## Scaffold\n\nYou maintain one task's report.\n\n## General Directive\n\nBe brief.\nCite entries.\n\n## Report Directive\n\nLead with the status."
	if a != want || b != want {
		t.Fatalf("prompts differ:\n%q\n%q\nwant\n%q", a, b, want)
	}
}
