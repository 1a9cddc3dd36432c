package llm

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Provider kinds.
const (
	KindOllama    = "ollama"
	KindOpenAI    = "openai" // any OpenAI-compatible endpoint
	KindAnthropic = "anthropic"
)

// Config is the `llm` section of config.yaml (seed 003 §15.2). The
// mapstructure tags match the YAML keys, so cmd fills it with
// viper.UnmarshalKey("llm", &cfg) on top of [DefaultConfig].
type Config struct {
	DefaultProvider string `mapstructure:"default_provider"`
	// FallbackProvider is tried when the role's provider fails; empty for none.
	FallbackProvider string                    `mapstructure:"fallback_provider"`
	Providers        map[string]ProviderConfig `mapstructure:"providers"`
	// Tiers maps tier → provider → model.
	Tiers map[string]map[string]string `mapstructure:"tiers"`
	// Agents maps an agent role to its tier and optional overrides.
	Agents map[string]RoleConfig `mapstructure:"agents"`
	Retry  RetryConfig           `mapstructure:"retry"`
	// Embed tunes the embed role's calls (the role itself is agents.embed).
	Embed EmbedConfig `mapstructure:"embed"`
}

// EmbedConfig is llm.embed.
type EmbedConfig struct {
	// Dims cuts vectors to their first Dims values (then scales them back
	// to unit length), for Matryoshka-trained models; 0 keeps them whole.
	Dims int `mapstructure:"dims"`
	// BatchSize is how many texts go in one request; 0 means 16.
	BatchSize int `mapstructure:"batch_size"`
	// NumCtx is the model's context window in tokens, sent to Ollama and
	// the bound of [EmbedModel.MaxTokens]; 0 means margin's table of known
	// models (capped at 8192), or 512 for a model it does not know.
	NumCtx int `mapstructure:"num_ctx"`
}

// defaultEmbedBatch: 16 sections of a few hundred tokens take seconds on
// two cores, well inside one attempt's timeout, and a batch failed by one
// text too long costs little to send again split.
const defaultEmbedBatch = 16

func (e EmbedConfig) batchSize() int {
	if e.BatchSize > 0 {
		return e.BatchSize
	}
	return defaultEmbedBatch
}

// ProviderConfig is one entry of llm.providers. Keys are expanded by cmd
// (${ANTHROPIC_API_KEY}); this package never looks at the environment.
type ProviderConfig struct {
	// Kind is ollama, openai or anthropic; empty means "from the provider's
	// name" (ollama and anthropic by name, anything else OpenAI-compatible).
	Kind    string `mapstructure:"kind"`
	APIBase string `mapstructure:"api_base"`
	APIKey  string `mapstructure:"api_key"`
	// APIVersion is for Azure OpenAI's v1-compatible endpoint: when set it is
	// sent as the api-version query parameter and the key also as api-key.
	APIVersion string `mapstructure:"api_version"`
	// Timeout bounds one attempt; 0 means llm.retry.timeout.
	Timeout time.Duration `mapstructure:"timeout"`
	// NumCtx is the context window sent to Ollama with every call.
	NumCtx int `mapstructure:"num_ctx"`
	// MaxTokens caps replies; Anthropic requires a cap, others get none when 0.
	MaxTokens int `mapstructure:"max_tokens"`
}

// RoleConfig is one entry of llm.agents.
type RoleConfig struct {
	Tier     string `mapstructure:"tier"`
	Provider string `mapstructure:"provider"`
	Model    string `mapstructure:"model"`
}

// RetryConfig is llm.retry (seed 003 §16.4 C).
type RetryConfig struct {
	// LLMRetry is how many times a failed call is retried on the same
	// provider before the fallback.
	LLMRetry int `mapstructure:"llm_retry"`
	// ParseRetry is how many corrective retries a malformed structured reply gets.
	ParseRetry int `mapstructure:"parse_retry"`
	// LoopMax caps the query flow's re-planning cycles; the agents package
	// enforces it, it lives here because seed 003 puts it in this section.
	LoopMax int `mapstructure:"loop_max"`
	// Timeout bounds one attempt; 0 means no bound beyond the caller's ctx.
	Timeout time.Duration `mapstructure:"timeout"`
	Backoff Backoff       `mapstructure:"backoff"`
}

// Backoff is the wait before retry n: Initial·2ⁿ, at most Max.
type Backoff struct {
	Initial time.Duration `mapstructure:"initial"`
	Max     time.Duration `mapstructure:"max"`
}

const (
	defaultOllamaBase = "http://localhost:11434"
	defaultOpenAIBase = "https://api.openai.com/v1"
	// defaultNumCtx: Ollama's own default (2048–4096 depending on version)
	// is too small for a wake's context; 8192 fits qwen2.5 models in a few
	// GiB of KV cache and is what agents.context_tokens budgets for.
	defaultNumCtx = 8192
	// defaultMaxTokens: Anthropic requires max_tokens; 4096 covers the longest
	// report margin asks for.
	defaultMaxTokens = 4096
)

