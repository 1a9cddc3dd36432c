package wire

import (
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/server/protocol"
)

// Template is t as the protocol sends it.
func Template(t templates.Template) protocol.Template {
	return protocol.Template{
		Name: t.Name, Kind: t.Kind, Version: t.Version, Status: t.Status, AuthoredBy: t.AuthoredBy, Created: t.Created,
		Tier: t.Tier, Model: t.Model, Depth: t.Depth, General: t.General, Report: t.Report, Legacy: t.Legacy, Path: t.Path,
	}
}

// Templates are ts as the protocol sends them.
func Templates(ts []templates.Template) []protocol.Template { return list(ts, Template) }

// TemplateProblem is margin/templateProblem's params.
func TemplateProblem(p templates.TemplateProblem) protocol.TemplateProblem {
	return protocol.TemplateProblem{Name: p.Name, Path: p.Path, Problem: p.Problem, Active: p.Active}
}

// EvolutionTurn is t as the protocol sends it.
func EvolutionTurn(t evolution.Turn) protocol.EvolutionTurn {
	return protocol.EvolutionTurn{SessionID: t.SessionID, Message: t.Message, Proposal: proposal(t.Proposal), Path: t.Path, Metrics: metrics(t.Metrics)}
}

// EvolutionSession is s as the protocol sends it; the conversation with
// the model stays in the session's file.
func EvolutionSession(s evolution.Session) protocol.EvolutionSession {
	return protocol.EvolutionSession{
		ID: s.ID, Template: s.Template, BaseVersion: s.BaseVersion, Status: s.Status, Path: s.Path, Context: s.Context,
		Metrics: metrics(s.Metrics), Proposal: proposal(s.Proposal), Reason: s.Reason, ResultVersion: s.ResultVersion,
		Created: s.Created, Updated: s.Updated,
	}
}

func proposal(p *evolution.Proposal) *protocol.Proposal {
	if p == nil {
		return nil
	}
	return &protocol.Proposal{
		General: p.General, Report: p.Report, Rationale: p.Rationale,
		BaseVersion: p.BaseVersion, GeneralDiff: p.GeneralDiff, ReportDiff: p.ReportDiff,
	}
}

func metrics(m evolution.Metrics) protocol.Metrics {
	return protocol.Metrics{
		Agents: m.Agents, Tally: tally(m.Tally),
		Versions: list(m.Versions, func(v evolution.VersionMetrics) protocol.VersionMetrics {
			return protocol.VersionMetrics{Version: v.Version, Active: v.Active, Tally: tally(v.Tally)}
		}),
		Rejections: list(m.Rejections, func(r evolution.Rejection) protocol.Rejection {
			return protocol.Rejection{Tool: r.Tool, Version: r.Version, Summary: r.Summary, Reason: r.Reason, Date: r.Date}
		}),
		Unmeasured: m.Unmeasured,
	}
}

func tally(t evolution.Tally) protocol.Tally {
	return protocol.Tally{
		Wakes: t.Wakes, Completed: t.Completed, Incomplete: t.Incomplete, Failed: t.Failed,
		ModelCalls: t.ModelCalls, FailedCalls: t.FailedCalls, PromptTokens: t.PromptTokens, CompletionTokens: t.CompletionTokens,
		Tools: list(t.Tools, func(r evolution.ToolRate) protocol.ToolRate {
			return protocol.ToolRate{Tool: r.Tool, Confirmed: r.Confirmed, Rejected: r.Rejected, Deferred: r.Deferred}
		}),
	}
}
