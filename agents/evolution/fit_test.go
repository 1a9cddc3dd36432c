package evolution

import (
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
)

// reportWithSections is a report directive as a model writes one: its
// sections as ## headings, which would start sections of the template
// file itself.
const reportWithSections = "Finish with update_report(tldr, content).\n\n## ✅ Achieved\nDone work, as a list.\n\n## 📋 What is left\nOpen work as checkboxes.\n"

// The evolution agent proposes a report directive with ## headings: the
// person is shown it repaired (### in the directive and its diff), and
// approving it saves exactly that.
func TestProposalWithSectionHeadingsIsRepairedAndApproves(t *testing.T) {
	ctx := context.Background()
	f := newEvolutionFixture(t)
	f.model.replies = []llm.Message{
		proposeCall(templates.DefaultGeneral, reportWithSections, "Reports read better with emoji sections."),
	}
	turn, err := f.evo.Start(ctx, templates.TaskAgent)
	if err != nil {
		t.Fatal(err)
	}
	p := turn.Proposal
	if p == nil || !strings.Contains(p.Report, "### ✅ Achieved") ||
		!strings.Contains(p.ReportDiff, "+### ✅ Achieved\n") || !strings.Contains(p.ReportDiff, "+### 📋 What is left\n") {
		t.Fatalf("proposal shown %+v, want its headings as ###", p)
	}
	if strings.Contains("\n"+p.Report, "\n## ") {
		t.Errorf("the repaired report directive still has a ## heading:\n%s", p.Report)
	}
	// The session tells the model, so it writes ### when it proposes again.
	s, err := f.evo.Session(ctx, turn.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if told := s.Messages[len(s.Messages)-1].Content; !strings.Contains(told, `"## ✅ Achieved"`) || !strings.Contains(told, "###") {
		t.Errorf("the model was told %q", told)
	}
	tmpl, err := f.evo.Approve(ctx, turn.SessionID)
	if err != nil {
		t.Fatalf("approving the shown proposal: %v", err)
	}
	if tmpl.Report != p.Report || tmpl.Version != 2 {
		t.Errorf("saved v%d report directive %q, want the one shown %q", tmpl.Version, tmpl.Report, p.Report)
	}
}

// A proposal margin cannot repair (a code fence left open) is never shown:
// the model is told why and proposes again; a model that does not fix it
// within the session's turns leaves no proposal to approve.
func TestProposalThatCannotBeSavedIsNeverShown(t *testing.T) {
	ctx := context.Background()
	open := "Finish with update_report.\n\n```\nexample"
	fixed := "Finish with update_report.\n\n```\nexample\n```"
	for _, tc := range []struct {
		name     string
		replies  []llm.Message
		proposed bool
	}{
		{"fixed when told", []llm.Message{
			proposeCall(templates.DefaultGeneral, open, "Show an example."),
			proposeCall(templates.DefaultGeneral, fixed, "Show an example."),
			{Role: llm.RoleAssistant, Content: "Fixed."},
		}, true},
		{"never fixed", []llm.Message{
			proposeCall(templates.DefaultGeneral, open, "Show an example."),
			proposeCall(templates.DefaultGeneral, open, "Show an example."),
			proposeCall(templates.DefaultGeneral, open, "Show an example."),
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newEvolutionFixture(t)
			f.model.replies = tc.replies
			turn, err := f.evo.Start(ctx, templates.TaskAgent)
			if err != nil {
				t.Fatal(err)
			}
			second := f.model.requests[1].Messages
			if told := second[len(second)-1].Content; !strings.Contains(told, "report_directive cannot be saved in the template file") || !strings.Contains(told, "code fence is left open") {
				t.Errorf("the model was told %q", told)
			}
			if n := len(f.model.requests); n > Turns {
				t.Errorf("%d model calls, the session allows %d", n, Turns)
			}
			if !tc.proposed {
				if turn.Proposal != nil {
					t.Fatalf("shown a proposal that cannot be saved: %+v", turn.Proposal)
				}
				if _, err := f.evo.Approve(ctx, turn.SessionID); err != ErrNoProposal {
					t.Errorf("approve = %v, want ErrNoProposal", err)
				}
				return
			}
			if turn.Proposal == nil || turn.Proposal.Report != fixed {
				t.Fatalf("proposal %+v, want the fixed one", turn.Proposal)
			}
			if _, err := f.evo.Approve(ctx, turn.SessionID); err != nil {
				t.Errorf("approving the fixed proposal: %v", err)
			}
		})
	}
}
