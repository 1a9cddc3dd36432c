package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// AnthropicRequest is one /v1/messages request as the fake received it.
type AnthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	System    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"system"`
	Messages []AnthropicMessage `json:"messages"`
	Tools    []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	Stream bool `json:"stream"`

	Header http.Header     `json:"-"`
	Raw    json.RawMessage `json:"-"`
}

// AnthropicMessage is one message of an [AnthropicRequest].
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

// AnthropicBlock is one content block: text, tool_use or tool_result.
type AnthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ResultText is a tool_result block's text.
func (b AnthropicBlock) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(b.Content, &parts)
	var out strings.Builder
	for _, p := range parts {
		out.WriteString(p.Text)
	}
	return out.String()
}

// Anthropic is a fake Anthropic Messages API server; URL is its base URL.
// Requests for a model it does not serve get a 404 not_found_error. A
// request that forces a tool (tool_choice type "tool") is answered with a
// call to that tool whose input is the reply's JSON, as the real API does.
type Anthropic struct {
	*script[AnthropicRequest]
	URL    string
	models []string
}

// NewAnthropic starts a fake Anthropic server serving models; it is closed
// when the test ends.
func NewAnthropic(t testing.TB, models ...string) *Anthropic {
	t.Helper()
	a := &Anthropic{script: &script[AnthropicRequest]{t: t}, models: models}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", a.messages)
	mux.HandleFunc("GET /v1/models", a.list)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

var anthropicErrorTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	529:                              "overloaded_error",
}

func anthropicErrorBody(status int, msg string) map[string]any {
	kind, ok := anthropicErrorTypes[status]
	if !ok {
		kind = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}}
}

func anthropicError(w http.ResponseWriter, rep Reply) {
	retryAfterHeader(w, rep.RetryAfter)
	w.Header().Set("request-id", "req_llmtest")
	writeJSON(w, rep.Status, anthropicErrorBody(rep.Status, rep.Error))
}

func (a *Anthropic) list(w http.ResponseWriter, r *http.Request) {
	data := []map[string]any{}
	for _, m := range a.models {
		data = append(data, map[string]any{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"})
	}
	resp := map[string]any{"data": data, "has_more": false, "first_id": nil, "last_id": nil}
	if len(a.models) > 0 {
		resp["first_id"], resp["last_id"] = a.models[0], a.models[len(a.models)-1]
	}
	writeJSON(w, http.StatusOK, resp)
}

func (a *Anthropic) messages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		anthropicError(w, Reply{Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	req := AnthropicRequest{Header: r.Header.Clone(), Raw: body}
	if err := json.Unmarshal(body, &req); err != nil {
		anthropicError(w, Reply{Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	a.record(req)
	if !slices.Contains(a.models, req.Model) {
		anthropicError(w, Reply{Status: http.StatusNotFound, Error: "model: " + req.Model})
		return
	}
	rep, ok := a.next(req)
	if !ok {
		anthropicError(w, Reply{Status: http.StatusInternalServerError, Error: "llmtest: no scripted reply"})
		return
	}
	if !wait(r, rep.Delay) {
		return
	}
	if rep.Status != 0 {
		anthropicError(w, rep)
		return
	}

	text := rep.text()
	var blocks []AnthropicBlock
	if req.ToolChoice.Type == "tool" && len(rep.ToolCalls) == 0 {
		if !json.Valid([]byte(text)) {
			a.t.Errorf("llmtest: a forced tool call needs a JSON reply, got %q", text)
		}
		blocks = append(blocks, AnthropicBlock{Type: "tool_use", ID: "toolu_forced", Name: req.ToolChoice.Name, Input: json.RawMessage(text)})
		text = ""
	}
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%02d", i+1)
		}
		blocks = append(blocks, AnthropicBlock{Type: "tool_use", ID: id, Name: c.Name, Input: c.args()})
	}
	reason := rep.DoneReason
	if reason == "" {
		reason = "end_turn"
		if len(blocks) > 0 {
			reason = "tool_use"
		}
	}
	prompt := rep.PromptTokens
	if prompt == 0 {
		prompt = estimate(len(body))
	}
	completion := rep.CompletionTokens
	if completion == 0 {
		completion = estimate(len(rep.text())) + 1
	}
	message := func(content []any, stop any, output int) map[string]any {
		return map[string]any{
			"id": "msg_llmtest", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": prompt, "output_tokens": output},
		}
	}
	toolBlock := func(b AnthropicBlock, input json.RawMessage) map[string]any {
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input}
	}

	if !req.Stream {
		content := []any{}
		if text != "" {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		for _, b := range blocks {
			content = append(content, toolBlock(b, b.Input))
		}
		writeJSON(w, http.StatusOK, message(content, reason, completion))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	st := &streamer{w: w, r: r, rep: rep}
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		st.flush()
	}
	event("message_start", map[string]any{"type": "message_start", "message": message([]any{}, nil, 1)})
	index := 0
	if text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		event("ping", map[string]any{"type": "ping"})
		for _, p := range (Reply{Content: text, Chunks: rep.Chunks}).pieces() {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, b := range blocks {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": toolBlock(b, json.RawMessage(`{}`))})
		in := string(b.Input)
		half := len(in) / 2
		for _, part := range []string{in[:half], in[half:]} {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if rep.StreamError != "" {
		event("error", anthropicErrorBody(529, rep.StreamError))
		return
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": reason, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": completion}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
