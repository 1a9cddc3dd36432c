package protocol

import (
	"encoding/json"
	"time"
)

// Agent is one task agent as stored.
type Agent struct {
	ID             string    `json:"id"`
	Task           string    `json:"task"`
	OutputName     string    `json:"outputName"` // names its report, journal and change sets
	Lifecycle      string    `json:"lifecycle"`  // active | dormant | destroyed
	DormantReason  string    `json:"dormantReason,omitempty"`
	Created        time.Time `json:"created"`
	LastWake       time.Time `json:"lastWake"`
	NextWake       time.Time `json:"nextWake"`
	Failures       int       `json:"failures"`
	Wakes          int       `json:"wakes"`
	Template       string    `json:"template"`
	PendingChanges int       `json:"pendingChanges"`
	// Language is the language of the task's notes as the agent found
	// it, "" when it has not.
	Language string `json:"language,omitempty"`
}

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
type WakeState struct {
	Queued  bool `json:"queued"`
	Running bool `json:"running"`
	// Skipped counts wakes since margin started that were not run because
	// their run key had completed, or had written the offline report while
	// there is no model to call.
	Skipped int `json:"skipped"`
}

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
type Activity struct {
	Runs      []Run      `json:"runs"`
	Messages  []Message  `json:"messages"`
	ToolCalls []ToolCall `json:"toolCalls"`
}

// Run is one wake of an agent.
type Run struct {
	ID               int64     `json:"id"`
	Agent            string    `json:"agent"`
	RunKey           string    `json:"runKey"`
	Reason           string    `json:"reason"`
	Template         string    `json:"template"`        // name@version; "" for runs from before margin recorded it
	Model            string    `json:"model,omitempty"` // as the provider named it; "" when no model answered
	Status           string    `json:"status"`
	Detail           string    `json:"detail,omitempty"`
	FullContext      bool      `json:"fullContext"`
	Attempts         int       `json:"attempts"`
	Turns            int       `json:"turns"`
	PromptTokens     int       `json:"promptTokens"`
	CompletionTokens int       `json:"completionTokens"`
	Started          time.Time `json:"started"`
	Finished         time.Time `json:"finished"`
}

// Message is one turn of a wake's conversation.
type Message struct {
	ID         int64           `json:"id"`
	Run        int64           `json:"run"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolCalls  json.RawMessage `json:"toolCalls,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Created    time.Time       `json:"created"`
}

// ToolCall is one tool call of a wake, with its effect.
type ToolCall struct {
	OperationID string          `json:"operationId"`
	Run         int64           `json:"run"`
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Deferred    bool            `json:"deferred"`
	Status      string          `json:"status"`
	Result      string          `json:"result"`
	Created     time.Time       `json:"created"`
}

// Report is a task's report file as read back (reports/get).
type Report struct {
	Path        string    `json:"path"`
	Task        string    `json:"task"`
	TLDR        string    `json:"tldr"`
	Content     string    `json:"content"`
	Updated     time.Time `json:"updated"`
	GeneratedBy string    `json:"generatedBy"`
	Template    string    `json:"template"`
	Wake        int       `json:"wake"`
	Language    string    `json:"language,omitempty"`
	// FailedRun is the latest wake whose model published no usable
	// report, 0 when the report is that wake's own; FailedWhy says why.
	FailedRun int64  `json:"failedRun,omitempty"`
	FailedWhy string `json:"failedWhy,omitempty"`
}
