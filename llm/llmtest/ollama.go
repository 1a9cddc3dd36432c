package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/margin-md/margin/llm"
	"github.com/ollama/ollama/types/model"
)

// OllamaVersion is what the fake's /api/version reports: the version the
// api client is pinned to.
const OllamaVersion = "0.17.4"

// OllamaRequest is one /api/chat request as the fake received it.
type OllamaRequest struct {
	api.ChatRequest
	// Raw is the body, for assertions on key order.
	Raw json.RawMessage
}

// NumCtx is the request's options.num_ctx, or 0 when absent.
func (r OllamaRequest) NumCtx() int {
	n, _ := r.Options["num_ctx"].(float64)
	return int(n)
}

// Ollama is a fake Ollama server. Chat and embed requests for a model
// that was not pulled get Ollama's 404, as the real server does.
type Ollama struct {
	*script[OllamaRequest]
	URL string
	// Embedder answers /api/embed: 768-wide vectors (embeddinggemma's
	// width) of [Meanings], normalised as Ollama normalises them.
	Embedder *Embedder

	mu     sync.Mutex // guards pulled and srv
	pulled []string
	srv    *httptest.Server
	mux    *http.ServeMux
}

// NewOllama starts a fake Ollama server with the given models pulled; it
// is closed when the test ends.
func NewOllama(t testing.TB, pulled ...string) *Ollama {
	t.Helper()
	o := &Ollama{script: &script[OllamaRequest]{t: t}, Embedder: NewEmbedder(768, Meanings)}
	o.Pull(pulled...)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "Ollama is running") })
	mux.HandleFunc("HEAD /{$}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": OllamaVersion})
	})
	mux.HandleFunc("GET /api/tags", o.tags)
	mux.HandleFunc("POST /api/show", o.show)
	mux.HandleFunc("POST /api/chat", o.chat)
	mux.HandleFunc("POST /api/embed", o.embed)
	o.mux, o.srv = mux, httptest.NewServer(mux)
	o.URL = o.srv.URL
	t.Cleanup(o.Stop)
	return o
}

// Stop shuts the server down: connections to its address are refused, as
// when Ollama is not running. Stopping a stopped server does nothing.
func (o *Ollama) Stop() {
	o.mu.Lock()
	srv := o.srv
	o.srv = nil
	o.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Start serves again at the address of URL after Stop, with the same
// script, models and request log, as when Ollama comes back.
func (o *Ollama) Start() {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv != nil {
		return
	}
	l, err := net.Listen("tcp", strings.TrimPrefix(o.URL, "http://"))
	if err != nil {
		o.t.Fatalf("llmtest: serving again at %s: %v", o.URL, err)
	}
	o.srv = httptest.NewUnstartedServer(o.mux)
	o.srv.Listener.Close()
	o.srv.Listener = l
	o.srv.Start()
}

// Config is margin's default model configuration with its Ollama
// provider at this server.
func (o *Ollama) Config() llm.Config {
	cfg := llm.DefaultConfig()
	p := cfg.Providers[llm.KindOllama]
	p.APIBase = o.URL
	cfg.Providers[llm.KindOllama] = p
	return cfg
}

// Pull adds models to the pulled set. As in Ollama, a name without a tag
// means the :latest tag.
func (o *Ollama) Pull(models ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range models {
		o.pulled = append(o.pulled, withTag(m))
	}
}

func (o *Ollama) has(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.pulled, withTag(name))
}

func withTag(name string) string {
	if strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func notFound(w http.ResponseWriter, name string) {
	ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", name))
}

func (o *Ollama) tags(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var list api.ListResponse
	for _, name := range o.pulled {
		list.Models = append(list.Models, api.ListModelResponse{
			Name: name, Model: name, ModifiedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Size: 4_683_087_332, Digest: "sha256:0000", Details: details(),
		})
	}
	writeJSON(w, http.StatusOK, list)
}

func details() api.ModelDetails {
	return api.ModelDetails{Format: "gguf", Family: "qwen2", Families: []string{"qwen2"}, ParameterSize: "7.6B", QuantizationLevel: "Q4_K_M"}
}

func (o *Ollama) show(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !o.has(req.Model) {
		notFound(w, req.Model)
		return
	}
	writeJSON(w, http.StatusOK, api.ShowResponse{
		Details:      details(),
		ModelInfo:    map[string]any{"general.architecture": "qwen2", "qwen2.context_length": 32768},
		Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityTools},
		Template:     "{{ .Prompt }}",
	})
}

