package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

func TestChatStreamsFromOllama(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: "three logged sets of squats", Chunks: 5, CompletionTokens: 7, PromptTokens: 31})
	rec := &ledger{}
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}), llm.WithRecorder(rec))

	resp, err := c.Chat(t.Context(), userAsks("what did I log?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "three logged sets of squats" || resp.Message.Role != llm.RoleAssistant {
		t.Errorf("message = %+v", resp.Message)
	}
	if resp.Provider != "ollama" || resp.Model != ollamaModel || resp.DoneReason != "stop" {
		t.Errorf("provider, model, done = %q, %q, %q", resp.Provider, resp.Model, resp.DoneReason)
	}
	if resp.Usage.PromptTokens != 31 || resp.Usage.CompletionTokens != 7 || resp.Usage.PromptEstimate == 0 {
		t.Errorf("usage = %+v", resp.Usage)
	}

	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.Stream != nil {
		t.Errorf("stream = %v, want absent (streaming)", *got.Stream)
	}
	if got.Messages[0].Role != "system" || got.Messages[0].Content != "You are margin's parser." || got.Messages[1].Content != "what did I log?" {
		t.Errorf("messages = %+v", got.Messages)
	}
	if len(got.Format) != 0 || len(got.Tools) != 0 {
		t.Errorf("format %s, tools %v on a plain chat", got.Format, got.Tools)
	}

	recs := rec.all()
	if len(recs) != 1 {
		t.Fatalf("records = %+v", recs)
	}
	r := recs[0]
	if r.Role != role || r.Provider != "ollama" || r.Model != ollamaModel || r.Outcome != "ok" || r.PromptTokens != 31 ||
		r.CompletionTokens != 7 || r.PromptEstimate == 0 || r.Latency <= 0 || r.DoneReason != "stop" || r.Time.IsZero() {
		t.Errorf("record = %+v", r)
	}
}

func TestNumCtxAlwaysSent(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: `{"ok":true}`} })
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))

	if _, err := c.Chat(t.Context(), userAsks("plain")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := llm.Structured[struct {
		OK bool `json:"ok"`
	}](t.Context(), c, userAsks("structured")); err != nil {
		t.Fatal(err)
	}
	box := toolbox(t, &reportTool{})
	if _, err := llm.RunTools(t.Context(), c, userAsks("tools"), box, llm.Loop{}); err != nil {
		t.Fatal(err)
	}
	override := userAsks("bigger window")
	override.Options.NumCtx = 16384
	if _, err := c.Chat(t.Context(), override); err != nil {
		t.Fatal(err)
	}

	want := []int{4096, 4096, 4096, 16384}
	var got []int
	for _, r := range fake.Requests() {
		got = append(got, r.NumCtx())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("num_ctx per request = %v, want %v", got, want)
	}
}

