package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
)

// Models the test configurations map the tiers to.
const (
	ollamaModel = "qwen2.5:7b" // medium, the parser's tier
	openaiModel = "gpt-4o-mini"
	claudeModel = "claude-3-5-haiku-20241022"
	role        = "parser"
)

var tierModels = map[string]map[string]string{
	"ollama":    {"low": "qwen2.5:3b", "medium": ollamaModel, "high": "qwen2.5:14b"},
	"openai":    {"low": openaiModel, "medium": openaiModel, "high": "gpt-4o"},
	"anthropic": {"low": claudeModel, "medium": claudeModel, "high": "claude-sonnet-4-20250514"},
}

// testConfig points the named providers (ollama, openai, anthropic) at the
// given base URLs; def is the default provider, fallback may be "". Retries
// are off and backoffs tiny so tests never sleep for real.
func testConfig(def, fallback string, bases map[string]string) llm.Config {
	cfg := llm.DefaultConfig()
	cfg.DefaultProvider, cfg.FallbackProvider = def, fallback
	cfg.Providers = map[string]llm.ProviderConfig{}
	cfg.Tiers = map[string]map[string]string{"low": {}, "medium": {}, "high": {}}
	for name, base := range bases {
		cfg.Providers[name] = llm.ProviderConfig{APIBase: base, APIKey: "test-key", NumCtx: 4096}
		for tier, m := range tierModels[name] {
			cfg.Tiers[tier][name] = m
		}
	}
	cfg.Retry.LLMRetry = 0
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	cfg.Retry.Timeout = 10 * time.Second
	return cfg
}

func newClient(t *testing.T, cfg llm.Config, opts ...llm.Option) *llm.Client {
	t.Helper()
	c, err := llm.New(cfg, opts...)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return c
}

// closedURL is an address where nothing listens.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(nil)
	srv.Close()
	return srv.URL
}

// ledger is a Recorder that keeps records in memory.
type ledger struct {
	mu      sync.Mutex // guards records
	records []llm.Record
	// onRecord, if set, runs after each record (outside the lock).
	onRecord func(llm.Record)
}

func (l *ledger) Record(_ context.Context, r llm.Record) {
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
	if l.onRecord != nil {
		l.onRecord(r)
	}
}

func (l *ledger) outcomes() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		out = append(out, r.Provider+":"+r.Outcome)
	}
	return out
}

func (l *ledger) all() []llm.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]llm.Record(nil), l.records...)
}

func userAsks(text string) llm.Request {
	return llm.Request{Role: role, System: "You are margin's parser.", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

// keyOrder returns the keys of the JSON object at path (a list of keys)
// inside raw, in the order they appear.
func keyOrder(t *testing.T, raw []byte, path ...string) []string {
	t.Helper()
	for _, key := range path {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("keyOrder: %v", err)
		}
		raw = obj[key]
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("keyOrder: not an object: %s", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("keyOrder: %v", err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("keyOrder: %v", err)
		}
	}
	return keys
}
