package query

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/llm"
)

// Agent roles, as config.yaml's llm.agents names them (their tier lives there).
const (
	roleRouter      = "router"
	rolePlanner     = "planner"
	roleAnalyzer    = "analyzer"
	roleSynthesizer = "synthesizer"
	roleEvaluator   = "evaluator"
	roleClarifier   = "clarifier"
	roleParser      = "parser"
	roleObserver    = "observer"
)

// The agents' outputs. Field order is generation order (llm.Structured keeps
// it in the schema), so a field that must be decided after the evidence comes
// after it. jsonschema tags are the field descriptions the model sees.

// Routing is the Router's output (seed 003 §11.2).
type Routing struct {
	InputType                InputType `json:"input_type"`
	Confidence               float64   `json:"confidence" jsonschema:"0 to 1" llm:"unit"`
	SelectedDomains          []string  `json:"selected_domains" jsonschema:"names of the relevant domains, exactly as listed" llm:"word"`
	DomainSelectionReasoning string    `json:"domain_selection_reasoning"`
	LogPortion               string    `json:"log_portion" jsonschema:"for both: the part that logs something; else empty"`
	QueryPortion             string    `json:"query_portion" jsonschema:"for both: the question; else empty"`
	CorrectionTarget         string    `json:"correction_target" jsonschema:"for correction: what is being corrected; else empty" llm:"line"`
	Reasoning                string    `json:"reasoning"`
}

// Instruction is one retrieval the Retriever executes without a model.
type Instruction struct {
	Purpose  string   `json:"purpose" jsonschema:"what evidence this looks for" llm:"line"`
	From     string   `json:"from" jsonschema:"first day YYYY-MM-DD, or empty" llm:"day"`
	To       string   `json:"to" jsonschema:"last day YYYY-MM-DD, or empty" llm:"day"`
	Keywords []string `json:"keywords" jsonschema:"words or short phrases, each searched on its own; empty lists every entry in the date range" llm:"word"`
	Glob     string   `json:"glob" jsonschema:"vault path glob such as Reference/**, or empty" llm:"word"`
	Tags     []string `json:"tags" jsonschema:"tags the notes must carry, or empty" llm:"word"`
}

// SubQuery is one part of a decomposed question.
type SubQuery struct {
	ID       int    `json:"id"`
	Question string `json:"question" llm:"line"`
}

// Plan is the Planner's output (seed 003 §11.3).
type Plan struct {
	QueryType              QueryType     `json:"query_type"`
	SubQueries             []SubQuery    `json:"sub_queries"`
	ExecutionStrategy      Strategy      `json:"execution_strategy"`
	RetrievalInstructions  []Instruction `json:"retrieval_instructions"`
	DomainExpansionRequest []string      `json:"domain_expansion_request" jsonschema:"available domains to load, or empty" llm:"word"`
	ClarifyQuestions       []string      `json:"clarify_questions" jsonschema:"only for clarify" llm:"line"`
	Reasoning              string        `json:"reasoning"`
	NextAction             NextAction    `json:"next_action"`
}

// Finding is one claim of the analysis with the entries it rests on.
type Finding struct {
	Claim      string     `json:"claim" llm:"line"`
	Evidence   []string   `json:"evidence" jsonschema:"entry links exactly as given" llm:"line"`
	Confidence Confidence `json:"confidence"`
}

// Gap is missing information (seed 003 §11.1).
type Gap struct {
	Description             string   `json:"description" llm:"line"`
	GapType                 GapType  `json:"gap_type"`
	Severity                Severity `json:"severity"`
	OutsideCurrentExpertise bool     `json:"outside_current_expertise"`
	SuspectedDomain         string   `json:"suspected_domain" llm:"word"`
}

func (g Gap) critical() bool { return g.Severity == severityCritical }

// Analysis is the Analyzer's output (seed 003 §11.5). Verdict is the last
// field, so the model writes it after the evidence and gaps.
type Analysis struct {
	QueryIntent        string      `json:"query_intent" llm:"line"`
	Findings           []Finding   `json:"findings"`
	PatternsIdentified []string    `json:"patterns_identified" llm:"line"`
	GapsIdentified     []Gap       `json:"gaps_identified"`
	VerdictReasoning   string      `json:"verdict_reasoning"`
	Verdict            Sufficiency `json:"verdict"`
}

