package protocol

import "github.com/margin-md/margin/agents/query"

// AskParams are query/ask's params.
type AskParams struct {
	Text string `json:"text"`
}

// Answer is the result of query/ask and query/reply.
type Answer = query.Result

// Citation points at a note an answer rests on.
type Citation = query.Citation

// Question is a clarification question; its id is what query/reply
// answers.
type Question = query.Question

// ReplyParams are query/reply's params.
type ReplyParams struct {
	SessionID string            `json:"sessionId"`
	Answers   map[string]string `json:"answers"` // by question id
	Decline   bool              `json:"decline,omitempty"`
}

// LogParams are log/append's params.
type LogParams struct {
	Text string `json:"text"`
	// Time is when it happened: RFC 3339, or YYYY-MM-DDTHH:MM in local time.
	Time string `json:"time,omitempty"`
}

// LogResult is log/append's result.
type LogResult struct {
	Type    query.InputType `json:"type"`
	Path    string          `json:"path"`
	Heading string          `json:"heading"`
	Parsed  map[string]any  `json:"parsed"`
	// Uncertain lists fields the parser was unsure of or dropped.
	Uncertain []string `json:"uncertain"`
	Corrects  string   `json:"corrects,omitempty"`
	Note      string   `json:"note,omitempty"`
	// Answer is the answer to the question that came with the log (BOTH).
	Answer *Answer `json:"answer,omitempty"`
}

// ContextResult is context/get's result: the global context note.
type ContextResult struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}
