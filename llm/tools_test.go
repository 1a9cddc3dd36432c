package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

type reportArgs struct {
	TLDR    string `json:"tldr" jsonschema:"one sentence"`
	Content string `json:"content"`
}

// reportTool stands in for the task agent's update_report.
type reportTool struct {
	mu  sync.Mutex // guards got
	got []reportArgs
}

func (*reportTool) Name() string               { return "update_report" }
func (*reportTool) Description() string        { return "Replace the task's report." }
func (*reportTool) Schema() *jsonschema.Schema { return reportSchema() }

func reportSchema() *jsonschema.Schema {
	s, err := jsonschema.For[reportArgs](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (r *reportTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	var a reportArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a)
	return "report updated", nil
}

func (r *reportTool) calls() []reportArgs {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// estimateTool refuses proposals that change nothing, like margin's
// deferred tools do.
type estimateTool struct{ current int }

func (estimateTool) Name() string        { return "update_task_estimate" }
func (estimateTool) Description() string { return "Propose a new estimate in minutes." }
func (estimateTool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[struct {
		Minutes int `json:"minutes"`
	}](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (e estimateTool) Run(_ context.Context, args json.RawMessage) (string, error) {
	var a struct{ Minutes int }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	if a.Minutes == e.current {
		return "", fmt.Errorf("the estimate is already %d minutes; nothing proposed", a.Minutes)
	}
	return "proposed", nil
}

func toolbox(t *testing.T, tools ...llm.Tool) *llm.Toolbox {
	t.Helper()
	b, err := llm.NewToolbox(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func lastMessage(r llmtest.OllamaRequest) (role, name, id, content string) {
	m := r.Messages[len(r.Messages)-1]
	return m.Role, m.ToolName, m.ToolCallID, m.Content
}

func TestToolLoopCorrectsTheModel(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "delete_everything", Args: map[string]any{}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "update_report", Args: map[string]any{"tldr": 5}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c3", Name: "update_report", Args: map[string]any{"tldr": "On track", "content": "Two sets logged."}}}},
	)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	report := &reportTool{}
	box := toolbox(t, report, estimateTool{})

	res, err := llm.RunTools(t.Context(), c, userAsks("wake"), box, llm.Loop{MaxTurns: 5, StopAfter: []string{"update_report"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != llm.StopTool || res.Turns != 3 {
		t.Errorf("stop %q after %d turns, want tool after 3", res.Stop, res.Turns)
	}
	if got := report.calls(); len(got) != 1 || got[0].TLDR != "On track" {
		t.Errorf("update_report ran with %+v, want once with the valid call", got)
	}
	if len(res.Calls) != 3 || !errors.Is(res.Calls[0].Err, llm.ErrUnknownTool) || !errors.Is(res.Calls[1].Err, llm.ErrInvalidArgs) || res.Calls[2].Err != nil {
		t.Errorf("calls = %+v", res.Calls)
	}

	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	if n := len(reqs[0].Tools); n != 2 {
		t.Errorf("offered %d tools, want 2", n)
	}
	role, name, id, content := lastMessage(reqs[1])
	if role != "tool" || name != "delete_everything" || id != "c1" ||
		content != `error: unknown tool "delete_everything"; available: update_report, update_task_estimate` {
		t.Errorf("after the unknown tool the model was told %s/%s/%s: %q", role, name, id, content)
	}
	role, name, id, content = lastMessage(reqs[2])
	for _, want := range []string{"error: invalid arguments for update_report", `/properties/tldr: type: 5 has type "integer", want "string"`, `must match this schema: {"type":"object","properties":{"tldr"`} {
		if role != "tool" || name != "update_report" || id != "c2" || !strings.Contains(content, want) {
			t.Errorf("after invalid arguments the model was told %s/%s/%s: %q; want it to contain %q", role, name, id, content, want)
		}
	}
	// The whole conversation is in the result, ending with the last tool result.
	if m := res.Messages[len(res.Messages)-1]; m.Role != llm.RoleTool || m.Content != "report updated" || m.ToolCallID != "c3" {
		t.Errorf("last message = %+v", m)
	}
	for _, r := range reqs {
		if len(r.Format) != 0 {
			t.Errorf("format %s sent together with tools", r.Format)
		}
	}
}

func TestToolLoopWrongTypeNamesTheField(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"minutes": "90m"}}}},
		llmtest.Reply{Content: "done"},
	)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	res, err := llm.RunTools(t.Context(), c, userAsks("wake"), toolbox(t, estimateTool{}), llm.Loop{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != llm.StopAnswered || res.Last.Message.Content != "done" {
		t.Errorf("stop %q, last %q", res.Stop, res.Last.Message.Content)
	}
	_, _, _, content := lastMessage(fake.Requests()[1])
	if !strings.Contains(content, `/properties/minutes: type: 90m has type "string", want "integer"`) {
		t.Errorf("model was told %q", content)
	}
}

func TestToolErrorIsToldToTheModel(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"minutes": 90}}}},
		llmtest.Reply{Content: "understood"},
	)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	res, err := llm.RunTools(t.Context(), c, userAsks("wake"), toolbox(t, estimateTool{current: 90}), llm.Loop{StopAfter: []string{"update_task_estimate"}})
	if err != nil {
		t.Fatal(err)
	}
	// A failed call does not satisfy StopAfter.
	if res.Stop != llm.StopAnswered || res.Turns != 2 {
		t.Errorf("stop %q after %d turns", res.Stop, res.Turns)
	}
	if _, _, _, content := lastMessage(fake.Requests()[1]); content != "error: the estimate is already 90 minutes; nothing proposed" {
		t.Errorf("model was told %q", content)
	}
}