func (a Analysis) sufficient() bool {
	return a.Verdict == sufficient
}

// Draft is the Synthesizer's output (seed 003 §11.6).
type Draft struct {
	Response      string     `json:"response"`
	KeyPoints     []string   `json:"key_points" llm:"line"`
	EvidenceCited []string   `json:"evidence_cited" jsonschema:"the entry links the response cites" llm:"line"`
	GapsDisclosed []string   `json:"gaps_disclosed" llm:"line"`
	Confidence    Confidence `json:"confidence"`
}

// Dimension is the evaluation of one quality dimension.
type Dimension struct {
	Dimension DimensionName `json:"dimension"`
	Reasoning string        `json:"reasoning"`
	Issues    []string      `json:"issues" llm:"line"`
	Verdict   PassFail      `json:"verdict"`
}

// Feedback guides a retry after a failed evaluation.
type Feedback struct {
	Issue         string `json:"issue" llm:"line"`
	Suggestion    string `json:"suggestion" llm:"line"`
	AffectedClaim string `json:"affected_claim" llm:"line"`
}

// Evaluation is the Evaluator's output (seed 003 §11.7).
type Evaluation struct {
	Dimensions     []Dimension    `json:"dimensions"`
	Feedback       []Feedback     `json:"feedback"`
	Recommendation Recommendation `json:"recommendation"`
	OverallVerdict PassFail       `json:"overall_verdict"`
}

// passed applies the seed's rule in code rather than trusting the model's
// arithmetic: any failed dimension fails the whole.
func (ev Evaluation) passed() bool {
	for _, d := range ev.Dimensions {
		if d.Verdict == fail {
			return false
		}
	}
	return ev.OverallVerdict == "pass"
}

// ClarifyQuestion is one question the Clarifier asks.
type ClarifyQuestion struct {
	Question     string   `json:"question" llm:"line"`
	GapAddressed string   `json:"gap_addressed" llm:"line"`
	Options      []string `json:"options" jsonschema:"choices, or empty for a free answer" llm:"line"`
}

// Clarification is the Clarifier's output (seed 003 §11.8).
type Clarification struct {
	ContextExplanation string            `json:"context_explanation"`
	Questions          []ClarifyQuestion `json:"questions"`
	FallbackAction     string            `json:"fallback_action"`
}

// DomainData is the data extracted for one domain.
type DomainData struct {
	Domain string         `json:"domain" llm:"word"`
	Data   map[string]any `json:"data"`
}

// ParsedEntry is the Parser's output (seed 003 §11.9). The raw text is not
// asked back: margin keeps it verbatim itself.
type ParsedEntry struct {
	Tags               []string     `json:"tags" llm:"word"`
	DomainData         []DomainData `json:"domain_data"`
	ExtractionNotes    []string     `json:"extraction_notes" llm:"line"`
	UncertainFields    []string     `json:"uncertain_fields" llm:"word"`
	Confidence         float64      `json:"confidence" jsonschema:"0 to 1" llm:"unit"`
	Significant        bool         `json:"significant"`
	SignificanceReason string       `json:"significance_reason" llm:"line"`
	TargetEntry        string       `json:"target_entry" jsonschema:"correction mode: the corrected entry's link; else empty" llm:"line"`
	CorrectionDelta    []DomainData `json:"correction_delta" jsonschema:"correction mode: the corrected fields only"`
}

// ContextUpdate is one change to the global context.
type ContextUpdate struct {
	Category   Category  `json:"category"`
	Key        string    `json:"key" llm:"word"`
	Value      string    `json:"value" llm:"line"`
	Confidence Certainty `json:"confidence"`
	Source     string    `json:"source" llm:"line"`
}

// Observation is the Observer's output (seed 003 §11.10).
type Observation struct {
	InsightsCaptured []string        `json:"insights_captured" llm:"line"`
	Updates          []ContextUpdate `json:"updates"`
	ShouldUpdate     bool            `json:"should_update"`
}

