package llmtest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/margin-md/margin/llm/llmtest"
)

// planSchema is shaped like the schemas margin's flows send: dates, a glob,
// tags, a closed set, a list of objects, citations and an optional field.
const planSchema = `{
	"type": "object",
	"required": ["kind", "instructions", "evidence_cited", "reasoning", "count"],
	"properties": {
		"kind": {"type": "string", "enum": ["lookup", "trend"]},
		"instructions": {"type": "array", "items": {"$ref": "#/$defs/Instruction"}},
		"evidence_cited": {"type": "array", "items": {"type": "string"}},
		"reasoning": {"type": "string"},
		"count": {"type": "integer", "minimum": 2},
		"correction_target": {"type": "string"}
	},
	"$defs": {"Instruction": {
		"type": "object",
		"required": ["from", "to", "glob", "tags", "purpose"],
		"properties": {
			"from": {"type": "string", "description": "first day YYYY-MM-DD, or empty"},
			"to": {"type": "string"},
			"glob": {"type": "string"},
			"tags": {"type": "array", "items": {"type": "string"}},
			"purpose": {"type": "string"}
		}
	}}
}`

type weakPlan struct {
	Kind         string `json:"kind"`
	Instructions []struct {
		From    string   `json:"from"`
		To      string   `json:"to"`
		Glob    string   `json:"glob"`
		Tags    []string `json:"tags"`
		Purpose string   `json:"purpose"`
	} `json:"instructions"`
	EvidenceCited    []string `json:"evidence_cited"`
	Reasoning        string   `json:"reasoning"`
	Count            int      `json:"count"`
	CorrectionTarget *string  `json:"correction_target"`
}