func (o *Ollama) chat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	req := OllamaRequest{Raw: body}
	if err := json.Unmarshal(body, &req.ChatRequest); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	o.record(req)
	if !o.has(req.Model) {
		notFound(w, req.Model)
		return
	}
	rep, ok := o.next(req)
	if !ok {
		ollamaError(w, http.StatusInternalServerError, "llmtest: no scripted reply")
		return
	}
	if !wait(r, rep.Delay) {
		return
	}
	if rep.Status != 0 {
		ollamaError(w, rep.Status, rep.Error)
		return
	}

	var calls []api.ToolCall
	// A format constraint makes the real server's output plain JSON, so
	// it never yields tool calls; the fake behaves the same.
	if len(req.Format) == 0 {
		for i, c := range rep.ToolCalls {
			args := api.NewToolCallFunctionArguments()
			if err := args.UnmarshalJSON(c.args()); err != nil {
				o.t.Errorf("llmtest: Ollama tool call arguments must be a JSON object: %v", err)
			}
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", i+1)
			}
			calls = append(calls, api.ToolCall{ID: id, Function: api.ToolCallFunction{Index: i, Name: c.Name, Arguments: args}})
		}
	}
	final := o.final(req, rep)
	now := time.Now().UTC()
	chunk := func(content string, calls []api.ToolCall) api.ChatResponse {
		return api.ChatResponse{Model: req.Model, CreatedAt: now, Message: api.Message{Role: "assistant", Content: content, ToolCalls: calls}}
	}

	if req.Stream != nil && !*req.Stream {
		final.Message = chunk(rep.text(), calls).Message
		writeJSON(w, http.StatusOK, final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	st := &streamer{w: w, r: r, rep: rep}
	send := func(v any) {
		_ = json.NewEncoder(w).Encode(v)
		st.flush()
	}
	for _, p := range rep.pieces() {
		send(chunk(p, nil))
	}
	if len(calls) > 0 {
		send(chunk("", calls))
	}
	if rep.StreamError != "" {
		send(map[string]string{"error": rep.StreamError})
		return
	}
	final.Message = chunk("", nil).Message
	send(final)
}

// final is the done message with its metrics.
func (o *Ollama) final(req OllamaRequest, rep Reply) api.ChatResponse {
	prompt := rep.PromptTokens
	if prompt == 0 {
		chars := 0
		for _, m := range req.Messages {
			chars += len(m.Content)
		}
		prompt = estimate(chars)
		if n := req.NumCtx(); n > 0 {
			prompt = min(prompt, n)
		}
	}
	eval := rep.CompletionTokens
	if eval == 0 {
		eval = estimate(len(rep.text())) + 1
	}
	reason := rep.DoneReason
	if reason == "" {
		reason = "stop"
	}
	// Durations of a plausible local run: 1 ms per prompt token, 20 ms per
	// generated one.
	return api.ChatResponse{
		Model:      req.Model,
		CreatedAt:  time.Now().UTC(),
		Done:       true,
		DoneReason: reason,
		Metrics: api.Metrics{
			TotalDuration:      time.Duration(prompt)*time.Millisecond + time.Duration(eval)*20*time.Millisecond + 5*time.Millisecond,
			LoadDuration:       5 * time.Millisecond,
			PromptEvalCount:    prompt,
			PromptEvalDuration: time.Duration(prompt) * time.Millisecond,
			EvalCount:          eval,
			EvalDuration:       time.Duration(eval) * 20 * time.Millisecond,
		},
	}
}

func (o *Ollama) embed(w http.ResponseWriter, r *http.Request) {
	var req api.EmbedRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	call := EmbedCall{Model: req.Model, Truncate: req.Truncate}
	switch in := req.Input.(type) {
	case string:
		call.Input = []string{in}
	case []any:
		for _, x := range in {
			s, ok := x.(string)
			if !ok {
				ollamaError(w, http.StatusBadRequest, "invalid input type")
				return
			}
			call.Input = append(call.Input, s)
		}
	default:
		ollamaError(w, http.StatusBadRequest, "invalid input type")
		return
	}
	if n, ok := req.Options["num_ctx"].(float64); ok {
		call.NumCtx = int(n)
	}
	o.Embedder.record(call)
	if !o.has(req.Model) {
		notFound(w, req.Model)
		return
	}
	rep, ok := o.Embedder.serve(r, call)
	if !ok {
		return
	}
	if rep.status != 0 {
		ollamaError(w, rep.status, rep.err)
		return
	}
	writeJSON(w, http.StatusOK, api.EmbedResponse{Model: req.Model, Embeddings: rep.vectors, PromptEvalCount: rep.tokens})
}
