package llm

import (
	"context"
	"encoding/json"
	"time"
)

// Record is the ledger line of one attempt at one provider. Every attempt
// produces one, successful or not, retries and fallbacks included.
type Record struct {
	Time     time.Time
	Role     string
	Provider string
	Model    string
	// Attempt counts from 0 on each provider; Fallback marks the fallback provider.
	Attempt  int
	Fallback bool
	// Inputs is how many texts an embed call sent; 0 for a chat.
	Inputs int

	PromptTokens     int
	CompletionTokens int
	PromptEstimate   int
	Truncated        bool
	DoneReason       string
	Latency          time.Duration

	// Outcome is "ok", a [Class] value, "canceled" when the caller gave up,
	// or "error" for a failure outside the classes (a bug, not the model).
	Outcome string
	Err     string
}

// Recorder receives every [Record]. The agents package persists them in the
// state database; implementations must be safe for concurrent use and deal
// with their own failures, because accounting must never fail a model call.
type Recorder interface {
	Record(ctx context.Context, r Record)
}

// EstimateTokens estimates a request's prompt size as characters / 4, the
// usual ratio for English and markdown with BPE tokenizers such as qwen2.5's.
// It is only used to budget and to detect truncation, never to cut text, so
// a rough figure with no tokenizer dependency is the right trade. Tool
// schemas count because chat templates render them into the prompt; the
// structured-output schema does not, Ollama applies it as a grammar.
func EstimateTokens(req Request) int {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Args)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description)
		if b, err := json.Marshal(t.Schema); err == nil {
			n += len(b)
		}
	}
	return (n + 3) / 4
}

// Truncated applies margin's truncation rule to an Ollama reply: the prompt
// was cut when the estimate exceeds the context window AND the evaluated
// count is far (over a quarter) below the estimate.
//
// Both conditions are needed. Ollama drops the oldest messages (and then
// tokens) to fit num_ctx, so a truncated prompt reports at most num_ctx
// tokens. In the pinned v0.17.4 runners prompt_eval_count is the whole
// prompt after truncation, a prefix reused from the KV cache included (the
// count is taken before the cache is consulted), but older servers counted
// only the tokens they evaluated, so there a cached prefix alone makes the
// count far below the estimate; requiring estimate > num_ctx keeps that
// from raising false alarms, because a prompt that fits was not cut. The
// quarter margin absorbs the chars/4 estimate's error. A zero count means
// the server reported nothing (older servers omit it for a fully cached
// prompt), which proves nothing either way.
func Truncated(estimate, promptEvalCount, numCtx int) bool {
	if promptEvalCount <= 0 || numCtx <= 0 {
		return false
	}
	return estimate > numCtx && promptEvalCount*4 < estimate*3
}
