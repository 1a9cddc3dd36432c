package protocol

import "github.com/margin-md/margin/agents/task"

// Agent is one task agent as stored.
type Agent = task.Agent

// AgentsListParams are agents/list's params.
type AgentsListParams struct {
	Lifecycle string `json:"lifecycle,omitempty"` // active | dormant | destroyed; all when empty
}

// AgentsListResult is agents/list's result.
type AgentsListResult struct {
	Agents []Agent `json:"agents"`
}

// AgentRef names an agent by id or by its task's path (agents/get), or by
// the task's name or title (reports/get).
type AgentRef struct {
	ID   string `json:"id,omitempty"`
	Task string `json:"task,omitempty"`
}

// AgentDetail is the result of agents/get, agents/create and
// agents/control: the agent, its queue state and a summary of its report.
type AgentDetail struct {
	Agent
	State  WakeState      `json:"state"`
	Report *ReportSummary `json:"report"`
}

// WakeState is what the runtime knows of an agent beyond its record.
type WakeState = task.WakeState

// ReportSummary is what agents/get shows of a task's report.
type ReportSummary struct {
	Path        string `json:"path"`
	TLDR        string `json:"tldr"`
	Updated     string `json:"updated"` // RFC 3339; empty when the report says no time
	GeneratedBy string `json:"generatedBy"`
	Template    string `json:"template"`
}

// AgentsCreateParams are agents/create's params.
type AgentsCreateParams struct {
	Task string `json:"task"`
}

// AgentsControlParams are agents/control's params.
type AgentsControlParams struct {
	ID     string `json:"id"`
	Action string `json:"action"` // pause | resume | destroy | wake
}

// AgentsActivityParams are agents/activity's params.
type AgentsActivityParams struct {
	ID    string `json:"id"`
	Limit int    `json:"limit,omitempty"` // 50 when absent
}

// Activity is an agent's recent history, newest first.
type Activity = task.Activity

// Report is a task's report file as read back (reports/get).
type Report = task.Report
