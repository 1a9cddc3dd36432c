package wire

import (
	"github.com/margin-md/margin/agents/review"
	"github.com/margin-md/margin/server/protocol"
)

// Review is n as the protocol sends it.
func Review(n review.Note) protocol.Review {
	r := n.Run
	return protocol.Review{
		Name: r.Name, Path: r.Note, Date: r.Date, Run: r.ID, Due: r.Due, From: r.From, To: r.To, Started: r.Started, Finished: r.Finished,
		Status: r.Status, GeneratedBy: r.GeneratedBy, Template: r.Template, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens,
		Detail: r.Detail, Content: n.Content,
	}
}
