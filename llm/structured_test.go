package llm_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// analysis mirrors the query analyzer's output: the verdict must be
// generated after the evidence, so it is the last field.
type analysis struct {
	Evidence   []string `json:"evidence"`
	Gaps       []string `json:"gaps,omitempty"`
	Confidence float64  `json:"confidence"`
	Verdict    string   `json:"verdict"`
}

var fieldOrder = []string{"evidence", "gaps", "confidence", "verdict"}

const validAnalysis = `{"evidence":["bench felt heavy on 11-20"],"confidence":0.7,"verdict":"sufficient"}`

func TestSchemaPropertyOrderFollowsStruct(t *testing.T) {
	s, err := jsonschema.For[analysis](nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := keyOrder(t, b, "properties"); !slices.Equal(got, fieldOrder) {
		t.Fatalf("schema properties = %v, want struct order %v", got, fieldOrder)
	}
}

func TestStructuredOllama(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: validAnalysis})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))

	got, resp, err := llm.Structured[analysis](t.Context(), c, userAsks("why was my bench heavy?"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "sufficient" || got.Confidence != 0.7 || len(got.Evidence) != 1 || resp.Model != ollamaModel {
		t.Fatalf("got %+v from %s", got, resp.Model)
	}
	req := fake.Requests()[0]
	if len(req.Tools) != 0 {
		t.Error("tools sent with a format")
	}
	// The schema goes out as Ollama's format object, verdict last.
	if got := keyOrder(t, req.Raw, "format", "properties"); !slices.Equal(got, fieldOrder) {
		t.Fatalf("format properties on the wire = %v, want %v", got, fieldOrder)
	}
}

func TestStructuredRepairsSafely(t *testing.T) {
	tests := []struct {
		name  string
		reply string
	}{
		{"json fence", "```json\n" + validAnalysis + "\n```"},
		{"bare fence", "```\n" + validAnalysis + "\n```\n"},
		{"trailing prose", validAnalysis + "\n\nLet me know if you need more detail {or not}."},
		{"leading prose", "Here is the analysis:\n" + validAnalysis},
		{"byte order mark", "\uFEFF" + validAnalysis},
		{"prose with brackets before", "Looking at [the entries]: " + validAnalysis},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, ollamaModel)
			fake.Script(llmtest.Reply{Content: tt.reply})
			c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
			got, _, err := llm.Structured[analysis](t.Context(), c, userAsks("q"))
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != "sufficient" {
				t.Fatalf("got %+v", got)
			}
			if n := len(fake.Requests()); n != 1 {
				t.Fatalf("a repairable reply took %d requests", n)
			}
		})
	}
}

func TestStructuredRetriesWithTheValidationError(t *testing.T) {
	bad := `{"evidence":["x"],"confidence":"high","verdict":"sufficient"}`
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: bad}, llmtest.Reply{Content: validAnalysis})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))

	got, _, err := llm.Structured[analysis](t.Context(), c, userAsks("q"))
	if err != nil || got.Verdict != "sufficient" {
		t.Fatalf("got %+v, %v", got, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	prev, fix := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if prev.Role != "assistant" || prev.Content != bad {
		t.Errorf("the bad reply was not shown back: %+v", prev)
	}
	if fix.Role != "user" || !strings.Contains(fix.Content, `/properties/confidence: type: high has type "string", want "number"`) {
		t.Errorf("corrective message = %q", fix.Content)
	}
	if len(reqs[1].Format) == 0 {
		t.Error("the retry lost the format")
	}
}

func TestStructuredRejects(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"missing field", `{"evidence":["x"],"confidence":0.5}`, `missing properties: ["verdict"]`},
		{"wrong type", `{"evidence":"x","confidence":0.5,"verdict":"v"}`, `/properties/evidence: type: x has type "string"`},
		{"unknown field", `{"evidence":[],"confidence":0.5,"verdict":"v","mood":"good"}`, "mood"},
		{"no JSON", "I could not find anything relevant.", "contains no JSON value"},
		{"broken JSON", `{"evidence":["x"], "confidence":`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, ollamaModel)
			fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: tt.reply} })
			cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
			cfg.Retry.ParseRetry = 2
			c := newClient(t, cfg)

			_, _, err := llm.Structured[analysis](t.Context(), c, userAsks("q"))
			var pe *llm.ParseError
			if !errors.Is(err, llm.ErrParse) || !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a ParseError", err)
			}
			if pe.Attempts != 3 || pe.Reply != tt.reply || pe.Role != role || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseError = %+v (%v), want 3 attempts and %q", pe, err, tt.want)
			}
			if n := len(fake.Requests()); n != 3 {
				t.Errorf("%d requests, want 1 + parse_retry", n)
			}
		})
	}
}

