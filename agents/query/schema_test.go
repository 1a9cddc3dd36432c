package query_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
)

// TestSchemasOnTheWireCarryConstraints runs a question and a log through
// the real ollama/api client to the fake server and reads each agent's
// format as the server received it: dates carry the day pattern, closed
// sets their enum, one-line values a maxLength, scores their bounds — what
// Ollama's constrained decoding then holds a real model to.
func TestSchemasOnTheWireCarryConstraints(t *testing.T) {
	v := querytest.SampleVault(t)
	sc := scenario(t, "insight")
	sc.Replies["parser"] = []any{querytest.Parse("Strength training", map[string]any{}, true)}
	fake, _, client := fakeModel(t, sc.Replies)
	e := engine(t, v, client, querytest.Now)
	if _, err := e.Ask(context.Background(), sc.Input, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Log(context.Background(), "Bench 3x5 @ 200, a new best", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil); err != nil {
		t.Fatal(err)
	}
	day := map[string]any{"pattern": llm.DayPattern}
	line := map[string]any{"maxLength": float64(llm.LineMax)}
	word := map[string]any{"maxLength": float64(llm.WordMax)}
	unit := map[string]any{"minimum": 0.0, "maximum": 1.0}
	enum := func(first string) map[string]any { return map[string]any{"enum.0": first} }
	want := map[string]map[string]map[string]any{
		"router": {"input_type": enum("log"), "confidence": unit, "selected_domains[]": word, "correction_target": line},
		"planner": {"query_type": enum("simple"), "execution_strategy": enum("independent"), "next_action": enum("retrieve"),
			"retrieval_instructions[].from": day, "retrieval_instructions[].to": day, "retrieval_instructions[].glob": word,
			"retrieval_instructions[].tags[]": word, "retrieval_instructions[].keywords[]": word, "retrieval_instructions[].purpose": line,
			"sub_queries[].question": line, "clarify_questions[]": line},
		"analyzer":    {"findings[].claim": line, "findings[].evidence[]": line, "findings[].confidence": enum("high"), "gaps_identified[].severity": enum("critical"), "verdict": enum("sufficient")},
		"synthesizer": {"key_points[]": line, "evidence_cited[]": line, "confidence": enum("high")},
		"evaluator":   {"dimensions[].dimension": enum("accuracy"), "dimensions[].verdict": enum("pass"), "feedback[].issue": line, "recommendation": enum("accept")},
		"parser":      {"tags[]": word, "confidence": unit, "target_entry": line, "domain_data[].domain": word},
		"observer":    {"updates[].category": enum("preference"), "updates[].confidence": enum("certain"), "updates[].key": word, "updates[].value": line},
	}
	seen := map[string]bool{}
	for _, req := range fake.Requests() {
		role := querytest.RoleOf(req)
		if seen[role] || want[role] == nil {
			continue
		}
		seen[role] = true
		var format map[string]any
		if err := json.Unmarshal(req.Format, &format); err != nil {
			t.Fatalf("%s format %s: %v", role, req.Format, err)
		}
		for path, constraints := range want[role] {
			prop := schemaAt(format, path)
			for k, v := range constraints {
				if got := valueAt(prop, k); got != v {
					t.Errorf("%s %s: %s = %v, want %v", role, path, k, got, v)
				}
			}
		}
	}
	for role := range want {
		if !seen[role] {
			t.Errorf("no %s request was made", role)
		}
	}
}

// schemaAt finds a property's schema by path: "a.b" for properties, "a[]"
// for a list's items.
func schemaAt(s map[string]any, path string) map[string]any {
	for part := range strings.SplitSeq(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		props, _ := s["properties"].(map[string]any)
		s, _ = props[name].(map[string]any)
		if items {
			s, _ = s["items"].(map[string]any)
		}
	}
	return s
}

// valueAt reads "key" or "key.0" (a list's first item) of a schema.
func valueAt(s map[string]any, key string) any {
	if k, ok := strings.CutSuffix(key, ".0"); ok {
		list, _ := s[k].([]any)
		if len(list) == 0 {
			return nil
		}
		return list[0]
	}
	return s[key]
}