func TestFormatNeverSentWithTools(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	req := userAsks("both")
	req.Tools = toolbox(t, &reportTool{}).Specs()
	req.Schema = reportSchema()
	if _, err := c.Chat(t.Context(), req); err == nil || !strings.Contains(err.Error(), "both a schema and tools") {
		t.Fatalf("Chat with schema and tools: err = %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
}

// TestErrorClasses checks that each provider's real failures map to the
// right Class and an actionable Fix.
func TestErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		// setup returns the provider's base URL.
		setup   func(t *testing.T) string
		timeout time.Duration
		want    llm.Class
		fix     string
	}{
		{
			name: "ollama unreachable", provider: "ollama",
			setup: closedURL, want: llm.ErrUnreachable, fix: "is `ollama serve` running at http://127.0.0.1:",
		},
		{
			name: "ollama model not pulled", provider: "ollama",
			setup: func(t *testing.T) string { return llmtest.NewOllama(t, "qwen2.5:3b").URL },
			want:  llm.ErrModelMissing, fix: "run `ollama pull qwen2.5:7b`",
		},
		{
			name: "ollama slow reply", provider: "ollama", timeout: 30 * time.Millisecond,
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Content: "late", Delay: time.Minute})
				return f.URL
			},
			want: llm.ErrTimeout, fix: "raise llm.retry.timeout",
		},
		{
			name: "ollama stalls mid-stream", provider: "ollama", timeout: 30 * time.Millisecond,
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Content: "a long answer", StallAfter: 1})
				return f.URL
			},
			want: llm.ErrTimeout, fix: "raise llm.retry.timeout",
		},
		{
			name: "ollama context too long", provider: "ollama",
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Status: http.StatusBadRequest, Error: "the input length exceeds the context length"})
				return f.URL
			},
			want: llm.ErrContextTooLong, fix: "raise llm.providers.ollama.num_ctx",
		},
		{
			name: "ollama server error", provider: "ollama",
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Status: http.StatusInternalServerError, Error: "llama runner process has terminated"})
				return f.URL
			},
			want: llm.ErrServer, fix: "see the ollama server's logs",
		},
		{
			name: "ollama stream cut", provider: "ollama",
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Content: "half an answer", CutAfter: 2})
				return f.URL
			},
			want: llm.ErrIncomplete,
		},
		{
			name: "ollama error mid-stream", provider: "ollama",
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Content: "half", StreamError: "an error was encountered while running the model"})
				return f.URL
			},
			want: llm.ErrServer,
		},
		{
			name: "ollama rate limit", provider: "ollama",
			setup: func(t *testing.T) string {
				f := llmtest.NewOllama(t, ollamaModel)
				f.Script(llmtest.Reply{Status: http.StatusTooManyRequests, Error: "too many requests"})
				return f.URL
			},
			want: llm.ErrRateLimited,
		},
		{
			name: "openai auth", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Status: http.StatusUnauthorized, Error: "Incorrect API key provided"})
				return f.URL
			},
			want: llm.ErrAuth, fix: "set OPENAI_API_KEY (llm.providers.openai.api_key)",
		},
		{
			name: "openai rate limit", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Status: http.StatusTooManyRequests, Error: "Rate limit reached", RetryAfter: 20 * time.Second})
				return f.URL
			},
			want: llm.ErrRateLimited, fix: "lower agents.concurrency",
		},
		{
			name: "openai unknown model", provider: "openai",
			setup: func(t *testing.T) string { return llmtest.NewOpenAI(t, "gpt-4o").URL },
			want:  llm.ErrModelMissing, fix: `serves model "gpt-4o-mini"`,
		},
		{
			name: "openai context too long", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Status: http.StatusBadRequest, Error: "This model's maximum context length is 128000 tokens."})
				return f.URL
			},
			want: llm.ErrContextTooLong,
		},
		{
			name: "openai bad request", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Status: http.StatusBadRequest, Error: "Invalid value for 'temperature'"})
				return f.URL
			},
			want: llm.ErrRejected,
		},
		{
			name: "openai error mid-stream", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Content: "partial", StreamError: "The server had an error"})
				return f.URL
			},
			want: llm.ErrServer,
		},
		{
			name: "openai stream cut", provider: "openai",
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Content: "partial answer", CutAfter: 2})
				return f.URL
			},
			want: llm.ErrIncomplete,
		},
		{
			name: "openai unreachable", provider: "openai",
			setup: closedURL, want: llm.ErrUnreachable, fix: "check llm.providers.openai.api_base",
		},
		{
			name: "openai slow reply", provider: "openai", timeout: 30 * time.Millisecond,
			setup: func(t *testing.T) string {
				f := llmtest.NewOpenAI(t, openaiModel)
				f.Script(llmtest.Reply{Content: "late", Delay: time.Minute})
				return f.URL
			},
			want: llm.ErrTimeout,
		},
		{
			name: "anthropic unreachable", provider: "anthropic",
			setup: closedURL, want: llm.ErrUnreachable, fix: "check llm.providers.anthropic.api_base",
		},
		{
			name: "anthropic stalls mid-stream", provider: "anthropic", timeout: 30 * time.Millisecond,
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Content: "a long answer", StallAfter: 3})
				return f.URL
			},
			want: llm.ErrTimeout,
		},
		{
			name: "anthropic stream cut", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Content: "a long answer", CutAfter: 4})
				return f.URL
			},
			want: llm.ErrIncomplete,
		},
		{
			name: "anthropic auth", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Status: http.StatusUnauthorized, Error: "invalid x-api-key"})
				return f.URL
			},
			want: llm.ErrAuth, fix: "set ANTHROPIC_API_KEY",
		},
		{
			name: "anthropic overloaded", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Status: 529, Error: "Overloaded"})
				return f.URL
			},
			want: llm.ErrServer,
		},
		{
			name: "anthropic prompt too long", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Status: http.StatusBadRequest, Error: "prompt is too long: 250000 tokens > 200000 maximum"})
				return f.URL
			},
			want: llm.ErrContextTooLong,
		},
		{
			name: "anthropic rate limit", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Status: http.StatusTooManyRequests, Error: "Number of request tokens has exceeded your per-minute rate limit"})
				return f.URL
			},
			want: llm.ErrRateLimited,
		},
		{
			name: "anthropic unknown model", provider: "anthropic",
			setup: func(t *testing.T) string { return llmtest.NewAnthropic(t, "claude-sonnet-4-20250514").URL },
			want:  llm.ErrModelMissing,
		},
		{
			name: "anthropic overloaded mid-stream", provider: "anthropic",
			setup: func(t *testing.T) string {
				f := llmtest.NewAnthropic(t, claudeModel)
				f.Script(llmtest.Reply{Content: "partial", StreamError: "Overloaded"})
				return f.URL
			},
			want: llm.ErrServer,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(tt.provider, "", map[string]string{tt.provider: tt.setup(t)})
			if tt.timeout > 0 {
				cfg.Retry.Timeout = tt.timeout
			}
			rec := &ledger{}
			c := newClient(t, cfg, llm.WithRecorder(rec))
			_, err := c.Chat(t.Context(), userAsks("hello"))
			if !errors.Is(err, llm.ErrUnavailable) || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want unavailable because %s", err, tt.want)
			}
			var ce *llm.CallError
			if !errors.As(err, &ce) || ce.Class != tt.want || ce.Provider != tt.provider {
				t.Fatalf("CallError = %+v", ce)
			}
			if !strings.Contains(llm.Fix(err), tt.fix) {
				t.Errorf("Fix = %q, want it to contain %q", llm.Fix(err), tt.fix)
			}
			if got, want := rec.outcomes(), []string{tt.provider + ":" + string(tt.want)}; !slices.Equal(got, want) {
				t.Errorf("records = %v, want %v", got, want)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(
		llmtest.Reply{Status: http.StatusInternalServerError, Error: "model runner crashed"},
		llmtest.Reply{Content: "cut short", CutAfter: 1},
		llmtest.Reply{Content: "finally"},
	)
	cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
	cfg.Retry.LLMRetry = 3
	rec := &ledger{}
	c := newClient(t, cfg, llm.WithRecorder(rec))

	resp, err := c.Chat(t.Context(), userAsks("hi"))
	if err != nil || resp.Message.Content != "finally" {
		t.Fatalf("Chat = %q, %v", resp.Message.Content, err)
	}
	if got, want := rec.outcomes(), []string{"ollama:server", "ollama:incomplete", "ollama:ok"}; !slices.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	for i, r := range rec.all() {
		if r.Attempt != i || r.Fallback {
			t.Errorf("record %d: attempt %d fallback %v", i, r.Attempt, r.Fallback)
		}
	}
}

