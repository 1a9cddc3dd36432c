// Package llmtest provides scripted fake model servers that speak the real
// wire protocols of Ollama (/api/chat NDJSON), OpenAI-compatible endpoints
// (/v1/chat/completions SSE) and Anthropic (/v1/messages SSE), so tests
// drive margin's llm package — and the official SDKs under it — end to end
// over HTTP instead of mocking an interface.
//
// Each fake answers from a queue of [Reply] values (its Script method) and,
// when the queue is empty, from a handler (Handle); it records every chat
// request it received (Requests) so tests can assert on prompts, tools,
// formats and options. A request with no reply left fails the test. [Weak]
// is a handler that answers like a small local model, one [Fault] at a
// time. The Ollama and OpenAI fakes also embed (/api/embed,
// /v1/embeddings) through an [Embedder]: deterministic vectors in which
// the words of one [Meaning] group are near each other. The
// package is for tests only: nothing in margin's binary may import it.
package llmtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Reply scripts one answer. The zero Reply is an empty assistant message.
type Reply struct {
	// Content is the assistant text.
	Content string
	// JSON, when Content is empty, is marshalled into Content.
	JSON      any
	ToolCalls []ToolCall
	// Chunks is how many pieces Content is streamed in; 0 means 3.
	Chunks int
	// DoneReason overrides the protocol's normal stop reason.
	DoneReason string
	// PromptTokens and CompletionTokens are the usage reported; 0 means
	// computed from the request (characters / 4; for Ollama capped at
	// num_ctx, as a truncating server would report).
	PromptTokens     int
	CompletionTokens int

	// Status, when non-zero, makes the reply an HTTP error with the
	// protocol's error body carrying Error as its message.
	Status int
	Error  string
	// RetryAfter is sent as a Retry-After header with an error status.
	RetryAfter time.Duration

	// Delay holds the reply back; a client that gives up first is let go.
	Delay time.Duration
	// CutAfter drops the connection after that many streamed chunks,
	// without the protocol's end-of-reply message.
	CutAfter int
	// StallAfter holds the stream open after that many chunks until the
	// client goes away; OnStall, if set, is called then (a test cancels its
	// ctx there to stop a call mid-stream).
	StallAfter int
	OnStall    func()
	// StreamError ends a streamed reply with the protocol's in-stream error
	// message after the content chunks.
	StreamError string
}

// ToolCall scripts one call the model makes. Args is marshalled as the
// call's arguments; pass a json.RawMessage to send exact bytes.
type ToolCall struct {
	ID   string
	Name string
	Args any
}

func (r Reply) text() string {
	if r.Content == "" && r.JSON != nil {
		b, err := json.Marshal(r.JSON)
		if err != nil {
			panic("llmtest: Reply.JSON does not marshal: " + err.Error())
		}
		return string(b)
	}
	return r.Content
}

// pieces splits the content for streaming, on rune boundaries.
func (r Reply) pieces() []string {
	s := r.text()
	n := r.Chunks
	if n <= 0 {
		n = 3
	}
	if s == "" {
		return nil
	}
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

func (c ToolCall) args() json.RawMessage {
	if raw, ok := c.Args.(json.RawMessage); ok {
		return raw
	}
	if c.Args == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(c.Args)
	if err != nil {
		panic("llmtest: ToolCall.Args does not marshal: " + err.Error())
	}
	return b
}

// script is the reply queue and request log every fake shares; R is the
// fake's decoded request type.
type script[R any] struct {
	t testing.TB

	mu       sync.Mutex // guards fields below
	queue    []Reply
	handle   func(R) Reply
	requests []R
}

// Script queues replies, answered in order.
func (s *script[R]) Script(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Handle answers every request that finds the queue empty.
func (s *script[R]) Handle(f func(R) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = f
}

// Requests returns every chat request received so far, in order.
func (s *script[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.requests...)
}

func (s *script[R]) record(r R) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// next picks the reply for r, which the caller has recorded.
func (s *script[R]) next(r R) (Reply, bool) {
	s.mu.Lock()
	if len(s.queue) > 0 {
		rep := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return rep, true
	}
	h := s.handle
	s.mu.Unlock()
	if h != nil {
		return h(r), true
	}
	s.t.Errorf("llmtest: chat request with no scripted reply left")
	return Reply{}, false
}

// wait holds a reply back for d unless the client goes away first; it
// reports whether the client is still there.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// cut drops the connection mid-reply: net/http aborts the response without
// its terminating chunk, exactly what a crashed server looks like.
func cut() { panic(http.ErrAbortHandler) }

// streamer writes one streamed reply and applies the reply's CutAfter and
// StallAfter.
type streamer struct {
	w    http.ResponseWriter
	r    *http.Request
	rep  Reply
	sent int
}

func (s *streamer) flush() {
	s.w.(http.Flusher).Flush()
	s.sent++
	if s.sent == s.rep.CutAfter {
		cut()
	}
	if s.sent == s.rep.StallAfter {
		if s.rep.OnStall != nil {
			s.rep.OnStall()
		}
		<-s.r.Context().Done()
		cut()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func retryAfterHeader(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((d+time.Second-1)/time.Second)))
	}
}

// estimate is the fakes' prompt token count: characters / 4.
func estimate(chars int) int { return (chars + 3) / 4 }