// DefaultConfig is the documented default: local Ollama only, qwen2.5 in
// three sizes, roles on the tiers seed 003 §15.2 gives them.
func DefaultConfig() Config {
	return Config{
		DefaultProvider: KindOllama,
		Providers: map[string]ProviderConfig{
			KindOllama: {Kind: KindOllama, APIBase: defaultOllamaBase, NumCtx: defaultNumCtx},
		},
		Tiers: map[string]map[string]string{
			"low":     {KindOllama: "qwen2.5:3b"},
			"medium":  {KindOllama: "qwen2.5:7b"},
			"high":    {KindOllama: "qwen2.5:14b"},
			RoleEmbed: {KindOllama: DefaultEmbedModel},
		},
		Agents: map[string]RoleConfig{
			"router":      {Tier: "low"},
			"retriever":   {Tier: "low"},
			"parser":      {Tier: "medium"},
			"clarifier":   {Tier: "medium"},
			"synthesizer": {Tier: "medium"},
			"observer":    {Tier: "medium"},
			"task":        {Tier: "medium"},
			"planner":     {Tier: "high"},
			"analyzer":    {Tier: "high"},
			"evaluator":   {Tier: "high"},
			"evolution":   {Tier: "high"},
			RoleEmbed:     {Tier: RoleEmbed},
		},
		Retry: RetryConfig{
			LLMRetry:   3,
			ParseRetry: 2,
			LoopMax:    2,
			// A 14b model on the 2-core reference machine writes a few
			// tokens a second; a long report plus prompt evaluation fits in
			// three minutes, a hung server does not get longer.
			Timeout: 3 * time.Minute,
			// Long enough for a restarting Ollama to come back, short enough
			// that three retries stay under 15 s before the fallback.
			Backoff: Backoff{Initial: 500 * time.Millisecond, Max: 8 * time.Second},
		},
		Embed: EmbedConfig{BatchSize: defaultEmbedBatch},
	}
}

// kind is the provider's kind, defaulted from its name.
func (p ProviderConfig) kind(name string) string {
	if p.Kind != "" {
		return p.Kind
	}
	switch name {
	case KindOllama, KindAnthropic:
		return name
	}
	return KindOpenAI
}

// Resolve returns the provider and model that serve role, exactly as
// configured: the role's own model (with its provider, or the default
// provider) wins; otherwise the role's tier is mapped through llm.tiers for
// the role's provider, or for the default provider.
func (c Config) Resolve(role string) (provider, model string, err error) {
	rc, err := c.roleFor(role, "", "")
	if err != nil {
		return "", "", err
	}
	provider = c.ownProvider(rc)
	model, err = c.modelOn(role, rc, provider)
	return provider, model, err
}

// roleFor is role's configuration with one request's overrides applied
// (see [Request.Tier]). A tier override drops the role's own model: a
// request that asks for a tier asks for that tier's model.
func (c Config) roleFor(role, tier, model string) (RoleConfig, error) {
	rc, ok := c.Agents[role]
	if !ok {
		return RoleConfig{}, fmt.Errorf("llm.agents.%s: role not configured", role)
	}
	if tier != "" {
		if _, ok := c.Tiers[tier]; !ok {
			return RoleConfig{}, fmt.Errorf("tier %q asked for by the request is not configured under llm.tiers (have %s)",
				tier, strings.Join(slices.Sorted(maps.Keys(c.Tiers)), ", "))
		}
		rc.Tier, rc.Model = tier, ""
	}
	if model != "" {
		rc.Model = model
	}
	return rc, nil
}

// ownProvider is the provider rc names, or the default provider.
func (c Config) ownProvider(rc RoleConfig) string {
	if rc.Provider != "" {
		return rc.Provider
	}
	return c.DefaultProvider
}

// modelOn returns the model role, configured as rc, uses on provider. The
// model rc names belongs to rc's own provider; on any other provider (the
// fallback) only the tier mapping applies.
func (c Config) modelOn(role string, rc RoleConfig, provider string) (string, error) {
	if rc.Model != "" && provider == c.ownProvider(rc) {
		return rc.Model, nil
	}
	if rc.Tier == "" {
		return "", fmt.Errorf("llm.agents.%s: no tier, and its model does not apply to provider %s", role, provider)
	}
	m := c.Tiers[rc.Tier][provider]
	if m == "" {
		return "", fmt.Errorf("llm.tiers.%s.%s: no model for role %s", rc.Tier, provider, role)
	}
	return m, nil
}

// timeout is the per-attempt bound for provider name.
func (c Config) timeout(name string) time.Duration {
	if t := c.Providers[name].Timeout; t > 0 {
		return t
	}
	return c.Retry.Timeout
}