func TestNoRetryForPermanentFailures(t *testing.T) {
	fake := llmtest.NewOllama(t) // nothing pulled
	cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
	cfg.Retry.LLMRetry = 3
	c := newClient(t, cfg)
	if _, err := c.Chat(t.Context(), userAsks("hi")); !errors.Is(err, llm.ErrModelMissing) {
		t.Fatalf("err = %v", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Fatalf("a missing model was asked %d times", n)
	}
}

func TestLongRetryAfterGoesToFallback(t *testing.T) {
	primary := llmtest.NewOpenAI(t, openaiModel)
	primary.Script(llmtest.Reply{Status: http.StatusTooManyRequests, Error: "slow down", RetryAfter: 30 * time.Second})
	fallback := llmtest.NewAnthropic(t, claudeModel)
	fallback.Script(llmtest.Reply{Content: "from claude"})
	cfg := testConfig("openai", "anthropic", map[string]string{"openai": primary.URL, "anthropic": fallback.URL})
	cfg.Retry.LLMRetry = 3
	c := newClient(t, cfg)

	start := time.Now()
	resp, err := c.Chat(t.Context(), userAsks("hi"))
	if err != nil || resp.Provider != "anthropic" || resp.Message.Content != "from claude" {
		t.Fatalf("Chat = %+v, %v", resp, err)
	}
	if n := len(primary.Requests()); n != 1 {
		t.Errorf("primary asked %d times despite Retry-After beyond backoff.max", n)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("waited for Retry-After")
	}
}

func TestFallbackToOpenAICompatible(t *testing.T) {
	local := llmtest.NewOllama(t, ollamaModel) // the override below is not pulled
	cloud := llmtest.NewOpenAI(t, openaiModel)
	cloud.Script(llmtest.Reply{Content: "answered by the fallback"})
	cfg := testConfig("ollama", "openai", map[string]string{"ollama": local.URL, "openai": cloud.URL})
	cfg.Agents[role] = llm.RoleConfig{Tier: "medium", Model: "qwen2.5:7b-instruct-q8_0"}
	rec := &ledger{}
	c := newClient(t, cfg, llm.WithRecorder(rec))

	resp, err := c.Chat(t.Context(), userAsks("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Provider != "openai" || resp.Model != openaiModel || resp.Message.Content != "answered by the fallback" {
		t.Fatalf("resp = %+v", resp)
	}
	if got := local.Requests()[0].Model; got != "qwen2.5:7b-instruct-q8_0" {
		t.Errorf("ollama asked for %q, want the role's override", got)
	}
	// The override belongs to ollama; the fallback uses its tier model.
	if got := cloud.Requests()[0].Model; got != openaiModel {
		t.Errorf("fallback asked for %q, want %q", got, openaiModel)
	}
	if got, want := rec.outcomes(), []string{"ollama:model_missing", "openai:ok"}; !slices.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	if r := rec.all()[1]; !r.Fallback || r.Model != openaiModel {
		t.Errorf("fallback record = %+v", r)
	}
}

// A request's Tier and Model choose the model for that call: the tier's
// model on every provider of the cascade, the model on the role's own
// provider only.
func TestRequestOverridesTierAndModel(t *testing.T) {
	tests := []struct {
		name        string
		tier, model string
		roleModel   string // llm.agents.parser.model
		fallback    string // the fallback provider, when ollama fails
		// wantOllama is the model ollama is asked for; wantFallback the
		// fallback's, "" when ollama answers.
		wantOllama, wantFallback string
	}{
		{name: "as configured", wantOllama: ollamaModel},
		{name: "tier high", tier: "high", wantOllama: "qwen2.5:14b"},
		{name: "model", model: "qwen3:32b", wantOllama: "qwen3:32b"},
		{name: "model wins over tier on the own provider", tier: "low", model: "qwen3:32b", wantOllama: "qwen3:32b"},
		{name: "tier replaces the role's model", tier: "high", roleModel: "qwen2.5:7b-instruct-q8_0", wantOllama: "qwen2.5:14b"},
		{name: "model falls back to openai's tier model", model: "qwen3:32b", fallback: "openai", wantOllama: "qwen3:32b", wantFallback: openaiModel},
		{name: "tier high falls back to openai's high model", tier: "high", fallback: "openai", wantOllama: "qwen2.5:14b", wantFallback: "gpt-4o"},
		{name: "tier and model fall back to anthropic's tier model", tier: "high", model: "qwen3:32b", fallback: "anthropic",
			wantOllama: "qwen3:32b", wantFallback: "claude-sonnet-4-20250514"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pulled := []string{tt.wantOllama}
			if tt.wantFallback != "" {
				pulled = nil // ollama answers 404, the cascade moves on
			}
			local := llmtest.NewOllama(t, pulled...)
			local.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
			cloud := llmtest.NewOpenAI(t, openaiModel, "gpt-4o")
			cloud.Handle(func(llmtest.OpenAIRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
			claude := llmtest.NewAnthropic(t, claudeModel, "claude-sonnet-4-20250514")
			claude.Handle(func(llmtest.AnthropicRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
			cfg := testConfig("ollama", tt.fallback, map[string]string{"ollama": local.URL, "openai": cloud.URL, "anthropic": claude.URL})
			cfg.Agents[role] = llm.RoleConfig{Tier: "medium", Model: tt.roleModel}
			rec := &ledger{}
			c := newClient(t, cfg, llm.WithRecorder(rec))

			req := userAsks("hi")
			req.Tier, req.Model = tt.tier, tt.model
			resp, err := c.Chat(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}

			var asked []string
			for _, r := range local.Requests() {
				asked = append(asked, "ollama:"+r.Model)
			}
			for _, r := range cloud.Requests() {
				asked = append(asked, "openai:"+r.Model)
			}
			for _, r := range claude.Requests() {
				asked = append(asked, "anthropic:"+r.Model)
			}
			var recorded []string
			for _, r := range rec.all() {
				recorded = append(recorded, r.Provider+":"+r.Model)
			}
			want, used := []string{"ollama:" + tt.wantOllama}, tt.wantOllama
			if tt.wantFallback != "" {
				want, used = append(want, tt.fallback+":"+tt.wantFallback), tt.wantFallback
			}
			if !slices.Equal(asked, want) {
				t.Errorf("models asked for = %v, want %v", asked, want)
			}
			if !slices.Equal(recorded, want) {
				t.Errorf("ledger records = %v, want %v", recorded, want)
			}
			if resp.Model != used {
				t.Errorf("response model = %q, want %q", resp.Model, used)
			}
		})
	}
}

func TestRequestUnknownTier(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	req := userAsks("hi")
	req.Tier = "ultra"
	_, err := c.Chat(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), `tier "ultra"`) {
		t.Fatalf("err = %v, want one that names the tier", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
}

func TestUnavailableWhenAllFail(t *testing.T) {
	cloud := llmtest.NewOpenAI(t, openaiModel)
	cloud.Handle(func(llmtest.OpenAIRequest) llmtest.Reply {
		return llmtest.Reply{Status: http.StatusServiceUnavailable, Error: "upstream down"}
	})
	cfg := testConfig("ollama", "openai", map[string]string{"ollama": closedURL(t), "openai": cloud.URL})
	cfg.Retry.LLMRetry = 1
	rec := &ledger{}
	c := newClient(t, cfg, llm.WithRecorder(rec))

	_, err := c.Chat(t.Context(), userAsks("hi"))
	var ue *llm.UnavailableError
	if !errors.As(err, &ue) || ue.Role != role || len(ue.Reasons) != 2 {
		t.Fatalf("err = %v, want UnavailableError with two reasons", err)
	}
	for _, class := range []llm.Class{llm.ErrUnavailable, llm.ErrUnreachable, llm.ErrServer} {
		if !errors.Is(err, class) {
			t.Errorf("errors.Is(err, %s) = false", class)
		}
	}
	if !strings.Contains(llm.Fix(err), "ollama serve") {
		t.Errorf("Fix = %q", llm.Fix(err))
	}
	// A refused connection is not retried (nothing listens); the 503 is.
	if got, want := rec.outcomes(), []string{"ollama:unreachable", "openai:server", "openai:server"}; !slices.Equal(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
}

// A refused connection ends the call on that provider at once: retrying
// it within the call only made `margin ask` wait out the backoff (3.5 s
// by default) before degrading. A 5xx is still retried.
func TestRefusedConnectionIsNotRetried(t *testing.T) {
	cfg := testConfig("ollama", "", map[string]string{"ollama": closedURL(t)})
	cfg.Retry = llm.DefaultConfig().Retry // llm_retry 3, backoff from 0.5 s
	rec := &ledger{}
	c := newClient(t, cfg, llm.WithRecorder(rec))
	start := time.Now()
	_, err := c.Chat(t.Context(), userAsks("hi"))
	t.Logf("refused connection: the call failed after %s", time.Since(start))
	if !llm.Away(err) {
		t.Fatalf("err = %v, want the model away", err)
	}
	if got := rec.outcomes(); !slices.Equal(got, []string{"ollama:unreachable"}) {
		t.Errorf("attempts = %v, want one: a refused connection is not retried", got)
	}
}

func TestCancelMidStream(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	ctx, cancel := context.WithCancel(t.Context())
	fake.Script(llmtest.Reply{Content: "a long, long answer", Chunks: 6, StallAfter: 2, OnStall: cancel})
	cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
	cfg.Retry.LLMRetry = 3
	rec := &ledger{}
	c := newClient(t, cfg, llm.WithRecorder(rec))

	_, err := c.Chat(ctx, userAsks("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if errors.Is(err, llm.ErrUnavailable) {
		t.Error("a cancelled call reported the model unavailable")
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests; a cancelled call must not be retried", n)
	}
	if got := rec.outcomes(); !slices.Equal(got, []string{"ollama:canceled"}) {
		t.Errorf("outcomes = %v", got)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
		return llmtest.Reply{Status: http.StatusInternalServerError, Error: "boom"}
	})
	cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
	cfg.Retry.LLMRetry = 3
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Hour, Max: time.Hour}
	ctx, cancel := context.WithCancel(t.Context())
	rec := &ledger{onRecord: func(llm.Record) { cancel() }}
	c := newClient(t, cfg, llm.WithRecorder(rec))

	done := make(chan error, 1)
	go func() { _, err := c.Chat(ctx, userAsks("hi")); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Chat kept waiting out the backoff after cancellation")
	}
}

func TestTruncationFlagged(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		reply  llmtest.Reply
		want   bool
	}{
		// 8000 characters ≈ 2000 tokens against num_ctx 1024: the fake,
		// like a truncating server, reports at most num_ctx.
		{"prompt beyond num_ctx", strings.Repeat("word ", 1600), llmtest.Reply{Content: "ok"}, true},
		// A cached prefix on an older server: few evaluated tokens, but the
		// prompt fits, so nothing was cut.
		{"small count from the KV cache", strings.Repeat("word ", 600), llmtest.Reply{Content: "ok", PromptTokens: 12}, false},
		{"prompt that fits", "short", llmtest.Reply{Content: "ok"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, ollamaModel)
			fake.Script(tt.reply)
			cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
			pc := cfg.Providers["ollama"]
			pc.NumCtx = 1024
			cfg.Providers["ollama"] = pc
			rec := &ledger{}
			c := newClient(t, cfg, llm.WithRecorder(rec))
			resp, err := c.Chat(t.Context(), userAsks(tt.prompt))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage.Truncated != tt.want || rec.all()[0].Truncated != tt.want {
				t.Fatalf("truncated = %v (record %v), want %v; usage %+v", resp.Usage.Truncated, rec.all()[0].Truncated, tt.want, resp.Usage)
			}
		})
	}
}

func TestOllamaToolCallArgumentsKeepOrder(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_7", Name: "set", Args: json.RawMessage(`{"zeta":1,"alpha":"a","mid":[2,1]}`)}}})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	req := userAsks("go")
	req.Tools = toolbox(t, &reportTool{}).Specs()
	resp, err := c.Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 1 || calls[0].ID != "call_7" || calls[0].Name != "set" {
		t.Fatalf("tool calls = %+v", calls)
	}
	if got := string(calls[0].Args); got != `{"zeta":1,"alpha":"a","mid":[2,1]}` {
		t.Fatalf("args = %s, want the model's order", got)
	}
	// Tool properties reach Ollama in struct order (tldr before content),
	// not sorted.
	var props []string
	for name := range fake.Requests()[0].Tools[0].Function.Parameters.Properties.All() {
		props = append(props, name)
	}
	if !slices.Equal(props, []string{"tldr", "content"}) {
		t.Fatalf("tool properties on the wire = %v, want [tldr content]", props)
	}
}

func TestOpenAICompatibleEndpoints(t *testing.T) {
	tests := []struct {
		name       string
		provider   llm.ProviderConfig
		wantHeader map[string]string
		wantQuery  string
	}{
		{"azure v1 endpoint", llm.ProviderConfig{APIKey: "az-key", APIVersion: "2024-06-01"},
			map[string]string{"Api-Key": "az-key", "Authorization": "Bearer az-key"}, "2024-06-01"},
		{"local vllm without a key", llm.ProviderConfig{}, map[string]string{"Authorization": ""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewOpenAI(t, "served-model")
			fake.Script(llmtest.Reply{Content: "hi"})
			cfg := llm.DefaultConfig()
			tt.provider.APIBase = fake.URL
			cfg.Providers = map[string]llm.ProviderConfig{"local": tt.provider}
			cfg.DefaultProvider = "local"
			cfg.Tiers = map[string]map[string]string{"low": {"local": "served-model"}, "medium": {"local": "served-model"}, "high": {"local": "served-model"}}
			c := newClient(t, cfg)
			if _, err := c.Chat(t.Context(), userAsks("hi")); err != nil {
				t.Fatal(err)
			}
			req := fake.Requests()[0]
			for k, v := range tt.wantHeader {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if got := req.Query.Get("api-version"); got != tt.wantQuery {
				t.Errorf("api-version = %q, want %q", got, tt.wantQuery)
			}
		})
	}
}
