package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/margin-md/margin/llm/llmtest"
)

// These tests drive the fakes with the official clients directly, covering
// the protocol paths margin's llm package does not use (non-streaming
// replies, /api/show, the root page).

func ollamaClient(t *testing.T, base string) *api.Client {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, http.DefaultClient)
}

func TestOllamaServerBasics(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	resp, err := http.Get(fake.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "Ollama is running" {
		t.Errorf("GET / = %q", body)
	}

	c := ollamaClient(t, fake.URL)
	if err := c.Heartbeat(t.Context()); err != nil {
		t.Errorf("Heartbeat: %v", err)
	}
	show, err := c.Show(t.Context(), &api.ShowRequest{Model: "qwen2.5:7b"})
	if err != nil || show.Details.Family != "qwen2" || len(show.Capabilities) == 0 {
		t.Errorf("Show = %+v, %v", show, err)
	}
	_, err = c.Show(t.Context(), &api.ShowRequest{Model: "llama3"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || se.ErrorMessage != `model "llama3" not found, try pulling it first` {
		t.Errorf("Show(missing) = %v", err)
	}
	fake.Pull("llama3")
	if _, err := c.Show(t.Context(), &api.ShowRequest{Model: "llama3"}); err != nil {
		t.Errorf("Show after Pull: %v", err)
	}
}

func TestOllamaNonStreamingChat(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Script(llmtest.Reply{
		Content:   "calling",
		ToolCalls: []llmtest.ToolCall{{Name: "set_task_status", Args: map[string]any{"status": "done"}}},
	})
	stream := false
	var got []api.ChatResponse
	err := ollamaClient(t, fake.URL).Chat(t.Context(), &api.ChatRequest{Model: "qwen2.5:7b", Stream: &stream, Messages: []api.Message{{Role: "user", Content: "finish the task"}}}, func(r api.ChatResponse) error {
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Done || got[0].Message.Content != "calling" || got[0].PromptEvalCount == 0 || got[0].EvalDuration == 0 {
		t.Fatalf("responses = %+v", got)
	}
	calls := got[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "set_task_status" {
		t.Fatalf("tool calls = %+v", calls)
	}
	if v, _ := calls[0].Function.Arguments.Get("status"); v != "done" {
		t.Fatalf("status argument = %v", v)
	}
}

func TestOllamaFormatSuppressesToolCalls(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Script(llmtest.Reply{Content: `{"a":1}`, ToolCalls: []llmtest.ToolCall{{Name: "x"}}})
	var calls int
	err := ollamaClient(t, fake.URL).Chat(t.Context(), &api.ChatRequest{Model: "qwen2.5:7b", Format: json.RawMessage(`"json"`)}, func(r api.ChatResponse) error {
		calls += len(r.Message.ToolCalls)
		return nil
	})
	if err != nil || calls != 0 {
		t.Fatalf("err %v, %d tool calls under a format", err, calls)
	}
}

func TestOllamaDelayLetsAGoneClientGo(t *testing.T) {
	fake := llmtest.NewOllama(t, "qwen2.5:7b")
	fake.Script(llmtest.Reply{Content: "late", Delay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := ollamaClient(t, fake.URL).Chat(ctx, &api.ChatRequest{Model: "qwen2.5:7b"}, func(api.ChatResponse) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// The test's cleanup closes the server; it returns because the
	// handler noticed the client left.
}

func TestOpenAINonStreaming(t *testing.T) {
	fake := llmtest.NewOpenAI(t, "gpt-4o-mini")
	fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_x", Name: "lookup", Args: map[string]any{"q": "bench"}}}})
	svc := openai.NewChatCompletionService(option.WithBaseURL(fake.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
	resp, err := svc.New(t.Context(), openai.ChatCompletionNewParams{Model: "gpt-4o-mini", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0]
	if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_x" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"q":"bench"}` || resp.Usage.PromptTokens == 0 {
		t.Fatalf("response = %+v", resp)
	}
	if fake.Requests()[0].Stream {
		t.Error("recorded a non-streaming request as streaming")
	}
}

func TestAnthropicNonStreaming(t *testing.T) {
	fake := llmtest.NewAnthropic(t, "claude-3-5-haiku-20241022")
	fake.Script(llmtest.Reply{Content: "hello", ToolCalls: []llmtest.ToolCall{{Name: "lookup", Args: map[string]any{"q": "bench"}}}})
	svc := anthropic.NewMessageService(aoption.WithBaseURL(fake.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	msg, err := svc.New(t.Context(), anthropic.MessageNewParams{
		Model: "claude-3-5-haiku-20241022", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[0].Text != "hello" || msg.Content[1].Name != "lookup" ||
		string(msg.Content[1].Input) != `{"q":"bench"}` || msg.Usage.InputTokens == 0 {
		t.Fatalf("message = %+v", msg)
	}
}
