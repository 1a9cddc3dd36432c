package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// MessageRole says who speaks in a [Message]. It is not an agent role: agent
// roles (router, planner, task, ...) choose the model, see [Config.Resolve].
type MessageRole string

const (
	RoleUser      MessageRole = "user"
	RoleAssistant MessageRole = "assistant"
	RoleTool      MessageRole = "tool"
)

// Message is one turn of a conversation. The system prompt is not a message:
// it lives in [Request.System] so that it always comes first.
type Message struct {
	Role    MessageRole
	Content string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolCallID and ToolName identify the call a tool turn answers.
	ToolCallID string
	ToolName   string
}

// ToolCall is one call the model asked for. Args is the model's arguments
// as they arrived: unvalidated, and from OpenAI-compatible servers not even
// certainly JSON (the tool loop checks both before running anything).
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	Schema      *jsonschema.Schema
}

// Options tune one call. Zero values mean "the provider's configured default".
type Options struct {
	Temperature *float64
	// NumCtx is Ollama's context window in tokens. It is always sent, because
	// Ollama's own default is small and it truncates silently past it.
	NumCtx int
	// MaxTokens caps the reply.
	MaxTokens int
}

// Request is a provider-neutral chat request.
type Request struct {
	// Role is the agent role asking; it selects provider and model.
	Role string
	// Tier and Model override the role's configuration for this call only
	// (an agent template's tier and model); empty means "as configured".
	// Tier replaces the role's tier and its configured model, so on every
	// provider of the cascade the model is llm.tiers.<Tier>.<provider>.
	// Model names the model on the role's own provider only: the fallback
	// keeps its tier model, because one provider's model name means
	// nothing to another. A Tier missing from llm.tiers is an error.
	Tier  string
	Model string
	// System is the system prompt. Keep it a stable prefix (see
	// [SystemPrompt]) so the model server can reuse its KV cache across calls.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// Schema asks for a reply that is a JSON value matching it. Never set
	// together with Tools: with Ollama, a format constraint makes the model
	// ignore the tools, so margin never combines them on any provider.
	Schema  *jsonschema.Schema
	Options Options
}

// errFormatWithTools is a programming error, not a model failure, so it is
// not a [Class].
var errFormatWithTools = errors.New("a request cannot carry both a schema and tools")

func (r Request) check() error {
	if r.Schema != nil && len(r.Tools) > 0 {
		return errFormatWithTools
	}
	seen := make(map[string]bool, len(r.Tools))
	for _, t := range r.Tools {
		if seen[t.Name] {
			return fmt.Errorf("tool %q offered twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

// Usage is what a call cost.
type Usage struct {
	// PromptTokens and CompletionTokens are as reported by the provider
	// (Ollama: prompt_eval_count and eval_count); 0 when it reported none.
	PromptTokens     int
	CompletionTokens int
	// PromptEstimate is margin's own estimate, see [EstimateTokens].
	PromptEstimate int
	// Truncated means the provider most likely cut the prompt to fit its
	// context window, see [Truncated].
	Truncated bool
}

// Response is the model's reply to one [Request].
type Response struct {
	// Message is the assistant turn: text and any tool calls.
	Message    Message
	Provider   string
	Model      string
	DoneReason string
	Usage      Usage
	// Latency is the wall time of the attempt that succeeded.
	Latency time.Duration
}
