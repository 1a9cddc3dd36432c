package protocol

import "time"

// ReportUpdated: an agent wrote its task's report.
type ReportUpdated struct {
	Task string `json:"task"`
	Path string `json:"path"`
	TLDR string `json:"tldr"`
}

// ChangeSetCreated: a change set waits for a person.
type ChangeSetCreated struct {
	ID    string       `json:"id"`
	Task  string       `json:"task"`
	Path  string       `json:"path"`
	Items []ChangeItem `json:"items"`
}

// ChangeApplied: an item was decided, and a confirmed one applied.
type ChangeApplied struct {
	ID     string `json:"id"`
	Item   string `json:"item"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// AgentStatus: an agent's lifecycle changed (dormant, failing, back).
type AgentStatus struct {
	ID        string    `json:"id"`
	Task      string    `json:"task"`
	Lifecycle string    `json:"lifecycle"`
	Failures  int       `json:"failures"`
	NextWake  time.Time `json:"nextWake"`
	Reason    string    `json:"reason,omitempty"`
}

// IndexStatus: a scan or rescan of the vault ended.
type IndexStatus struct {
	Kind   string      `json:"kind"` // scan | rescan
	Reason string      `json:"reason,omitempty"`
	Result ScanResult  `json:"result"`
	Status VaultStatus `json:"status"`
}

// TemplateProblem: a hand edit of an active template file cannot be used.
type TemplateProblem struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Problem string `json:"problem"`
	Active  int    `json:"active"` // the version that stays active
}