func TestToolLoopTurnCap(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"minutes": 30}}}}
	})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	res, err := llm.RunTools(t.Context(), c, userAsks("wake"), toolbox(t, estimateTool{}), llm.Loop{MaxTurns: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != llm.StopMaxTurns || res.Turns != 3 || len(fake.Requests()) != 3 || len(res.Calls) != 3 {
		t.Fatalf("stop %q, %d turns, %d requests, %d calls; want max_turns after 3", res.Stop, res.Turns, len(fake.Requests()), len(res.Calls))
	}
}

func TestToolLoopCancelMidStream(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	ctx, cancel := context.WithCancel(t.Context())
	fake.Script(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "update_task_estimate", Args: map[string]any{"minutes": 30}}}},
		llmtest.Reply{Content: "thinking about the report", StallAfter: 1, OnStall: cancel},
	)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	res, err := llm.RunTools(ctx, c, userAsks("wake"), toolbox(t, estimateTool{}), llm.Loop{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res.Turns != 1 || len(res.Calls) != 1 || len(res.Messages) != 3 {
		t.Errorf("result = %d turns, %d calls, %d messages; want the first turn kept", res.Turns, len(res.Calls), len(res.Messages))
	}
}

// TestToolLoopOtherProviders runs a call and its result through the
// OpenAI and Anthropic wire formats.
func TestToolLoopOtherProviders(t *testing.T) {
	call := llmtest.ToolCall{ID: "call_a", Name: "update_report", Args: map[string]any{"tldr": "ok", "content": "body"}}
	t.Run("openai", func(t *testing.T) {
		fake := llmtest.NewOpenAI(t, openaiModel)
		fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{call}}, llmtest.Reply{Content: "done"})
		c := newClient(t, testConfig("openai", "", map[string]string{"openai": fake.URL}))
		report := &reportTool{}
		res, err := llm.RunTools(t.Context(), c, userAsks("wake"), toolbox(t, report), llm.Loop{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != llm.StopAnswered || len(report.calls()) != 1 {
			t.Fatalf("stop %q, report calls %v", res.Stop, report.calls())
		}
		msgs := fake.Requests()[1].Messages
		asst, tool := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if asst.Role != "assistant" || len(asst.ToolCalls) != 1 || asst.ToolCalls[0].ID != "call_a" || asst.ToolCalls[0].Function.Arguments != `{"content":"body","tldr":"ok"}` {
			t.Errorf("assistant turn sent back = %+v", asst)
		}
		if tool.Role != "tool" || tool.ToolCallID != "call_a" || tool.Content != "report updated" {
			t.Errorf("tool turn = %+v", tool)
		}
		if got := keyOrder(t, fake.Requests()[0].Tools[0], "function", "parameters", "properties"); !slices.Equal(got, []string{"tldr", "content"}) {
			t.Errorf("tool properties on the wire = %v", got)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		fake := llmtest.NewAnthropic(t, claudeModel)
		second := call
		second.ID = "call_b"
		fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{call, second}}, llmtest.Reply{Content: "done"})
		c := newClient(t, testConfig("anthropic", "", map[string]string{"anthropic": fake.URL}))
		report := &reportTool{}
		res, err := llm.RunTools(t.Context(), c, userAsks("wake"), toolbox(t, report), llm.Loop{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stop != llm.StopAnswered || len(report.calls()) != 2 {
			t.Fatalf("stop %q, report calls %v", res.Stop, report.calls())
		}
		req := fake.Requests()[1]
		if req.System[0].Text != "You are margin's parser." {
			t.Errorf("system = %+v", req.System)
		}
		msgs := req.Messages
		asst, results := msgs[len(msgs)-2], msgs[len(msgs)-1]
		if asst.Role != "assistant" || len(asst.Content) != 2 || asst.Content[0].Type != "tool_use" || asst.Content[0].ID != "call_a" {
			t.Errorf("assistant turn sent back = %+v", asst)
		}
		// Both results in one user turn, as the API requires.
		if results.Role != "user" || len(results.Content) != 2 || results.Content[1].ToolUseID != "call_b" || results.Content[1].ResultText() != "report updated" {
			t.Errorf("tool results turn = %+v", results)
		}
		if got := keyOrder(t, fake.Requests()[0].Tools[0].InputSchema, "properties"); !slices.Equal(got, []string{"tldr", "content"}) {
			t.Errorf("tool properties on the wire = %v", got)
		}
	})
}

func TestNewToolboxRejectsDuplicates(t *testing.T) {
	if _, err := llm.NewToolbox(&reportTool{}, &reportTool{}); err == nil {
		t.Fatal("NewToolbox accepted two tools with one name")
	}
}

// A tool withheld from the loop is not offered; a model that calls it
// anyway is told why, as an unknown tool.
func TestToolLoopSaysWhyAToolIsWithheld(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "update_task_estimate", Args: map[string]any{}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c2", Name: "update_report", Args: map[string]any{"tldr": "On track", "content": "Two sets logged."}}}},
	)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	box := toolbox(t, &reportTool{})
	box.Withhold("update_task_estimate", "the task is done")

	res, err := llm.RunTools(t.Context(), c, userAsks("wake"), box, llm.Loop{MaxTurns: 5, StopAfter: []string{"update_report"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) != 2 || !errors.Is(res.Calls[0].Err, llm.ErrUnknownTool) {
		t.Errorf("calls = %+v", res.Calls)
	}
	reqs := fake.Requests()
	if n := len(reqs[0].Tools); n != 1 {
		t.Errorf("offered %d tools, want 1", n)
	}
	if _, _, _, content := lastMessage(reqs[1]); content != `error: unknown tool "update_task_estimate": it is not offered, because the task is done; available: update_report` {
		t.Errorf("the model was told %q", content)
	}
}
