package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// provider is one configured model server.
type provider interface {
	chat(ctx context.Context, model string, req Request) (Response, error)
	probe(ctx context.Context, configured []string) Health
}

// Client serves agent roles: it resolves a role to a provider and model and
// runs the failure cascade — retries with exponential backoff on the same
// provider for retryable failures, then the fallback provider, then an
// [UnavailableError]. It is safe for concurrent use.
type Client struct {
	cfg       Config
	providers map[string]provider
	recorder  Recorder
	log       *slog.Logger
}

// Option configures a [Client].
type Option func(*Client)

// WithRecorder sends a [Record] of every attempt to r.
func WithRecorder(r Recorder) Option { return func(c *Client) { c.recorder = r } }

// WithLogger sets where warnings (truncated prompts, fallbacks) go;
// the default discards them.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// New validates cfg and builds a client for every configured provider.
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llm config: %w", err)
	}
	c := &Client{cfg: cfg, providers: map[string]provider{}, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(c)
	}
	// No http.Client timeout: each attempt is bounded by its ctx, and a
	// client-wide timeout would cut healthy long streams.
	hc := &http.Client{}
	for name, pc := range cfg.Providers {
		ep := endpoint{name: name, kind: pc.kind(name), base: pc.APIBase, timeout: cfg.timeout(name)}
		var (
			p   provider
			err error
		)
		switch ep.kind {
		case KindOllama:
			p, err = newOllama(ep, pc, hc)
		case KindOpenAI:
			p, err = newOpenAI(ep, pc, hc)
		case KindAnthropic:
			p, err = newAnthropic(ep, pc, hc)
		}
		if err != nil {
			return nil, fmt.Errorf("llm.providers.%s: %w", name, err)
		}
		c.providers[name] = p
	}
	return c, nil
}

// Chat sends req to the model that serves req.Role (or the tier or model
// req asks for), through the cascade.
// A cancelled ctx stops it at once, mid-stream or mid-backoff, and the
// error is ctx's.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	if err := req.check(); err != nil {
		return Response{}, fmt.Errorf("chat for role %s: %w", req.Role, err)
	}
	rc, err := c.cfg.roleFor(req.Role, req.Tier, req.Model)
	if err != nil {
		return Response{}, fmt.Errorf("chat for role %s: %w", req.Role, err)
	}
	primary := c.cfg.ownProvider(rc)
	model, err := c.cfg.modelOn(req.Role, rc, primary)
	if err != nil {
		return Response{}, fmt.Errorf("chat for role %s: %w", req.Role, err)
	}
	resp, err := c.onProvider(ctx, req, primary, model, false)
	if err == nil {
		return resp, nil
	}
	if ctx.Err() != nil {
		return Response{}, fmt.Errorf("chat for role %s: %w", req.Role, ctx.Err())
	}
	reasons := []error{err}
	if fb := c.cfg.FallbackProvider; fb != "" && fb != primary {
		fbModel, ferr := c.cfg.modelOn(req.Role, rc, fb)
		if ferr != nil {
			reasons = append(reasons, fmt.Errorf("%w: %w", errNoFallback, ferr))
		} else {
			c.log.Warn("falling back", "role", req.Role, "from", primary, "to", fb, "model", fbModel, "reason", err)
			resp, err = c.onProvider(ctx, req, fb, fbModel, true)
			if err == nil {
				return resp, nil
			}
			if ctx.Err() != nil {
				return Response{}, fmt.Errorf("chat for role %s: %w", req.Role, ctx.Err())
			}
			reasons = append(reasons, err)
		}
	}
	return Response{}, &UnavailableError{Role: req.Role, Reasons: reasons}
}

// onProvider tries one provider, retrying retryable failures.
func (c *Client) onProvider(ctx context.Context, req Request, name, model string, fallback bool) (Response, error) {
	p := c.providers[name]
	var resp Response
	err := c.retry(ctx, func(attempt int) error {
		start := time.Now()
		var err error
		resp, err = p.chat(ctx, model, req)
		resp.Latency = time.Since(start)
		c.record(ctx, Record{Time: start, Role: req.Role, Provider: name, Model: model, Attempt: attempt, Fallback: fallback}, resp, err)
		return err
	})
	if err != nil {
		return Response{}, err
	}
	return resp, nil
}

// retry runs call (attempt counts from 0) until it succeeds, fails in a
// way another attempt cannot mend, or llm.retry.llm_retry runs out,
// waiting the backoff between attempts.
func (c *Client) retry(ctx context.Context, call func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := call(attempt)
		if err == nil {
			return nil
		}
		var ce *CallError
		if ctx.Err() != nil || !errors.As(err, &ce) || !ce.retryable() || attempt >= c.cfg.Retry.LLMRetry {
			return err
		}
		wait, ok := c.backoff(attempt, ce.RetryAfter)
		if !ok {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// backoff is the wait before retry attempt+1: Initial·2^attempt capped at
// Max, or the provider's Retry-After when longer. A Retry-After beyond Max
// is not waited for (ok is false): the fallback is better than stalling.
func (c *Client) backoff(attempt int, retryAfter time.Duration) (wait time.Duration, ok bool) {
	b := c.cfg.Retry.Backoff
	wait = b.Initial
	for i := 0; i < attempt && wait < b.Max; i++ {
		wait *= 2
	}
	wait = min(wait, b.Max)
	if retryAfter > b.Max {
		return 0, false
	}
	return max(wait, retryAfter), true
}

func (c *Client) record(ctx context.Context, r Record, resp Response, err error) {
	r.Latency = resp.Latency
	switch {
	case err == nil:
		r.Outcome = "ok"
		r.PromptTokens = resp.Usage.PromptTokens
		r.CompletionTokens = resp.Usage.CompletionTokens
		r.PromptEstimate = resp.Usage.PromptEstimate
		r.Truncated = resp.Usage.Truncated
		r.DoneReason = resp.DoneReason
	case ctx.Err() != nil:
		r.Outcome, r.Err = "canceled", err.Error()
	default:
		r.Outcome, r.Err = "error", err.Error()
		var ce *CallError
		if errors.As(err, &ce) {
			r.Outcome = string(ce.Class)
		}
	}
	if r.Truncated {
		c.log.Warn("prompt truncated by the model server", "role", r.Role, "provider", r.Provider, "model", r.Model,
			"estimate", r.PromptEstimate, "prompt_eval_count", r.PromptTokens)
	}
	if c.recorder != nil {
		// The ledger line of a cancelled call must still be written.
		c.recorder.Record(context.WithoutCancel(ctx), r)
	}
}

// Resolve is the provider and model that serve role under the client's
// configuration; see [Config.Resolve].
func (c *Client) Resolve(role string) (provider, model string, err error) {
	return c.cfg.Resolve(role)
}