func TestStructuredRefusesTools(t *testing.T) {
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": closedURL(t)}))
	req := userAsks("q")
	req.Tools = toolbox(t, &reportTool{}).Specs()
	if _, _, err := llm.Structured[analysis](t.Context(), c, req); err == nil || !strings.Contains(err.Error(), "both a schema and tools") {
		t.Fatalf("err = %v", err)
	}
}

func TestStructuredOpenAI(t *testing.T) {
	fake := llmtest.NewOpenAI(t, openaiModel)
	fake.Script(llmtest.Reply{JSON: map[string]any{"evidence": []string{"e"}, "confidence": 0.9, "verdict": "sufficient"}})
	c := newClient(t, testConfig("openai", "", map[string]string{"openai": fake.URL}))

	got, _, err := llm.Structured[analysis](t.Context(), c, userAsks("q"))
	if err != nil || got.Verdict != "sufficient" || got.Confidence != 0.9 {
		t.Fatalf("got %+v, %v", got, err)
	}
	req := fake.Requests()[0]
	var rf struct {
		Type       string `json:"type"`
		JSONSchema struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(req.ResponseFormat, &rf); err != nil || rf.Type != "json_schema" || rf.JSONSchema.Name == "" {
		t.Fatalf("response_format = %s (%v)", req.ResponseFormat, err)
	}
	if got := keyOrder(t, rf.JSONSchema.Schema, "properties"); !slices.Equal(got, fieldOrder) {
		t.Errorf("schema properties on the wire = %v, want %v", got, fieldOrder)
	}
	if len(req.Tools) != 0 {
		t.Error("tools sent with response_format")
	}
	if req.Header.Get("Authorization") != "Bearer test-key" {
		t.Errorf("Authorization = %q", req.Header.Get("Authorization"))
	}
}

func TestStructuredAnthropicForcesTheReplyTool(t *testing.T) {
	fake := llmtest.NewAnthropic(t, claudeModel)
	fake.Script(
		llmtest.Reply{JSON: map[string]any{"evidence": []string{"e"}, "confidence": 0.4}},
		llmtest.Reply{JSON: map[string]any{"evidence": []string{"e"}, "confidence": 0.4, "verdict": "insufficient"}},
	)
	c := newClient(t, testConfig("anthropic", "", map[string]string{"anthropic": fake.URL}))

	got, resp, err := llm.Structured[analysis](t.Context(), c, userAsks("q"))
	if err != nil || got.Verdict != "insufficient" || resp.Provider != "anthropic" {
		t.Fatalf("got %+v, %v", got, err)
	}
	reqs := fake.Requests()
	req := reqs[0]
	if req.ToolChoice.Type != "tool" || req.ToolChoice.Name != "reply" || len(req.Tools) != 1 || req.Tools[0].Name != "reply" {
		t.Fatalf("tool_choice %+v, tools %+v", req.ToolChoice, req.Tools)
	}
	if got := keyOrder(t, req.Tools[0].InputSchema, "properties"); !slices.Equal(got, fieldOrder) {
		t.Errorf("input_schema properties = %v, want %v", got, fieldOrder)
	}
	if req.Header.Get("X-Api-Key") != "test-key" {
		t.Errorf("x-api-key = %q", req.Header.Get("X-Api-Key"))
	}
	// The corrective retry shows the first reply as text, not as a call to
	// a tool whose result never came.
	msgs := reqs[1].Messages
	prev, fix := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if prev.Role != "assistant" || prev.Content[0].Type != "text" || !strings.Contains(prev.Content[0].Text, `"confidence":0.4`) {
		t.Errorf("previous reply sent back as %+v", prev)
	}
	if !strings.Contains(fix.Content[0].Text, `missing properties: ["verdict"]`) {
		t.Errorf("corrective message = %+v", fix)
	}
}
