package llm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
)

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := llm.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	for _, role := range []string{"router", "planner", "retriever", "analyzer", "synthesizer", "evaluator", "clarifier", "parser", "observer", "task", "evolution"} {
		if _, _, err := cfg.Resolve(role); err != nil {
			t.Errorf("Resolve(%q): %v", role, err)
		}
	}
}

func TestResolve(t *testing.T) {
	base := func() llm.Config {
		cfg := llm.DefaultConfig()
		cfg.Providers["anthropic"] = llm.ProviderConfig{APIKey: "k"}
		cfg.Tiers["high"]["anthropic"] = "claude-sonnet-4-20250514"
		cfg.Tiers["low"]["anthropic"] = "claude-3-haiku-20240307"
		return cfg
	}
	tests := []struct {
		name         string
		role         llm.RoleConfig
		defaultTo    string
		wantProvider string
		wantModel    string
		wantErr      string
	}{
		{name: "tier through default provider", role: llm.RoleConfig{Tier: "low"}, wantProvider: "ollama", wantModel: "qwen2.5:3b"},
		{name: "tier through role provider", role: llm.RoleConfig{Tier: "high", Provider: "anthropic"}, wantProvider: "anthropic", wantModel: "claude-sonnet-4-20250514"},
		{name: "model override on default provider", role: llm.RoleConfig{Tier: "high", Model: "qwen2.5:32b"}, wantProvider: "ollama", wantModel: "qwen2.5:32b"},
		{name: "model and provider override", role: llm.RoleConfig{Provider: "anthropic", Model: "claude-opus-4-1"}, wantProvider: "anthropic", wantModel: "claude-opus-4-1"},
		{name: "default provider changed", role: llm.RoleConfig{Tier: "low"}, defaultTo: "anthropic", wantProvider: "anthropic", wantModel: "claude-3-haiku-20240307"},
		{name: "tier without a model for the provider", role: llm.RoleConfig{Tier: "medium", Provider: "anthropic"}, wantErr: "llm.tiers.medium.anthropic: no model for role r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			cfg.Agents["r"] = tt.role
			if tt.defaultTo != "" {
				cfg.DefaultProvider = tt.defaultTo
			}
			p, m, err := cfg.Resolve("r")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %q, %q, %v; want error %q", p, m, err, tt.wantErr)
				}
				return
			}
			if err != nil || p != tt.wantProvider || m != tt.wantModel {
				t.Fatalf("Resolve = %q, %q, %v; want %q, %q", p, m, err, tt.wantProvider, tt.wantModel)
			}
		})
	}
	t.Run("unknown role", func(t *testing.T) {
		if _, _, err := base().Resolve("nobody"); err == nil || !strings.Contains(err.Error(), "llm.agents.nobody") {
			t.Fatalf("Resolve(nobody) error = %v, want one naming llm.agents.nobody", err)
		}
	})
}

func TestValidateNamesTheKey(t *testing.T) {
	tests := []struct {
		name   string
		change func(*llm.Config)
		want   string
	}{
		{"empty tier model", func(c *llm.Config) { c.Tiers["medium"]["ollama"] = "" }, "llm.tiers.medium.ollama: empty model name"},
		{"model name with spaces", func(c *llm.Config) { c.Tiers["medium"]["ollama"] = "qwen 2.5" }, "llm.tiers.medium.ollama: \"qwen 2.5\" is not a model name"},
		{"tier for unknown provider", func(c *llm.Config) { c.Tiers["low"]["olama"] = "x" }, "llm.tiers.low.olama: provider \"olama\" is not configured"},
		{"unknown default provider", func(c *llm.Config) { c.DefaultProvider = "openai" }, "llm.default_provider: provider \"openai\" is not configured"},
		{"fallback equals default", func(c *llm.Config) { c.FallbackProvider = "ollama" }, "llm.fallback_provider: same as llm.default_provider"},
		{"unknown kind", func(c *llm.Config) { c.Providers["local"] = llm.ProviderConfig{Kind: "gemini", APIBase: "http://x"} }, "llm.providers.local.kind: unknown kind \"gemini\""},
		{"compatible provider without base", func(c *llm.Config) { c.Providers["vllm"] = llm.ProviderConfig{} }, "llm.providers.vllm.api_base: required"},
		{"bad base scheme", func(c *llm.Config) { c.Providers["ollama"] = llm.ProviderConfig{APIBase: "ftp://host"} }, "llm.providers.ollama.api_base: scheme \"ftp\""},
		{"role with unknown tier", func(c *llm.Config) { c.Agents["router"] = llm.RoleConfig{Tier: "tiny"} }, "llm.agents.router.tier: unknown tier \"tiny\""},
		{"role with unknown provider", func(c *llm.Config) { c.Agents["router"] = llm.RoleConfig{Tier: "low", Provider: "x"} }, "llm.agents.router.provider: provider \"x\""},
		{"role with neither tier nor model", func(c *llm.Config) { c.Agents["router"] = llm.RoleConfig{} }, "llm.agents.router: needs a tier or a model"},
		{"fallback without tier models", func(c *llm.Config) {
			c.Providers["anthropic"] = llm.ProviderConfig{APIKey: "k"}
			c.FallbackProvider = "anthropic"
		}, "llm.tiers.high.anthropic: no model for role analyzer (needed to fall back to anthropic)"},
		{"negative retry", func(c *llm.Config) { c.Retry.LLMRetry = -1 }, "llm.retry.llm_retry: must not be negative"},
		{"backoff max below initial", func(c *llm.Config) { c.Retry.Backoff = llm.Backoff{Initial: time.Second, Max: time.Millisecond} }, "llm.retry.backoff.max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := llm.DefaultConfig()
			tt.change(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.want)
			}
			if _, nerr := llm.New(cfg); nerr == nil {
				t.Fatal("New accepted a config Validate rejects")
			}
		})
	}
}

func TestProviderKindFromName(t *testing.T) {
	cfg := llm.DefaultConfig()
	cfg.Providers["openrouter"] = llm.ProviderConfig{APIBase: "https://openrouter.ai/api/v1", APIKey: "k"}
	cfg.Providers["anthropic"] = llm.ProviderConfig{APIKey: "k"}
	cfg.Providers["openai"] = llm.ProviderConfig{APIKey: "k"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate() = %v; openai needs no api_base, anthropic is a known kind", err)
	}
	if _, err := llm.New(cfg); err != nil {
		t.Fatalf("New: %v", err)
	}
}
