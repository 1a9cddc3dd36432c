package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"
)

// OpenAIRequest is one /v1/chat/completions request as the fake received it.
type OpenAIRequest struct {
	Model          string            `json:"model"`
	Messages       []OpenAIMessage   `json:"messages"`
	Tools          []json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage   `json:"tool_choice"`
	ResponseFormat json.RawMessage   `json:"response_format"`
	Stream         bool              `json:"stream"`
	StreamOptions  struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature *float64 `json:"temperature"`

	Header http.Header     `json:"-"`
	Query  url.Values      `json:"-"`
	Raw    json.RawMessage `json:"-"`
}

// OpenAIMessage is one message of an [OpenAIRequest].
type OpenAIMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// OpenAI is a fake OpenAI-compatible server; its base URL (with /v1) is
// URL. Chat requests for a model it does not serve get a 404
// model_not_found, as OpenAI answers.
type OpenAI struct {
	*script[OpenAIRequest]
	URL    string
	models []string
	// Embedder answers /v1/embeddings: 1536-wide vectors (text-embedding-
	// 3-small's width) of [Meanings], sent three times their unit length,
	// as OpenAI-compatible servers that do not normalise send them.
	Embedder *Embedder
}

// NewOpenAI starts a fake OpenAI-compatible server serving models; it is
// closed when the test ends.
func NewOpenAI(t testing.TB, models ...string) *OpenAI {
	t.Helper()
	o := &OpenAI{script: &script[OpenAIRequest]{t: t}, models: models, Embedder: NewEmbedder(1536, Meanings)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", o.chat)
	mux.HandleFunc("GET /v1/models", o.list)
	mux.HandleFunc("POST /v1/embeddings", o.embed)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	o.URL = srv.URL + "/v1"
	return o
}

// openaiErrorTypes are the error type and code OpenAI sends per status.
var openaiErrorTypes = map[int][2]string{
	http.StatusBadRequest:      {"invalid_request_error", ""},
	http.StatusUnauthorized:    {"invalid_request_error", "invalid_api_key"},
	http.StatusForbidden:       {"invalid_request_error", "unsupported_country_region_territory"},
	http.StatusNotFound:        {"invalid_request_error", "model_not_found"},
	http.StatusTooManyRequests: {"requests", "rate_limit_exceeded"},
}

func openaiError(w http.ResponseWriter, rep Reply) {
	kind, ok := openaiErrorTypes[rep.Status]
	if !ok {
		kind = [2]string{"server_error", ""}
	}
	var code any
	if kind[1] != "" {
		code = kind[1]
	}
	retryAfterHeader(w, rep.RetryAfter)
	writeJSON(w, rep.Status, map[string]any{"error": map[string]any{"message": rep.Error, "type": kind[0], "param": nil, "code": code}})
}

func (o *OpenAI) list(w http.ResponseWriter, r *http.Request) {
	data := []map[string]any{}
	for _, m := range o.models {
		data = append(data, map[string]any{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "llmtest"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (o *OpenAI) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		openaiError(w, Reply{Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	req := OpenAIRequest{Header: r.Header.Clone(), Query: r.URL.Query(), Raw: body}
	if err := json.Unmarshal(body, &req); err != nil {
		openaiError(w, Reply{Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	o.record(req)
	if !slices.Contains(o.models, req.Model) {
		openaiError(w, Reply{Status: http.StatusNotFound, Error: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model)})
		return
	}
	rep, ok := o.next(req)
	if !ok {
		openaiError(w, Reply{Status: http.StatusInternalServerError, Error: "llmtest: no scripted reply"})
		return
	}
	if !wait(r, rep.Delay) {
		return
	}
	if rep.Status != 0 {
		openaiError(w, rep)
		return
	}

	type function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		Index    int      `json:"index"`
		ID       string   `json:"id,omitempty"`
		Type     string   `json:"type,omitempty"`
		Function function `json:"function"`
	}
	var calls []toolCall
	for i, c := range rep.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i+1)
		}
		calls = append(calls, toolCall{Index: i, ID: id, Type: "function", Function: function{Name: c.Name, Arguments: string(c.args())}})
	}
	reason := rep.DoneReason
	if reason == "" {
		reason = "stop"
		if len(calls) > 0 {
			reason = "tool_calls"
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
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
	created := time.Now().Unix()

	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": rep.text(), "refusal": nil}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": reason, "logprobs": nil}},
			"usage":   usage,
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	st := &streamer{w: w, r: r, rep: rep}
	event := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		st.flush()
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		}
	}
	event(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range rep.pieces() {
		event(chunk(map[string]any{"content": p}, nil))
	}
	for _, c := range calls {
		// The name arrives first, the arguments in later deltas.
		args := c.Function.Arguments
		head := c
		head.Function.Arguments = ""
		event(chunk(map[string]any{"tool_calls": []toolCall{head}}, nil))
		half := len(args) / 2
		for _, part := range []string{args[:half], args[half:]} {
			event(chunk(map[string]any{"tool_calls": []toolCall{{Index: c.Index, Function: function{Arguments: part}}}}, nil))
		}
	}
	if rep.StreamError != "" {
		event(map[string]any{"error": map[string]any{"message": rep.StreamError, "type": "server_error"}})
		return
	}
	event(chunk(map[string]any{}, reason))
	if req.StreamOptions.IncludeUsage {
		event(map[string]any{"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": created, "model": req.Model, "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (o *OpenAI) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		openaiError(w, Reply{Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	// OpenAI refuses an input longer than the model's window, never cuts it.
	refuse := false
	call := EmbedCall{Model: req.Model, Truncate: &refuse}
	if err := json.Unmarshal(req.Input, &call.Input); err != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			openaiError(w, Reply{Status: http.StatusBadRequest, Error: "input must be a string or a list of strings"})
			return
		}
		call.Input = []string{one}
	}
	o.Embedder.record(call)
	if !slices.Contains(o.models, req.Model) {
		openaiError(w, Reply{Status: http.StatusNotFound, Error: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model)})
		return
	}
	rep, ok := o.Embedder.serve(r, call)
	if !ok {
		return
	}
	if rep.status == http.StatusBadRequest {
		rep.err = "This model's maximum context length was exceeded; reduce the length of the input."
	}
	if rep.status != 0 {
		openaiError(w, Reply{Status: rep.status, Error: rep.err})
		return
	}
	data := make([]map[string]any, len(rep.vectors))
	for i, v := range rep.vectors {
		scaled := make([]float32, len(v))
		for j, x := range v {
			scaled[j] = 3 * x
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": scaled}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": rep.tokens, "total_tokens": rep.tokens},
	})
}
