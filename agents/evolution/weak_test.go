package evolution

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// Each fault of a weak model (llmtest.Weak) proposing directives ends in a
// useful, honest result within the session's turns: a proposal the person
// can approve as shown, or none, with a message that says what happened.
func TestEvolutionOverAWeakModel(t *testing.T) {
	const (
		none     = "no proposal"
		approves = "a proposal that approves as shown"
	)
	for _, tc := range []struct {
		fault llmtest.Fault
		ends  string
		told  string // what the model is told when margin refuses its proposal
		says  string // in the message the person is shown
	}{
		{llmtest.Filler, none, "says nothing", "without a proposal"},
		{llmtest.DatesInWords, none, "general_directive is empty", "without a proposal"},
		{llmtest.Headings, none, "says nothing", "without a proposal"},
		{llmtest.EveryOptional, approves, "", "The rationale."},
		{llmtest.NearDuplicates, approves, "", "Same point"},
		{llmtest.MissingPaths, none, "general_directive is empty", "without a proposal"},
		{llmtest.OtherLanguage, approves, "", llmtest.ForeignText},
		{llmtest.Cut, none, "", "cut off"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			fake := llmtest.NewOllama(t, "qwen2.5:14b") // the evolution role's default
			fake.Handle(llmtest.Weak{Fault: tc.fault, Tool: "propose_directives"}.Ollama)
			cfg := fake.Config()
			cfg.Retry.LLMRetry = 1
			cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
			client, err := llm.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			f := newEvolutionFixture(t)
			if f.evo, err = newEvolution(ctx, f.v, f.lib, client, Options{}); err != nil {
				t.Fatal(err)
			}

			turn, err := f.evo.Start(ctx, templates.TaskAgent)
			if err != nil {
				t.Fatal(err)
			}
			reqs := fake.Requests()
			t.Logf("%s: %d model calls", tc.ends, len(reqs))
			if n := len(reqs); n == 0 || n > Turns*(1+cfg.Retry.LLMRetry) {
				t.Errorf("%d model requests, the session allows %d turns", n, Turns)
			}
			if !strings.Contains(turn.Message, tc.says) {
				t.Errorf("the person is told %q, want it to say %q", turn.Message, tc.says)
			}
			if tc.told != "" {
				last := reqs[len(reqs)-1].Messages
				if told := last[len(last)-1].Content; !strings.Contains(told, tc.told) {
					t.Errorf("the model was told %q, want %q", told, tc.told)
				}
			}
			switch tc.ends {
			case none:
				if turn.Proposal != nil {
					t.Fatalf("shown a proposal: %+v", turn.Proposal)
				}
				if _, err := f.evo.Approve(ctx, turn.SessionID); !errors.Is(err, ErrNoProposal) {
					t.Errorf("approve = %v, want ErrNoProposal", err)
				}
			case approves:
				if turn.Proposal == nil || turn.Proposal.GeneralDiff == "" {
					t.Fatalf("proposal %+v, want one with its diff", turn.Proposal)
				}
				tmpl, err := f.evo.Approve(ctx, turn.SessionID)
				if err != nil || tmpl.General != turn.Proposal.General || tmpl.Report != turn.Proposal.Report {
					t.Errorf("approving the proposal shown: %v; saved %q / %q", err, tmpl.General, tmpl.Report)
				}
			}
		})
	}
}
