package query

import (
	"strings"
	"time"
)

// The closed sets of the agents' outputs. Each is an llm.Enum, so its
// schema lists its words and the model cannot answer anything else: a
// reply outside the set is a parse retry, never a guess (SPEC §4.1).

// InputType is the Router's classification of an input.
type InputType string

const (
	InputLog        InputType = "log"
	InputQuery      InputType = "query"
	InputBoth       InputType = "both"
	InputCorrection InputType = "correction"
)

func (InputType) EnumValues() []string { return []string{"log", "query", "both", "correction"} }

// QueryType is the Planner's classification of a question.
type QueryType string

const (
	QuerySimple         QueryType = "simple"
	QueryInsight        QueryType = "insight"
	QueryRecommendation QueryType = "recommendation"
	QueryComparison     QueryType = "comparison"
)

func (QueryType) EnumValues() []string {
	return []string{"simple", "insight", "recommendation", "comparison"}
}

// Strategy is how the parts of a decomposed question relate.
type Strategy string

const strategyDependent Strategy = "dependent"

func (Strategy) EnumValues() []string { return []string{"independent", "dependent", "coupled"} }

// NextAction is what the Planner asks for next.
type NextAction string

const (
	actionClarify    NextAction = "clarify"
	actionSynthesize NextAction = "synthesize"
)

func (NextAction) EnumValues() []string {
	return []string{"retrieve", "expand_domain", "clarify", "synthesize"}
}

// GapType is the kind of a gap (seed 003 §11.1).
type GapType string

func (GapType) EnumValues() []string {
	return []string{"temporal", "topical", "contextual", "subjective", "clarification"}
}

// Severity says whether a gap blocks an answer.
type Severity string

const severityCritical Severity = "critical"

func (Severity) EnumValues() []string { return []string{"critical", "nice_to_have"} }

// Sufficiency is the Analyzer's verdict.
type Sufficiency string

const sufficient Sufficiency = "sufficient"

func (Sufficiency) EnumValues() []string { return []string{"sufficient", "insufficient"} }

// PassFail is the Evaluator's verdict on a dimension or the whole.
type PassFail string

const fail PassFail = "fail"

func (PassFail) EnumValues() []string { return []string{"pass", "fail"} }

// DimensionName names a quality dimension the Evaluator judges.
type DimensionName string

func (DimensionName) EnumValues() []string {
	return []string{"accuracy", "relevance", "safety", "completeness"}
}

// Recommendation is what the Evaluator advises after its verdict.
type Recommendation string

func (Recommendation) EnumValues() []string {
	return []string{"accept", "retry_with_feedback", "retry_with_more_context", "give_partial"}
}

// Confidence is how sure a finding or an answer is.
type Confidence string

func (Confidence) EnumValues() []string { return []string{"high", "medium", "low"} }

// Category is the kind of a global-context item.
type Category string

func (Category) EnumValues() []string { return []string{"preference", "pattern", "fact", "insight"} }

// Certainty is how sure the Observer is of a global-context item.
type Certainty string

func (Certainty) EnumValues() []string { return []string{"certain", "likely", "tentative"} }

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
	// Properties are the note's frontmatter fields, "key: value" a line,
	// on the entry that quotes a note's first section: a note made of
	// properties alone (a movie and its rating) has no other text.
	Properties string `json:"properties,omitempty"`
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
	// KeywordOnly says why the question's notes were found by their words
	// alone, not by meaning too (no embedding model, no vectors yet, the
	// model unavailable); "" when they were, or when margin has no
	// search by meaning to offer.
	KeywordOnly string `json:"keywordOnly,omitempty"`
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