// Validate checks the configuration and names the offending key in every
// problem it reports.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	providers := slices.Sorted(maps.Keys(c.Providers))
	known := func(name string) bool { _, ok := c.Providers[name]; return ok }

	switch {
	case c.DefaultProvider == "":
		bad("llm.default_provider", "required")
	case !known(c.DefaultProvider):
		bad("llm.default_provider", "provider %q is not configured under llm.providers (have %s)", c.DefaultProvider, strings.Join(providers, ", "))
	}
	switch {
	case c.FallbackProvider == "":
	case !known(c.FallbackProvider):
		bad("llm.fallback_provider", "provider %q is not configured under llm.providers (have %s)", c.FallbackProvider, strings.Join(providers, ", "))
	case c.FallbackProvider == c.DefaultProvider:
		bad("llm.fallback_provider", "same as llm.default_provider; leave it empty for no fallback")
	}

	for _, name := range providers {
		p := c.Providers[name]
		key := "llm.providers." + name
		kind := p.kind(name)
		switch kind {
		case KindOllama, KindOpenAI, KindAnthropic:
		default:
			bad(key+".kind", "unknown kind %q (want ollama, openai or anthropic)", p.Kind)
		}
		if p.APIBase == "" && kind == KindOpenAI && name != KindOpenAI {
			bad(key+".api_base", "required for an OpenAI-compatible provider")
		}
		if p.APIBase != "" {
			if _, err := parseBase(p.APIBase); err != nil {
				bad(key+".api_base", "%v", err)
			}
		}
		if p.Timeout < 0 {
			bad(key+".timeout", "must not be negative")
		}
		if p.NumCtx < 0 {
			bad(key+".num_ctx", "must not be negative")
		}
		if p.MaxTokens < 0 {
			bad(key+".max_tokens", "must not be negative")
		}
	}

	tiers := slices.Sorted(maps.Keys(c.Tiers))
	for _, tier := range tiers {
		for _, prov := range slices.Sorted(maps.Keys(c.Tiers[tier])) {
			key := "llm.tiers." + tier + "." + prov
			model := c.Tiers[tier][prov]
			switch {
			case !known(prov):
				bad(key, "provider %q is not configured under llm.providers", prov)
			case strings.TrimSpace(model) == "":
				bad(key, "empty model name")
			case strings.ContainsAny(model, " \t\n"):
				bad(key, "%q is not a model name (it contains white space)", model)
			}
		}
	}

	for _, role := range slices.Sorted(maps.Keys(c.Agents)) {
		rc := c.Agents[role]
		key := "llm.agents." + role
		if role == RoleEmbed {
			// Not an error: without an embedding model margin searches
			// by keyword, and Embed and ProbeEmbed say why.
			continue
		}
		if rc.Tier == "" && rc.Model == "" {
			bad(key, "needs a tier or a model")
			continue
		}
		if _, ok := c.Tiers[rc.Tier]; rc.Tier != "" && !ok {
			bad(key+".tier", "unknown tier %q (have %s)", rc.Tier, strings.Join(tiers, ", "))
			continue
		}
		if rc.Provider != "" && !known(rc.Provider) {
			bad(key+".provider", "provider %q is not configured under llm.providers", rc.Provider)
			continue
		}
		if _, _, err := c.Resolve(role); err != nil {
			errs = append(errs, err)
		}
		if fb := c.FallbackProvider; fb != "" && known(fb) && fb != c.DefaultProvider {
			if _, err := c.modelOn(role, rc, fb); err != nil {
				errs = append(errs, fmt.Errorf("%w (needed to fall back to %s)", err, fb))
			}
		}
	}

	r := c.Retry
	for key, n := range map[string]int{"llm_retry": r.LLMRetry, "parse_retry": r.ParseRetry, "loop_max": r.LoopMax} {
		if n < 0 {
			bad("llm.retry."+key, "must not be negative")
		}
	}
	if r.Timeout < 0 {
		bad("llm.retry.timeout", "must not be negative")
	}
	if r.Backoff.Initial < 0 || r.Backoff.Max < 0 {
		bad("llm.retry.backoff", "durations must not be negative")
	}
	if r.Backoff.Max < r.Backoff.Initial {
		bad("llm.retry.backoff.max", "%v is below backoff.initial %v", r.Backoff.Max, r.Backoff.Initial)
	}
	for key, n := range map[string]int{"dims": c.Embed.Dims, "batch_size": c.Embed.BatchSize, "num_ctx": c.Embed.NumCtx} {
		if n < 0 {
			bad("llm.embed."+key, "must not be negative")
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// parseBase accepts a base URL with or without scheme, because OLLAMA_HOST
// is commonly written as host:port.
func parseBase(base string) (*url.URL, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", base)
	}
	return u, nil
}
