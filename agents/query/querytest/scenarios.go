package querytest

// Builders of agent replies, as the JSON each agent's schema asks for.

// Route is a Router reply.
func Route(inputType string, domains ...string) map[string]any {
	return map[string]any{
		"input_type": inputType, "confidence": 0.9, "selected_domains": nonNil(domains),
		"domain_selection_reasoning": "matched the descriptions", "log_portion": "", "query_portion": "",
		"correction_target": "", "reasoning": "scripted",
	}
}

// RouteBoth is a Router reply that splits the input.
func RouteBoth(logPart, queryPart string, domains ...string) map[string]any {
	r := Route("both", domains...)
	r["log_portion"], r["query_portion"] = logPart, queryPart
	return r
}

// RouteCorrection is a Router reply for a correction.
func RouteCorrection(target string, domains ...string) map[string]any {
	r := Route("correction", domains...)
	r["correction_target"] = target
	return r
}

// Instr is one retrieval instruction.
func Instr(purpose, from, to string, keywords ...string) map[string]any {
	return map[string]any{"purpose": purpose, "from": from, "to": to, "keywords": nonNil(keywords), "glob": "", "tags": []string{}}
}

// Plan is a Planner reply that retrieves.
func Plan(queryType string, instructions ...map[string]any) map[string]any {
	return map[string]any{
		"query_type": queryType, "sub_queries": []any{}, "execution_strategy": "coupled",
		"retrieval_instructions": nonNilMaps(instructions), "domain_expansion_request": []string{},
		"clarify_questions": []string{}, "reasoning": "scripted", "next_action": "retrieve",
	}
}

// PlanClarify is a Planner reply that asks the user.
func PlanClarify(queryType string, questions ...string) map[string]any {
	p := Plan(queryType)
	p["next_action"], p["clarify_questions"] = "clarify", questions
	return p
}

// PlanParts is a Plan with sub-queries, for a multi-part question.
func PlanParts(queryType, strategy string, parts []string, instructions ...map[string]any) map[string]any {
	p := Plan(queryType, instructions...)
	var subs []any
	for i, q := range parts {
		subs = append(subs, map[string]any{"id": i + 1, "question": q})
	}
	p["sub_queries"], p["execution_strategy"] = subs, strategy
	return p
}

// Finding is one finding of an analysis.
func Finding(claim string, evidence ...string) map[string]any {
	return map[string]any{"claim": claim, "evidence": nonNil(evidence), "confidence": "high"}
}

// Gap is one gap of an analysis.
func Gap(description, gapType string, critical bool) map[string]any {
	sev := "nice_to_have"
	if critical {
		sev = "critical"
	}
	return map[string]any{"description": description, "gap_type": gapType, "severity": sev, "outside_current_expertise": false, "suspected_domain": ""}
}

// Analysis is an Analyzer reply.
func Analysis(sufficient bool, findings []map[string]any, patterns []string, gaps ...map[string]any) map[string]any {
	verdict := "insufficient"
	if sufficient {
		verdict = "sufficient"
	}
	return map[string]any{
		"query_intent": "scripted", "findings": nonNilMaps(findings), "patterns_identified": nonNil(patterns),
		"gaps_identified": nonNilMaps(gaps), "verdict_reasoning": "scripted", "verdict": verdict,
	}
}

// Draft is a Synthesizer reply.
func Draft(response, confidence string, cited ...string) map[string]any {
	return map[string]any{"response": response, "key_points": []string{}, "evidence_cited": nonNil(cited), "gaps_disclosed": []string{}, "confidence": confidence}
}

// Eval is an Evaluator reply.
func Eval(pass bool, feedback ...string) map[string]any {
	v := "fail"
	if pass {
		v = "pass"
	}
	var fb []any
	for _, f := range feedback {
		fb = append(fb, map[string]any{"issue": f, "suggestion": "look further", "affected_claim": ""})
	}
	return map[string]any{
		"dimensions":      []any{map[string]any{"dimension": "accuracy", "reasoning": "scripted", "issues": []string{}, "verdict": v}},
		"feedback":        nonNilAny(fb),
		"recommendation":  map[bool]string{true: "accept", false: "retry_with_more_context"}[pass],
		"overall_verdict": v,
	}
}

