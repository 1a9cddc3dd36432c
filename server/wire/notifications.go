package wire

import (
	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
)

// Notification is the params of an agents' notification as the protocol
// sends them (protocol.Notifications); false for a value the protocol has
// no notification for. The agents hand the server their own types, as
// they do not know the protocol.
func Notification(params any) (any, bool) {
	switch p := params.(type) {
	case task.ReportUpdated:
		return ReportUpdated(p), true
	case changes.SetCreated:
		return ChangeSetCreated(p), true
	case changes.ItemDecided:
		return ChangeApplied(p), true
	case task.AgentStatus:
		return AgentStatus(p), true
	case templates.TemplateProblem:
		return TemplateProblem(p), true
	}
	return nil, false
}
