package wire

import (
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/server/protocol"
)

// Agent is a as the protocol sends it.
func Agent(a task.Agent) protocol.Agent {
	return protocol.Agent{
		ID: a.ID, Task: a.Task, OutputName: a.OutputName, Lifecycle: string(a.Lifecycle), DormantReason: a.DormantReason,
		Created: a.Created, LastWake: a.LastWake, NextWake: a.NextWake,
		Failures: a.Failures, Wakes: a.Wakes, Template: a.Template, PendingChanges: a.PendingChanges, Language: a.Language,
	}
}

// Agents are as as the protocol sends them.
func Agents(as []task.Agent) []protocol.Agent { return list(as, Agent) }

// WakeState is w as the protocol sends it.
func WakeState(w task.WakeState) protocol.WakeState {
	return protocol.WakeState{Queued: w.Queued, Running: w.Running, Skipped: w.Skipped}
}

// AgentCounts is c as the protocol sends it.
func AgentCounts(c task.Counts) protocol.AgentCounts {
	return protocol.AgentCounts{
		Active: c.Active, Dormant: c.Dormant, Queued: c.Queued, Running: c.Running, Routing: c.Routing,
		WaitingForModel: c.WaitingForModel, TokensToday: c.TokensToday, DailyTokenBudget: c.DailyTokenBudget, BudgetSpent: c.BudgetSpent,
	}
}

// Activity is a as the protocol sends it.
func Activity(a task.Activity) protocol.Activity {
	return protocol.Activity{Runs: list(a.Runs, run), Messages: list(a.Messages, message), ToolCalls: list(a.ToolCalls, toolCall)}
}

func run(r task.Run) protocol.Run {
	return protocol.Run{
		ID: r.ID, Agent: r.Agent, RunKey: r.RunKey, Reason: r.Reason, Template: r.Template, Model: r.Model,
		Status: r.Status, Detail: r.Detail, FullContext: r.FullContext, Attempts: r.Attempts, Turns: r.Turns,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, Started: r.Started, Finished: r.Finished,
	}
}

func message(m task.Message) protocol.Message {
	return protocol.Message{
		ID: m.ID, Run: m.Run, Role: m.Role, Content: m.Content,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Created: m.Created,
	}
}

func toolCall(c task.ToolCall) protocol.ToolCall {
	return protocol.ToolCall{
		OperationID: c.OperationID, Run: c.Run, Tool: c.Tool, Args: c.Args,
		Deferred: c.Deferred, Status: c.Status, Result: c.Result, Created: c.Created,
	}
}

// Report is r as the protocol sends it.
func Report(r task.Report) protocol.Report {
	return protocol.Report{
		Path: r.Path, Task: r.Task, TLDR: r.TLDR, Content: r.Content, Updated: r.Updated,
		GeneratedBy: r.GeneratedBy, Template: r.Template, Wake: r.Wake, Language: r.Language,
		FailedRun: r.FailedRun, FailedWhy: r.FailedWhy,
	}
}

// ReportUpdated is margin/reportUpdated's params.
func ReportUpdated(r task.ReportUpdated) protocol.ReportUpdated {
	return protocol.ReportUpdated{Task: r.Task, Path: r.Path, TLDR: r.TLDR}
}

// AgentStatus is margin/agentStatus's params.
func AgentStatus(s task.AgentStatus) protocol.AgentStatus {
	return protocol.AgentStatus{ID: s.ID, Task: s.Task, Lifecycle: string(s.Lifecycle), Failures: s.Failures, NextWake: s.NextWake, Reason: s.Reason}
}