// Clarify is a Clarifier reply with one question and its options.
func Clarify(question string, options ...string) map[string]any {
	return map[string]any{
		"context_explanation": "Your notes do not say this.",
		"questions":           []any{map[string]any{"question": question, "gap_addressed": "how stressed you were", "options": nonNil(options)}},
		"fallback_action":     "answer from the notes alone",
	}
}

// Parse is a Parser reply with data for one domain.
func Parse(domain string, data map[string]any, significant bool, uncertain ...string) map[string]any {
	dd := []any{}
	if domain != "" {
		dd = append(dd, map[string]any{"domain": domain, "data": data})
	}
	return map[string]any{
		"tags": []string{}, "domain_data": dd, "extraction_notes": []string{}, "uncertain_fields": nonNil(uncertain),
		"confidence": 0.8, "significant": significant, "significance_reason": "", "target_entry": "", "correction_delta": []any{},
	}
}

// ParseCorrection is a Parser reply in correction mode.
func ParseCorrection(target, domain string, delta map[string]any) map[string]any {
	p := Parse(domain, delta, false)
	p["target_entry"] = target
	p["correction_delta"] = []any{map[string]any{"domain": domain, "data": delta}}
	return p
}

// Observe is an Observer reply with one update.
func Observe(category, key, value, confidence string) map[string]any {
	return map[string]any{
		"insights_captured": []string{value},
		"updates":           []any{map[string]any{"category": category, "key": key, "value": value, "confidence": confidence, "source": "scripted"}},
		"should_update":     true,
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMaps(s []map[string]any) []map[string]any {
	if s == nil {
		return []map[string]any{}
	}
	return s
}

func nonNilAny(s []any) []any {
	if s == nil {
		return []any{}
	}
	return s
}

// Scenario is one input to the flow with the model's script for it.
type Scenario struct {
	Name    string
	Input   string
	Replies Replies
	// Status is the result status the flow must reach.
	Status string
	// Cite are links the answer must cite; Invented is a link the script
	// makes the Synthesizer cite that no entry backs, which must be dropped.
	Cite     []string
	Invented string
	// MaxCalls is the most model calls the flow may make.
	MaxCalls int
}

const (
	heavyBench = "[[Daily/2026-11-13#18:15]]"
	badSleep   = "[[Daily/2026-11-13#07:15]]"
	noLunch    = "[[Daily/2026-11-13#12:00]]"
	lateDeploy = "[[Daily/2026-11-12#23:55]]"
	mondayLift = "[[Daily/2026-11-09#07:20]]"
	invented   = "[[Daily/2026-11-14#09:00]]"
)

// Scenarios are seed 003 §17.C's example queries on the sample vault,
// asked at Now (Sunday 2026-11-22, so "last week" is 2026-11-09..15).
func Scenarios() []Scenario {
	week := func(purpose string, kw ...string) map[string]any {
		return Instr(purpose, "2026-11-09", "2026-11-15", kw...)
	}
	return []Scenario{
		{
			Name:  "simple",
			Input: "Show me last week's workouts",
			Replies: Replies{
				"router":  {Route("query", "Strength training")},
				"planner": {Plan("simple", week("lifting sessions", "bench", "squat", "deadlift"))},
				"analyzer": {Analysis(true, []map[string]any{
					Finding("Monday: squat 3x5 @ 275, bench 3x5 @ 190", mondayLift),
					Finding("Friday: bench 185, failed the last set", heavyBench),
				}, nil)},
				"synthesizer": {Draft("Monday you squatted 3x5 @ 275 and benched 3x5 @ 190 "+mondayLift+"; Wednesday deadlift and OHP; Friday bench felt heavy at 185 "+heavyBench+" and Saturday you rested "+invented+".", "high", mondayLift, heavyBench, invented)},
				"evaluator":   {Eval(true)},
			},
			Status:   "answered",
			Cite:     []string{mondayLift, heavyBench},
			Invented: invented,
			MaxCalls: 5,
		},
		{
			Name:  "insight",
			Input: "Why did my bench press feel heavy last week?",
			Replies: Replies{
				"router": {Route("query", "Strength training", "Work")},
				"planner": {
					Plan("insight", week("the heavy session", "bench")),
					Plan("insight", week("sleep", "slept", "sleep"), week("food", "breakfast", "lunch"), Instr("the night before", "2026-11-12", "2026-11-12", "deploy")),
				},
				"analyzer": {
					Analysis(false, []map[string]any{Finding("Bench felt heavy on Friday at 185", heavyBench)}, nil, Gap("sleep and food before Friday", "contextual", true)),
					Analysis(true, []map[string]any{
						Finding("Bench felt heavy on Friday at 185", heavyBench),
						Finding("Slept 4h30 that night after a late deploy", badSleep, lateDeploy),
						Finding("Missed breakfast and lunch", noLunch),
					}, []string{"Short sleep precedes heavy bench sessions"}),
				},
				"synthesizer": {Draft("Friday's bench felt heavy "+heavyBench+" most likely because you slept 4h30 after the late deploy "+badSleep+" "+lateDeploy+" and ate almost nothing that day "+noLunch+".", "high", heavyBench, badSleep, noLunch)},
				"evaluator":   {Eval(true)},
				"observer":    {Observe("insight", "short_sleep_heavy_bench", "Under 5h of sleep precedes heavy bench sessions", "tentative")},
			},
			Status:   "answered",
			Cite:     []string{heavyBench, badSleep, noLunch},
			MaxCalls: 8,
		},
		{
			Name:  "recommendation",
			Input: "What should I do today?",
			Replies: Replies{
				"router":  {Route("query", "Strength training")},
				"planner": {Plan("recommendation", Instr("the last week", "2026-11-15", "2026-11-21"))},
				"analyzer": {Analysis(true, []map[string]any{
					Finding("Bench 5x3 @ 195 on Friday, every set clean", "[[Daily/2026-11-20#07:20]]"),
				}, []string{"Lifts Monday, Wednesday, Friday"})},
				"synthesizer": {
					Draft("Go for a personal record today.", "high"),
					Draft("Today is Sunday, a rest day in your routine: the last session on Friday went well "+"[[Daily/2026-11-20#07:20]]"+", so rest or take an easy run.", "medium", "[[Daily/2026-11-20#07:20]]"),
				},
				"evaluator": {Eval(false, "recommends a max attempt without evidence"), Eval(true)},
				"observer":  {Observe("pattern", "training_days", "Monday, Wednesday, Friday", "likely")},
			},
			Status:   "answered",
			Cite:     []string{"[[Daily/2026-11-20#07:20]]"},
			MaxCalls: 10,
		},
		{
			Name:  "multi-part",
			Input: "Why was I tired last week and what should I change?",
			Replies: Replies{
				"router": {Route("query", "Work")},
				// The parts depend on each other: the second is planned and
				// analysed once the first is answered.
				"planner": {
					PlanParts("recommendation", "dependent", []string{"Why was I tired last week?", "What should I change?"},
						week("sleep", "slept", "sleep")),
					Plan("recommendation", week("late work", "deploy")),
				},
				"analyzer": {
					Analysis(true, []map[string]any{Finding("Slept 4h30 on Friday", badSleep)}, nil),
					Analysis(true, []map[string]any{
						Finding("The short night followed a late deploy", lateDeploy, badSleep),
					}, []string{"Late deploys cost sleep"}),
				},
				"synthesizer": {Draft("You were tired because the late deploy "+lateDeploy+" cut your sleep to 4h30 "+badSleep+". Change: avoid late deploys before heavy days.", "medium", lateDeploy, badSleep)},
				"evaluator":   {Eval(true)},
				"observer":    {Observe("insight", "late_deploy_sleep", "Late deploys cut sleep the next night", "tentative")},
			},
			Status:   "answered",
			Cite:     []string{lateDeploy, badSleep},
			MaxCalls: 8,
		},
		{
			// No word of it is in the notes, so neither the plan nor the
			// plain search of the question finds anything.
			Name:  "no data",
			Input: "How many swimming laps?",
			Replies: Replies{
				"router": {Route("query")},
				"planner": {
					Plan("simple", Instr("swimming sessions", "2026-10-22", "2026-11-22", "swim", "swimming", "pool")),
					Plan("simple", Instr("any swimming ever", "", "", "swim", "swimming", "laps", "pool")),
				},
				// A model that would make something up if it were asked:
				// the flow must not ask it.
				"synthesizer": {Draft("You swam 20 laps on Tuesday [[Daily/2026-11-17#07:00]].", "high", "[[Daily/2026-11-17#07:00]]")},
				"analyzer":    {Analysis(true, []map[string]any{Finding("You swam 20 laps", "[[Daily/2026-11-17#07:00]]")}, nil)},
			},
			Status:   "partial",
			MaxCalls: 4,
		},
	}
}
