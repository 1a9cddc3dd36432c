package protocol

import "time"

// AskParams are query/ask's params.
type AskParams struct {
	Text string `json:"text"`
}

// Answer is the result of query/ask and query/reply.
type Answer struct {
	SessionID  string     `json:"sessionId"`
	Type       string     `json:"type"`   // log | query | both | correction
	Status     string     `json:"status"` // answered | needs_clarification | partial | degraded | logged
	Answer     string     `json:"answer"`
	Citations  []Citation `json:"citations"`
	Confidence string     `json:"confidence"`
	Gaps       []string   `json:"gaps"`
	Questions  []Question `json:"questions"`
	Logged     *Logged    `json:"logged,omitempty"`
	// Truncated says retrieval found more than query.max_entries entries
	// (or more text than fits the prompt) and the answer saw only part.
	Truncated bool `json:"truncated,omitempty"`
	// KeywordOnly says why the question's notes were found by their words
	// alone, not by meaning too: "no embedding model", "no vectors yet",
	// "embedding model unavailable". Absent when they were.
	KeywordOnly string `json:"keywordOnly,omitempty"`
	// Transitions is the query flow's path through this request.
	Transitions []Transition `json:"transitions"`
}

// Citation points at a note an answer rests on.
type Citation struct {
	Path    string `json:"path"`
	Heading string `json:"heading"`
	Line    int    `json:"line"`
	Link    string `json:"link"` // [[path#heading]]
}

// Question is a clarification question; its id is what query/reply
// answers.
type Question struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Gap      string   `json:"gap,omitempty"`
}

// Logged says where a logged input went.
type Logged struct {
	Path    string `json:"path"`
	Heading string `json:"heading"`
	// Parsed is the data extracted per domain; nil when no model was
	// reachable and the raw text was stored unparsed.
	Parsed map[string]any `json:"parsed"`
	// Uncertain lists fields the parser was unsure of or dropped.
	Uncertain []string `json:"uncertain,omitempty"`
	// Corrects is the entry a correction updates, as [[path#heading]].
	Corrects string `json:"corrects,omitempty"`
	// Note says something the person should know, e.g. that it was
	// stored unparsed.
	Note string `json:"note,omitempty"`
}

// Transition is one step of the query flow: from a state to the next.
type Transition struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	Why  string    `json:"why"`
	At   time.Time `json:"at"`
}

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
	Type    string         `json:"type"` // log | query | both | correction
	Path    string         `json:"path"`
	Heading string         `json:"heading"`
	Parsed  map[string]any `json:"parsed"`
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