// chatOllama sends one request through the real api client and returns
// the reply's content, tool calls and done reason.
func chatOllama(t *testing.T, fake *llmtest.Ollama, req *api.ChatRequest) (string, []api.ToolCall, string) {
	t.Helper()
	req.Model = "qwen2.5:7b"
	var content strings.Builder
	var calls []api.ToolCall
	var reason string
	err := ollamaClient(t, fake.URL).Chat(t.Context(), req, func(r api.ChatResponse) error {
		content.WriteString(r.Message.Content)
		calls = append(calls, r.Message.ToolCalls...)
		if r.Done {
			reason = r.DoneReason
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return content.String(), calls, reason
}

func TestWeakFormatReplies(t *testing.T) {
	for _, fault := range llmtest.Faults {
		t.Run(string(fault), func(t *testing.T) {
			fake := llmtest.NewOllama(t, "qwen2.5:7b")
			fake.Handle(llmtest.Weak{Fault: fault}.Ollama)
			content, _, reason := chatOllama(t, fake, &api.ChatRequest{
				Format:   json.RawMessage(planSchema),
				Messages: []api.Message{{Role: "user", Content: "what did I do last week?"}},
			})
			var p weakPlan
			err := json.Unmarshal([]byte(content), &p)
			if fault == llmtest.Cut {
				if err == nil || reason != "length" || !strings.HasPrefix(content, "{") {
					t.Fatalf("cut reply %q (done %q) is whole JSON", content, reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("reply %q is not JSON: %v", content, err)
			}
			// Closed sets and bounds hold whatever the fault.
			if p.Kind != "lookup" || p.Count != 2 || len(p.Instructions) == 0 {
				t.Fatalf("reply %q breaks the schema's enum, minimum or list", content)
			}
			in := p.Instructions[0]
			switch fault {
			case llmtest.Filler:
				if in.From != "ok" || in.To != "ok" || in.Glob != "ok" || len(in.Tags) != 1 || in.Tags[0] != "ok" || p.Reasoning != "ok" {
					t.Errorf("filler reply %q", content)
				}
			case llmtest.DatesInWords:
				if in.From != llmtest.WordDate || in.To != llmtest.WordDate || p.Reasoning != "" {
					t.Errorf("dates-in-words reply %q", content)
				}
			case llmtest.Headings:
				if !strings.HasPrefix(p.Reasoning, "## ") || !strings.HasPrefix(in.Purpose, "## ") || in.From != "" {
					t.Errorf("headings reply %q", content)
				}
			case llmtest.EveryOptional:
				if p.CorrectionTarget == nil || *p.CorrectionTarget == "" || p.Reasoning == "" {
					t.Errorf("every-optional reply %q leaves an optional field out", content)
				}
			case llmtest.NearDuplicates:
				if len(p.Instructions) != 2 || !strings.EqualFold(strings.Trim(p.Instructions[0].Purpose, "."), strings.Trim(p.Instructions[1].Purpose, ".")) ||
					p.Instructions[0].Purpose == p.Instructions[1].Purpose {
					t.Errorf("near-duplicates reply %q", content)
				}
			case llmtest.MissingPaths:
				if len(p.EvidenceCited) == 0 || p.EvidenceCited[0] != llmtest.MissingPath || in.Glob != llmtest.MissingPath || in.From != "" {
					t.Errorf("missing-paths reply %q", content)
				}
			case llmtest.OtherLanguage:
				if p.Reasoning != llmtest.ForeignText || in.Purpose != llmtest.ForeignText {
					t.Errorf("other-language reply %q", content)
				}
			default:
				t.Fatalf("fault %q has no check", fault)
			}
			if fault != llmtest.EveryOptional && p.CorrectionTarget != nil {
				t.Errorf("%s reply %q fills an optional field", fault, content)
			}
		})
	}
}

func TestWeakToolCalls(t *testing.T) {
	tools := api.Tools{tool(t, "list_notes", `{"type":"object","properties":{}}`),
		tool(t, "set_task_due", `{"type":"object","required":["path","due"],"properties":{"path":{"type":"string"},"due":{"type":"string"}}}`)}
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Handle(llmtest.Weak{Fault: llmtest.DatesInWords, Tool: "set_task_due"}.Ollama)
	msgs := []api.Message{{Role: "user", Content: "move the dentist to next week"}}
	_, calls, _ := chatOllama(t, fake, &api.ChatRequest{Tools: tools, Messages: msgs})
	if len(calls) != 1 || calls[0].Function.Name != "set_task_due" {
		t.Fatalf("calls = %+v", calls)
	}
	if due, _ := calls[0].Function.Arguments.Get("due"); due != llmtest.WordDate {
		t.Errorf("due = %v, want %q", due, llmtest.WordDate)
	}

	// After the tool answered, the model ends its turn instead of looping.
	msgs = append(msgs, api.Message{Role: "assistant", ToolCalls: calls}, api.Message{Role: "tool", Content: "done"})
	content, calls, _ := chatOllama(t, fake, &api.ChatRequest{Tools: tools, Messages: msgs})
	if len(calls) != 0 || content == "" {
		t.Errorf("after the tool result: %d calls, content %q", len(calls), content)
	}

	// A cut model writes the call as broken text, no call at all.
	fake.Handle(llmtest.Weak{Fault: llmtest.Cut, Tool: "set_task_due"}.Ollama)
	content, calls, _ = chatOllama(t, fake, &api.ChatRequest{Tools: tools, Messages: msgs[:1]})
	if len(calls) != 0 || json.Valid([]byte(content)) || !strings.HasPrefix(content, "{") {
		t.Errorf("cut tool reply: %d calls, content %q", len(calls), content)
	}
}

func tool(t *testing.T, name, params string) api.Tool {
	var p api.ToolFunctionParameters
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	return api.Tool{Type: "function", Function: api.ToolFunction{Name: name, Parameters: p}}
}

func TestWeakOpenAI(t *testing.T) {
	fake := llmtest.NewOpenAI(t, "gpt-4o-mini")
	fake.Handle(llmtest.Weak{Fault: llmtest.MissingPaths}.OpenAI)
	svc := openai.NewChatCompletionService(option.WithBaseURL(fake.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	resp, err := svc.New(t.Context(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("cite your sources")},
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "reply", Schema: json.RawMessage(planSchema)},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var p weakPlan
	if err := json.Unmarshal([]byte(resp.Choices[0].Message.Content), &p); err != nil || len(p.EvidenceCited) == 0 || p.EvidenceCited[0] != llmtest.MissingPath {
		t.Fatalf("reply %q, %v", resp.Choices[0].Message.Content, err)
	}
}
