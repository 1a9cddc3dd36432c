package wire

import (
	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/server/protocol"
)

// Answer is r as the protocol sends it.
func Answer(r query.Result) protocol.Answer {
	a := protocol.Answer{
		SessionID: r.SessionID, Type: string(r.Type), Status: string(r.Status), Answer: r.Answer,
		Citations: list(r.Citations, citation), Confidence: r.Confidence, Gaps: r.Gaps,
		Questions: list(r.Questions, question), Truncated: r.Truncated, KeywordOnly: r.KeywordOnly,
		Transitions: list(r.Transitions, transition),
	}
	if l := r.Logged; l != nil {
		a.Logged = &protocol.Logged{Path: l.Path, Heading: l.Heading, Parsed: l.Parsed, Uncertain: l.Uncertain, Corrects: l.Corrects, Note: l.Note}
	}
	return a
}

// LogResult is log/append's result for r: where the entry went, what was
// parsed of it (uncertain is never null), and the answer when the input
// asked a question too.
func LogResult(r query.Result) protocol.LogResult {
	out := protocol.LogResult{Type: string(r.Type), Uncertain: []string{}}
	if l := r.Logged; l != nil {
		out.Path, out.Heading, out.Parsed, out.Corrects, out.Note = l.Path, l.Heading, l.Parsed, l.Corrects, l.Note
		if l.Uncertain != nil {
			out.Uncertain = l.Uncertain
		}
	}
	if r.Type == query.InputBoth {
		out.Answer = new(Answer(r))
	}
	return out
}

func citation(c query.Citation) protocol.Citation {
	return protocol.Citation{Path: c.Path, Heading: c.Heading, Line: c.Line, Link: c.Link}
}

func question(q query.Question) protocol.Question {
	return protocol.Question{ID: q.ID, Question: q.Question, Options: q.Options, Gap: q.Gap}
}

func transition(t query.Transition) protocol.Transition {
	return protocol.Transition{From: string(t.From), To: string(t.To), Why: t.Why, At: t.At}
}
