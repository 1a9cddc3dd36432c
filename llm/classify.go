package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// endpoint is what a provider knows about itself when it classifies an
// error: enough to write an actionable Fix.
type endpoint struct {
	name    string // key under llm.providers
	kind    string
	base    string
	timeout time.Duration
}

// errIncomplete is returned by a provider's call when the reply stream
// ended without the provider's end-of-reply message.
var errIncomplete = errors.New("stream ended before the end-of-reply message")

// attempt runs one call under the per-attempt timeout and turns its error
// into a [CallError], or into the caller's own ctx error when the caller
// gave up (which is not the provider's fault and must not be retried).
func (e endpoint) attempt(ctx context.Context, model string, call func(ctx context.Context) error, classify func(model string, err error) *CallError) error {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if e.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, e.timeout)
	}
	defer cancel()
	err := call(actx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		// Whatever the SDK made of the cut connection, the cause is ours.
		return e.callError(ErrTimeout, model, actx.Err())
	case errors.Is(err, errIncomplete):
		return e.callError(ErrIncomplete, model, err)
	}
	if ce := classify(model, err); ce != nil {
		return ce
	}
	return e.classifyTransport(model, err)
}

// classifyTransport classifies errors that did not come from the API.
func (e endpoint) classifyTransport(model string, err error) *CallError {
	var nerr net.Error
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns), errors.Is(err, syscall.ECONNREFUSED),
		errors.As(err, &op) && op.Op == "dial":
		return e.callError(ErrUnreachable, model, err)
	case errors.As(err, &nerr) && nerr.Timeout():
		return e.callError(ErrTimeout, model, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return e.callError(ErrIncomplete, model, err)
	case contextTooLong(err.Error()):
		return e.callError(ErrContextTooLong, model, err)
	}
	return e.callError(ErrServer, model, err)
}

// classifyStatus maps an HTTP status and the provider's message to a Class.
func classifyStatus(status int, msg string) Class {
	switch {
	case contextTooLong(msg), status == http.StatusRequestEntityTooLarge:
		return ErrContextTooLong
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return ErrAuth
	case status == http.StatusNotFound:
		return ErrModelMissing
	case status == http.StatusTooManyRequests:
		return ErrRateLimited
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		return ErrServer
	case status >= 400:
		return ErrRejected
	}
	// An error event inside a 200 stream: the server failed mid-reply.
	return ErrServer
}

// contextTooLong recognises the messages servers use for an oversized
// prompt: Ollama ("the input length exceeds the context length"), OpenAI
// and vLLM ("maximum context length", code context_length_exceeded),
// llama.cpp ("exceeds the available context size"), Anthropic ("prompt is
// too long").
func contextTooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"context length", "context_length", "context size", "context window", "prompt is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func (e endpoint) callError(c Class, model string, err error) *CallError {
	return &CallError{Class: c, Provider: e.name, Model: model, Fix: e.fix(c, model), Err: err}
}

// fix is the advice for class c on this endpoint.
func (e endpoint) fix(c Class, model string) string {
	key := "llm.providers." + e.name
	switch c {
	case ErrUnreachable:
		if e.kind == KindOllama {
			return fmt.Sprintf("is `ollama serve` running at %s? (%s.api_base)", e.base, key)
		}
		return fmt.Sprintf("check %s.api_base (%s) and the network", key, e.base)
	case ErrModelMissing:
		if e.kind == KindOllama {
			return fmt.Sprintf("run `ollama pull %s`", model)
		}
		return fmt.Sprintf("check that %s serves model %q (llm.tiers, llm.agents)", e.name, model)
	case ErrTimeout:
		return fmt.Sprintf("the call took over %v; raise llm.retry.timeout or %s.timeout, or use a smaller model", e.timeout, key)
	case ErrContextTooLong:
		if e.kind == KindOllama {
			return fmt.Sprintf("raise %s.num_ctx or lower agents.context_tokens", key)
		}
		return "lower agents.context_tokens or use a model with a larger context"
	case ErrRateLimited:
		return "wait, or lower agents.concurrency"
	case ErrAuth:
		switch e.kind {
		case KindOllama:
			return "run `ollama signin`"
		case KindAnthropic:
			return fmt.Sprintf("set ANTHROPIC_API_KEY (%s.api_key)", key)
		}
		return fmt.Sprintf("set %s_API_KEY (%s.api_key)", strings.ToUpper(e.name), key)
	case ErrServer:
		return fmt.Sprintf("see the %s server's logs", e.name)
	}
	return ""
}

// retryAfter reads Retry-After (seconds or an HTTP date) and OpenAI's
// retry-after-ms from a response.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && ms > 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
