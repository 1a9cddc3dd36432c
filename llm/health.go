package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Health is what `margin doctor` and vault/status report about a provider.
type Health struct {
	Provider  string
	Reachable bool
	// Version is the server's version (Ollama only).
	Version string
	// Models are the models the server has.
	Models []string
	// Missing are configured models the server does not have (Ollama only).
	Missing []string
	Err     error
	// Fix is the exact thing to do about Err, e.g.
	// "ollama pull qwen2.5:3b && ollama pull qwen2.5:14b".
	Fix string
}

// Probe checks provider without a model call: whether it answers, its
// version, its models and, for Ollama, which configured models, and which
// of also (models asked for elsewhere, such as by templates), are not
// pulled.
func (c *Client) Probe(ctx context.Context, provider string, also ...string) Health {
	p, ok := c.providers[provider]
	if !ok {
		return Health{Provider: provider, Err: fmt.Errorf("llm.providers.%s: provider not configured", provider)}
	}
	models := c.configuredModels(provider)
	for _, m := range also {
		if m != "" && !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	return p.probe(ctx, models)
}

// configuredModels are the models any role can use on provider: every tier's
// model for it and every role override that applies to it.
func (c *Client) configuredModels(provider string) []string {
	set := map[string]bool{}
	for _, byProvider := range c.cfg.Tiers {
		if m := byProvider[provider]; m != "" {
			set[m] = true
		}
	}
	for role, rc := range c.cfg.Agents {
		if m, err := c.cfg.modelOn(role, rc, provider); err == nil {
			set[m] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// probeList is the probe of providers whose only cheap check is listing
// their models.
func (e endpoint) probeList(ctx context.Context, classify func(string, error) *CallError, list func(context.Context) ([]string, error)) Health {
	h := Health{Provider: e.name}
	models, err := list(ctx)
	if err != nil {
		h.Err = e.probeError(ctx, err, classify)
		h.Fix = Fix(h.Err)
		var ce *CallError
		// An API error is an answer: the server is there.
		h.Reachable = errors.As(h.Err, &ce) && ce.Class != ErrUnreachable && ce.Class != ErrTimeout
		return h
	}
	h.Reachable = true
	h.Models = slices.Sorted(slices.Values(models))
	return h
}

func (e endpoint) probeError(ctx context.Context, err error, classify func(string, error) *CallError) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ce := classify("", err)
	if ce == nil {
		ce = e.classifyTransport("", err)
	}
	if ce.Class == ErrModelMissing {
		// A 404 without a model: something else listens at that address.
		ce.Class, ce.Fix = ErrUnreachable, fmt.Sprintf("no %s API at %s; check llm.providers.%s.api_base", e.kind, e.base, e.name)
	}
	return ce
}