// ask runs one agent: a stable system prompt, one user message, a reply of
// type T. The session counts the call, and the ledger keeps it under the
// session.
func ask[T any](ctx context.Context, e *Engine, s *Session, role string, system []llm.PromptPart, user string) (T, error) {
	s.Calls++
	ctx = ledger.WithScope(ctx, "query:"+s.ID)
	out, resp, err := llm.Structured[T](ctx, e.client, llm.Request{
		Role:     role,
		System:   llm.SystemPrompt(system...),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: user}},
	})
	s.PromptTokens += resp.Usage.PromptTokens
	if err != nil {
		return out, fmt.Errorf("%s: %w", role, err)
	}
	if resp.Model != "" {
		if s.models == nil {
			s.models = map[string]string{}
		}
		s.models[role] = resp.Model
	}
	return out, nil
}

func (e *Engine) route(ctx context.Context, s *Session, text string) (Routing, error) {
	var b strings.Builder
	b.WriteString("Available domains:\n")
	if len(s.domains) == 0 {
		b.WriteString("(none)\n")
	}
	for _, d := range s.domains {
		if d.Base {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s\n", d.Name, d.Description)
	}
	fmt.Fprintf(&b, "\nInput (%s):\n%s", dataFence, fence(text))
	return ask[Routing](ctx, e, s, roleRouter, []llm.PromptPart{{Text: routerPrompt}}, b.String())
}

func (e *Engine) plan(ctx context.Context, s *Session, a Active) (Plan, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Today: %s (%s)\nQuestion: %s\n", s.Today, s.weekday(), s.Query)
	if s.QueryType != "" {
		fmt.Fprintf(&b, "Query type so far: %s\n", s.QueryType)
	}
	writePart(&b, s, "Plan for")
	writeAvailable(&b, a)
	if len(s.Attempts) > 0 {
		b.WriteString("\nPrevious retrieval attempts:\n")
		for _, at := range s.Attempts {
			fmt.Fprintf(&b, "- attempt %d (%s): %s → %d entries\n", at.Attempt, at.Strategy, at.Summary, at.Found)
		}
	}
	if s.Analysis != nil && len(s.Analysis.GapsIdentified) > 0 {
		b.WriteString("\nGaps from the analysis:\n")
		for _, g := range s.Analysis.GapsIdentified {
			fmt.Fprintf(&b, "- %s (%s, %s)\n", g.Description, g.GapType, g.Severity)
		}
	}
	if len(s.Feedback) > 0 {
		b.WriteString("\nEvaluation feedback on the last answer:\n")
		for _, f := range s.Feedback {
			fmt.Fprintf(&b, "- %s — %s\n", f.Issue, f.Suggestion)
		}
	}
	if gc := s.context; gc != "" {
		fmt.Fprintf(&b, "\nGlobal context (%s):\n%s\n", dataFence, fence(gc))
	}
	return ask[Plan](ctx, e, s, rolePlanner, []llm.PromptPart{
		{Text: plannerPrompt},
		{Heading: "Domain expertise", Text: a.Expertise},
		{Heading: "Vocabulary", Text: vocabularyText(a.Vocabulary)},
	}, b.String())
}

func (e *Engine) analyze(ctx context.Context, s *Session, a Active) (Analysis, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Today: %s\nQuestion: %s\nQuery type: %s\n", s.Today, s.Query, s.QueryType)
	writePart(&b, s, "Judge")
	fmt.Fprintf(&b, "Loaded domains: %s\n", strings.Join(a.Loaded, ", "))
	writeAvailable(&b, a)
	fmt.Fprintf(&b, "\nRetrieved entries (%s):\n%s\n", dataFence, fence(e.entriesText(s)))
	if s.Truncated {
		b.WriteString("(More entries matched than could be shown.)\n")
	}
	writeAnswers(&b, s)
	if gc := s.context; gc != "" {
		fmt.Fprintf(&b, "\nGlobal context (%s):\n%s\n", dataFence, fence(gc))
	}
	return ask[Analysis](ctx, e, s, roleAnalyzer, []llm.PromptPart{
		{Text: analyzerPrompt},
		{Heading: "Domain expertise", Text: a.Expertise},
	}, b.String())
}

func (e *Engine) synthesize(ctx context.Context, s *Session, a Active, gaps []string) (Draft, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\nResponse style: %s\n", s.Query, e.opts.ResponseStyle)
	if len(s.Parts) > 0 {
		b.WriteString("\nIts parts, to answer in order, each building on the ones before:\n")
		for i, q := range s.Parts {
			fmt.Fprintf(&b, "%d. %s\n", i+1, q.Question)
		}
	}
	if findings := s.findings(); len(findings) > 0 {
		b.WriteString("\nFindings:\n")
		for _, f := range findings {
			fmt.Fprintf(&b, "- %s [evidence: %s] (%s)\n", f.Claim, strings.Join(f.Evidence, ", "), f.Confidence)
		}
	}
	if s.Analysis != nil {
		if len(s.Analysis.PatternsIdentified) > 0 {
			b.WriteString("\nPatterns:\n")
			for _, p := range s.Analysis.PatternsIdentified {
				fmt.Fprintf(&b, "- %s\n", p)
			}
		}
	}
	writeAnswers(&b, s)
	fmt.Fprintf(&b, "\nEntry links you may cite:\n%s\n", strings.Join(links(s.Entries), "\n"))
	if len(gaps) > 0 {
		b.WriteString("\nThis answer is PARTIAL. Unanswered gaps:\n")
		for _, g := range gaps {
			fmt.Fprintf(&b, "- %s\n", g)
		}
	}
	if len(s.Feedback) > 0 {
		b.WriteString("\nFeedback on the previous draft:\n")
		for _, f := range s.Feedback {
			fmt.Fprintf(&b, "- %s — %s\n", f.Issue, f.Suggestion)
		}
	}
	return ask[Draft](ctx, e, s, roleSynthesizer, []llm.PromptPart{
		{Text: synthesizerPrompt},
		{Heading: "Vocabulary", Text: vocabularyText(a.Vocabulary)},
	}, b.String())
}

func (e *Engine) evaluate(ctx context.Context, s *Session, a Active, d Draft) (Evaluation, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\nAttempt: %d\n\nAnswer to evaluate:\n%s\n", s.Query, s.Loops+1, d.Response)
	if findings := s.findings(); len(findings) > 0 {
		b.WriteString("\nAnalysis findings:\n")
		for _, f := range findings {
			fmt.Fprintf(&b, "- %s [evidence: %s]\n", f.Claim, strings.Join(f.Evidence, ", "))
		}
	}
	fmt.Fprintf(&b, "\nAvailable evidence (%s):\n%s\n", dataFence, fence(e.entriesText(s)))
	writeAnswers(&b, s)
	rules := "- Do not make claims without supporting data."
	if len(a.EvaluationRules) > 0 {
		rules = "- " + strings.Join(a.EvaluationRules, "\n- ")
	}
	return ask[Evaluation](ctx, e, s, roleEvaluator, []llm.PromptPart{
		{Text: evaluatorPrompt},
		{Heading: "Domain rules", Text: rules},
	}, b.String())
}

func (e *Engine) clarify(ctx context.Context, s *Session, a Active, gaps []string) (Clarification, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Question: %s\n\nGaps to address:\n", s.Query)
	for _, g := range gaps {
		fmt.Fprintf(&b, "- %s\n", g)
	}
	if len(s.Attempts) > 0 {
		b.WriteString("\nAlready searched:\n")
		for _, at := range s.Attempts {
			fmt.Fprintf(&b, "- %s → %d entries\n", at.Summary, at.Found)
		}
	}
	if len(s.Asked) > 0 {
		fmt.Fprintf(&b, "\nAlready asked: %s\n", strings.Join(s.Asked, "; "))
	}
	return ask[Clarification](ctx, e, s, roleClarifier, []llm.PromptPart{
		{Text: clarifierPrompt},
		{Heading: "Vocabulary", Text: vocabularyText(a.Vocabulary)},
	}, b.String())
}

func (e *Engine) parse(ctx context.Context, s *Session, a Active, text string, recent []Entry) (ParsedEntry, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Timestamp: %s\n", s.At.Format("2006-01-02 15:04 (Monday)"))
	if len(a.Schemas) == 0 {
		b.WriteString("Domain schemas: none; return no domain_data.\n")
	} else {
		b.WriteString("Domain schemas:\n")
		for _, name := range sortedNames(a.Schemas) {
			fmt.Fprintf(&b, "- %s: %s\n", name, a.Schemas[name])
		}
	}
	if s.Type == InputCorrection {
		fmt.Fprintf(&b, "\nCORRECTION MODE. What is being corrected: %s\n", s.CorrectionTarget)
		fmt.Fprintf(&b, "Recent entries (%s):\n%s\n", dataFence, fence(entriesText(recent)))
	}
	fmt.Fprintf(&b, "\nLog entry (%s):\n%s", dataFence, fence(text))
	return ask[ParsedEntry](ctx, e, s, roleParser, []llm.PromptPart{
		{Text: parserPrompt},
		{Heading: "Vocabulary", Text: vocabularyText(a.Vocabulary)},
	}, b.String())
}

func (e *Engine) observe(ctx context.Context, s *Session, a Active, trigger, current string) (Observation, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Trigger: %s\nToday: %s\n", trigger, s.Today)
	fmt.Fprintf(&b, "\nCurrent global context:\n%s\n", fence(current))
	switch trigger {
	case triggerQuery:
		fmt.Fprintf(&b, "\nQuery: %s\n", s.Query)
		if s.Analysis != nil {
			an, _ := json.Marshal(struct {
				Findings []Finding `json:"findings"`
				Patterns []string  `json:"patterns"`
			}{s.Analysis.Findings, s.Analysis.PatternsIdentified})
			fmt.Fprintf(&b, "Analysis: %s\n", an)
		}
		if s.Draft != nil {
			fmt.Fprintf(&b, "Response: %s\n", s.Draft.Response)
		}
	default:
		fmt.Fprintf(&b, "\nNew entry (%s):\n%s\n", dataFence, fence(s.logText()))
		if s.Logged != nil {
			data, _ := json.Marshal(s.Logged.Parsed)
			fmt.Fprintf(&b, "Parsed: %s\n", data)
			if s.Logged.Corrects != "" {
				fmt.Fprintf(&b, "What was corrected: %s\n", s.Logged.Corrects)
			}
		}
	}
	return ask[Observation](ctx, e, s, roleObserver, []llm.PromptPart{
		{Text: observerPrompt},
		{Heading: "What to track", Text: a.ContextGuidance},
	}, b.String())
}

func writeAvailable(b *strings.Builder, a Active) {
	if len(a.Available) == 0 {
		return
	}
	b.WriteString("Available domains (not loaded):\n")
	for _, d := range a.Available {
		if !d.Base {
			fmt.Fprintf(b, "- %s: %s\n", d.Name, d.Description)
		}
	}
}

func writeAnswers(b *strings.Builder, s *Session) {
	if len(s.Answers) == 0 {
		return
	}
	fmt.Fprintf(b, "\nThe user answered clarification questions (%s):\n", dataFence)
	var lines []string
	for _, q := range s.Questions {
		if ans, ok := s.Answers[q.ID]; ok {
			lines = append(lines, fmt.Sprintf("Q: %s\nA: %s", q.Question, ans))
		}
	}
	b.WriteString(fence(strings.Join(lines, "\n")) + "\n")
}

func vocabularyText(v map[string]string) string {
	if len(v) == 0 {
		return ""
	}
	var lines []string
	for _, k := range sortedNames(v) {
		lines = append(lines, fmt.Sprintf("- %s → %s", k, v[k]))
	}
	return strings.Join(lines, "\n")
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func links(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, en := range entries {
		out[i] = en.Link()
	}
	return out
}

// writePart tells the planner or the analyzer which part of a question
// with dependent parts is under way, to do for it what verb ("Plan for")
// says, and what the earlier parts found.
func writePart(b *strings.Builder, s *Session, verb string) {
	if len(s.Parts) == 0 {
		return
	}
	fmt.Fprintf(b, "\nThe question's parts build on each other and are worked through in order. %s part %d of %d now: %s\n",
		verb, s.Part+1, len(s.Parts), s.Parts[s.Part].Question)
	if len(s.Earlier) > 0 {
		b.WriteString("Findings of the earlier parts:\n")
		for _, f := range s.Earlier {
			fmt.Fprintf(b, "- %s [evidence: %s]\n", f.Claim, strings.Join(f.Evidence, ", "))
		}
	}
	b.WriteString("\n")
}
