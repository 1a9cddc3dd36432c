package protocol

import (
	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
)

// ReportUpdated: an agent wrote its task's report.
type ReportUpdated = task.ReportUpdated

// ChangeSetCreated: a change set waits for a person.
type ChangeSetCreated = changes.SetCreated

// ChangeApplied: an item was decided, and a confirmed one applied.
type ChangeApplied = changes.ItemDecided

// AgentStatus: an agent's lifecycle changed (dormant, failing, back).
type AgentStatus = task.AgentStatus

// IndexStatus: a scan or rescan of the vault ended.
type IndexStatus = vault.IndexEvent

// TemplateProblem: a hand edit of an active template file cannot be used.
type TemplateProblem = templates.TemplateProblem
