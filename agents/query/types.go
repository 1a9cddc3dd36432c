package query

import (
	"strings"
	"time"
)

// InputType is the Router's classification of an input.
type InputType string

const (
	InputLog        InputType = "log"
	InputQuery      InputType = "query"
	InputBoth       InputType = "both"
	InputCorrection InputType = "correction"
)

// parseInputType folds a model's spelling; anything unknown is a LOG, the
// seed's rule for ambiguous input (§7.6), because logging loses nothing.
func parseInputType(s string) InputType {
	switch t := InputType(strings.ToLower(strings.TrimSpace(s))); t {
	case InputLog, InputQuery, InputBoth, InputCorrection:
		return t
	}
	return InputLog
}

// QueryType is the Planner's classification of a question.
type QueryType string

const (
	QuerySimple         QueryType = "simple"
	QueryInsight        QueryType = "insight"
	QueryRecommendation QueryType = "recommendation"
	QueryComparison     QueryType = "comparison"
)

func parseQueryType(s string) QueryType {
	switch t := QueryType(strings.ToLower(strings.TrimSpace(s))); t {
	case QuerySimple, QueryInsight, QueryRecommendation, QueryComparison:
		return t
	}
	return QueryInsight
}

// Status is the outcome of a query as SPEC §6 names it.
type Status string

const (
	StatusAnswered      Status = "answered"
	StatusClarification Status = "needs_clarification"
	StatusPartial       Status = "partial"
	StatusDegraded      Status = "degraded"
	StatusLogged        Status = "logged"
)

// Entry is one retrieved section of the vault: a daily entry, or a heading
// section of another note. Path and Heading are what a citation points at.
type Entry struct {
	Path       string `json:"path"`
	Heading    string `json:"heading"`
	Line       int    `json:"line"`
	Date       string `json:"date,omitempty"`
	Correction bool   `json:"correction,omitempty"`
	Text       string `json:"text"`
	// Parsed is the structured data stored for a logged entry, by domain.
	Parsed map[string]any `json:"parsed,omitempty"`
	// Rank is the search's relevance (higher is better; summed over the
	// keywords that found it), 0 for an entry listed by date or tag.
	Rank float64 `json:"-"`
}

// Link is the entry's citation as the user writes it in Obsidian.
func (e Entry) Link() string {
	target := strings.TrimSuffix(e.Path, ".md")
	if e.Heading != "" {
		target += "#" + e.Heading
	}
	return "[[" + target + "]]"
}

func (e Entry) key() string { return e.Path + "#" + e.Heading }

// Citation points at a real entry the answer rests on.
type Citation struct {
	Path    string `json:"path"`
	Heading string `json:"heading"`
	Line    int    `json:"line"`
	Link    string `json:"link"`
}

// Question is a clarification question; ID is what query/reply answers.
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
	// Uncertain lists fields the Parser was unsure of or that were dropped
	// because the text did not support them.
	Uncertain []string `json:"uncertain,omitempty"`
	// Corrects is the entry a correction updates, as [[path#heading]].
	Corrects string `json:"corrects,omitempty"`
	// Note says something the user should know, e.g. that it was stored unparsed.
	Note string `json:"note,omitempty"`
}

// Result is the outcome of query/ask and query/reply (SPEC §6).
type Result struct {
	SessionID  string     `json:"sessionId"`
	Type       InputType  `json:"type"`
	Status     Status     `json:"status"`
	Answer     string     `json:"answer"`
	Citations  []Citation `json:"citations"`
	Confidence string     `json:"confidence"`
	Gaps       []string   `json:"gaps"`
	Questions  []Question `json:"questions"`
	Logged     *Logged    `json:"logged,omitempty"`
	// Truncated says retrieval found more than query.max_entries entries
	// (or more text than fits the prompt) and the answer saw only part.
	Truncated bool `json:"truncated,omitempty"`
	// Transitions is the state machine's path through this request.
	Transitions []Transition `json:"transitions"`
}

// Transition is one step of the state machine, kept for inspection.
type Transition struct {
	From State     `json:"from"`
	To   State     `json:"to"`
	Why  string    `json:"why"`
	At   time.Time `json:"at"`
}
