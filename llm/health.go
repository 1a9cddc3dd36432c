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

// configuredModels are the models any chat role can use on provider: every
// tier's model for it and every role override that applies to it. The
// embed role's model is [Client.ProbeEmbed]'s: a chat model server without
// it is healthy, margin searches by keyword meanwhile.
func (c *Client) configuredModels(provider string) []string {
	embedTier := c.cfg.Agents[RoleEmbed].Tier
	for role, rc := range c.cfg.Agents {
		if role != RoleEmbed && rc.Tier == embedTier {
			embedTier = ""
		}
	}
	set := map[string]bool{}
	for tier, byProvider := range c.cfg.Tiers {
		if m := byProvider[provider]; m != "" && tier != embedTier {
			set[m] = true
		}
	}
	for role, rc := range c.cfg.Agents {
		if role == RoleEmbed {
			continue
		}
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

// Ready checks, without a model call, whether a call like req could be
// served now: a provider of its cascade answers and, for Ollama, has the
// model pulled. It is the cheap check (Ollama: its version and model list;
// other providers: their model list) that a caller waiting for the model
// repeats. nil means ready; otherwise the error is an [UnavailableError]
// like [Client.Chat]'s, which [Away] reads, or the role's configuration
// error.
func (c *Client) Ready(ctx context.Context, req Request) error {
	rc, err := c.cfg.roleFor(req.Role, req.Tier, req.Model)
	if err != nil {
		return fmt.Errorf("probe for role %s: %w", req.Role, err)
	}
	primary := c.cfg.ownProvider(rc)
	names := []string{primary}
	if fb := c.cfg.FallbackProvider; fb != "" && fb != primary {
		names = append(names, fb)
	}
	var reasons []error
	for _, name := range names {
		model, err := c.cfg.modelOn(req.Role, rc, name)
		switch {
		case err != nil && name == primary:
			return fmt.Errorf("probe for role %s: %w", req.Role, err)
		case err != nil:
			reasons = append(reasons, fmt.Errorf("%w: %w", errNoFallback, err))
			continue
		}
		h := c.providers[name].probe(ctx, []string{model})
		if h.Reachable && h.Err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		reasons = append(reasons, h.Err)
	}
	return &UnavailableError{Role: req.Role, Reasons: reasons}
}
