package llm_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

const cloudEmbedModel = "text-embedding-3-small"

// embedConfig is the default configuration with Ollama at ollamaURL and,
// when fallback is not "", that provider (openai or anthropic) at
// fallbackURL as the fallback. Retries are off and backoffs tiny.
func embedConfig(ollamaURL, fallback, fallbackURL string) llm.Config {
	cfg := llm.DefaultConfig()
	cfg.Providers[llm.KindOllama] = llm.ProviderConfig{APIBase: ollamaURL, NumCtx: 4096}
	if fallback != "" {
		cfg.FallbackProvider = fallback
		cfg.Providers[fallback] = llm.ProviderConfig{APIBase: fallbackURL, APIKey: "test-key"}
		for tier := range cfg.Tiers {
			cfg.Tiers[tier][fallback] = tierModels[fallback]["low"]
		}
		if fallback == llm.KindOpenAI {
			cfg.Tiers[llm.RoleEmbed][fallback] = cloudEmbedModel
		}
	}
	cfg.Retry.LLMRetry = 0
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond}
	cfg.Retry.Timeout = 10 * time.Second
	return cfg
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// unitOf is v scaled to length 1, as the client returns vectors.
func unitOf(v []float32) []float32 {
	n := norm(v)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

func TestEmbedBatchesNormalisesAndRecords(t *testing.T) {
	srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	cfg := embedConfig(srv.URL, "", "")
	cfg.Embed.BatchSize = 3
	var l ledger
	c := newClient(t, cfg, llm.WithRecorder(&l))

	texts := []string{"I slept badly", "Garden plans", "수면 기록", "Budget for May", "Running log", "Links between notes", "Schlaf"}
	got, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != "ollama" || got.Model != llm.DefaultEmbedModel || got.Dims != 768 || len(got.Vectors) != len(texts) {
		t.Fatalf("got %s/%s@%d with %d vectors, want ollama/%s@768 with %d", got.Provider, got.Model, got.Dims, len(got.Vectors), llm.DefaultEmbedModel, len(texts))
	}
	for i, v := range got.Vectors {
		if math.Abs(norm(v)-1) > 1e-5 {
			t.Errorf("vector %d has length %v, want 1", i, norm(v))
		}
		// Each vector is the text's own, in order: the fake's vector of
		// the prefixed text.
		want := srv.Embedder.Vector("title: none | text: " + texts[i])
		if d := dot(v, want); d < 0.9999 {
			t.Errorf("vector %d is not its text's (cosine %v)", i, d)
		}
	}

	calls := srv.Embedder.Calls()
	var sizes []int
	for _, call := range calls {
		sizes = append(sizes, len(call.Input))
		if call.Truncate == nil || *call.Truncate {
			t.Errorf("truncate on the wire is %v, want false", call.Truncate)
		}
		if call.NumCtx != 2048 {
			t.Errorf("num_ctx on the wire is %d, want embeddinggemma's 2048", call.NumCtx)
		}
	}
	if want := []int{3, 3, 1}; !equalInts(sizes, want) {
		t.Errorf("batches of %v, want %v", sizes, want)
	}
	if got.PromptTokens != srv.Embedder.Tokens() || got.PromptTokens == 0 {
		t.Errorf("PromptTokens = %d, the server counted %d", got.PromptTokens, srv.Embedder.Tokens())
	}

	recs := l.all()
	if len(recs) != 3 {
		t.Fatalf("%d records, want one per batch: %+v", len(recs), recs)
	}
	tokens, inputs := 0, 0
	for _, r := range recs {
		if r.Role != llm.RoleEmbed || r.Outcome != "ok" || r.Model != llm.DefaultEmbedModel || r.PromptEstimate == 0 {
			t.Errorf("record %+v", r)
		}
		tokens += r.PromptTokens
		inputs += r.Inputs
	}
	if tokens != got.PromptTokens || inputs != len(texts) {
		t.Errorf("records count %d tokens and %d inputs, want %d and %d", tokens, inputs, got.PromptTokens, len(texts))
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEmbedPrefixesReachTheWire(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		kind   llm.EmbedKind
		titles []string
		want   string
	}{
		{"embeddinggemma document with its title", "embeddinggemma", llm.EmbedDocument, []string{"Sleep log › May"}, "title: Sleep log › May | text: slept six hours"},
		{"embeddinggemma document without a title", "embeddinggemma:latest", llm.EmbedDocument, nil, "title: none | text: slept six hours"},
		{"embeddinggemma query", "embeddinggemma", llm.EmbedQuery, nil, "task: search result | query: slept six hours"},
		{"qwen3-embedding query is instructed", "qwen3-embedding:0.6b", llm.EmbedQuery, nil, "Instruct: Given a question, retrieve the notes that answer it\nQuery:slept six hours"},
		{"qwen3-embedding document goes bare but for its title", "qwen3-embedding:0.6b", llm.EmbedDocument, []string{"Sleep log"}, "Sleep log\n\nslept six hours"},
		{"nomic-embed-text query", "nomic-embed-text", llm.EmbedQuery, nil, "search_query: slept six hours"},
		{"unknown model gets the text as is", "my-embedder", llm.EmbedQuery, nil, "slept six hours"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOllama(t, tt.model)
			cfg := embedConfig(srv.URL, "", "")
			cfg.Tiers[llm.RoleEmbed][llm.KindOllama] = tt.model
			c := newClient(t, cfg)
			if _, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"slept six hours"}, Kind: tt.kind, Titles: tt.titles}); err != nil {
				t.Fatal(err)
			}
			calls := srv.Embedder.Calls()
			if len(calls) != 1 || len(calls[0].Input) != 1 || calls[0].Input[0] != tt.want {
				t.Fatalf("sent %+v, want input %q", calls, tt.want)
			}
		})
	}
}

func TestEmbedDims(t *testing.T) {
	srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	cfg := embedConfig(srv.URL, "", "")
	cfg.Embed.Dims = 256
	c := newClient(t, cfg)
	m, err := c.EmbedModel()
	if err != nil || m.Dims != 256 || m.Fingerprint() != "ollama/embeddinggemma@256" {
		t.Fatalf("EmbedModel = %+v, %v; want 256 dimensions", m, err)
	}
	got, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"garden plans"}, Kind: llm.EmbedQuery})
	if err != nil {
		t.Fatal(err)
	}
	v := got.Vectors[0]
	if len(v) != 256 || got.Dims != 256 || got.Fingerprint() != m.Fingerprint() {
		t.Fatalf("got %d values, Dims %d, fingerprint %s; want 256 and %s", len(v), got.Dims, got.Fingerprint(), m.Fingerprint())
	}
	if math.Abs(norm(v)-1) > 1e-5 {
		t.Errorf("cut vector has length %v, want 1 again", norm(v))
	}
	full := srv.Embedder.Vector("task: search result | query: garden plans")
	if d := dot(v, unitOf(full[:256])); d < 0.9999 {
		t.Errorf("cut vector is not the first 256 values of the model's (cosine %v)", d)
	}

	cfg.Embed.Dims = 1000
	_, err = newClient(t, cfg).Embed(context.Background(), llm.EmbedRequest{Texts: []string{"garden"}})
	if !errors.Is(err, llm.ErrRejected) || !strings.Contains(err.Error(), "768 dimensions") {
		t.Fatalf("dims above the model's: %v, want a rejected call naming 768 dimensions", err)
	}
}

func TestEmbedTooLongIsTheCallersError(t *testing.T) {
	ollama := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	ollama.Embedder.SetContext(16)
	cloud := llmtest.NewOpenAI(t, cloudEmbedModel)
	var l ledger
	c := newClient(t, embedConfig(ollama.URL, llm.KindOpenAI, cloud.URL), llm.WithRecorder(&l))

	texts := []string{"short", strings.Repeat("a long section about sleep ", 10), "short too"}
	_, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: texts})
	if !errors.Is(err, llm.ErrContextTooLong) || errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want context too long and not unavailable", err)
	}
	if fix := llm.Fix(err); !strings.Contains(fix, "at most 2028 tokens") {
		t.Errorf("fix %q does not say how long a text may be", fix)
	}
	if n := len(ollama.Embedder.Calls()); n != 1 {
		t.Errorf("%d calls to Ollama, want 1: a text too long is not retried", n)
	}
	if calls := cloud.Embedder.Calls(); len(calls) != 0 {
		t.Errorf("the fallback was asked %d times; a too-long text is the caller's to split", len(calls))
	}
	if got := l.outcomes(); len(got) != 1 || got[0] != "ollama:context_too_long" {
		t.Errorf("records %v", got)
	}

	// With Ollama's default (truncate absent) the fake cuts the text, as
	// the real server does: the truncate:false on the wire is what makes
	// the error above.
	ollama.Embedder.SetContext(0)
	if _, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: texts}); err != nil {
		t.Fatalf("texts that fit: %v", err)
	}
}

func TestEmbedFallsBackToOpenAI(t *testing.T) {
	ollama := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	ollama.Stop()
	cloud := llmtest.NewOpenAI(t, cloudEmbedModel)
	var l ledger
	c := newClient(t, embedConfig(ollama.URL, llm.KindOpenAI, cloud.URL), llm.WithRecorder(&l))

	got, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep", "Schlaf", "garden"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != llm.KindOpenAI || got.Model != cloudEmbedModel || got.Dims != 1536 {
		t.Fatalf("got %s, want openai/%s@1536", got.Fingerprint(), cloudEmbedModel)
	}
	for i, v := range got.Vectors {
		// The fake sends vectors three times unit length.
		if math.Abs(norm(v)-1) > 1e-5 {
			t.Errorf("vector %d has length %v, want 1", i, norm(v))
		}
	}
	if near, far := dot(got.Vectors[0], got.Vectors[1]), dot(got.Vectors[0], got.Vectors[2]); near <= far {
		t.Errorf("sleep·Schlaf = %v is not above sleep·garden = %v", near, far)
	}
	recs := l.all()
	if len(recs) != 2 || recs[0].Outcome != string(llm.ErrUnreachable) || recs[1].Outcome != "ok" || !recs[1].Fallback || recs[1].Inputs != 3 || recs[1].PromptTokens == 0 {
		t.Fatalf("records %+v, want ollama unreachable then openai ok as fallback", recs)
	}
}

func TestEmbedOffline(t *testing.T) {
	t.Run("ollama not running", func(t *testing.T) {
		c := newClient(t, embedConfig(closedURL(t), "", ""))
		_, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrUnavailable) || !errors.Is(err, llm.ErrUnreachable) || !llm.Away(err) {
			t.Fatalf("err = %v, want unavailable, unreachable and away", err)
		}
	})
	t.Run("model not pulled", func(t *testing.T) {
		srv := llmtest.NewOllama(t, "qwen2.5:7b")
		c := newClient(t, embedConfig(srv.URL, "", ""))
		_, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrModelMissing) || !llm.Away(err) || llm.Fix(err) != "run `ollama pull embeddinggemma`" {
			t.Fatalf("err = %v (fix %q), want model missing with the pull to run", err, llm.Fix(err))
		}
	})
	t.Run("anthropic fallback is skipped", func(t *testing.T) {
		claude := llmtest.NewAnthropic(t)
		c := newClient(t, embedConfig(closedURL(t), llm.KindAnthropic, claude.URL))
		_, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "anthropic has no embeddings API") || !llm.Away(err) {
			t.Fatalf("err = %v, want unavailable, saying anthropic cannot embed, and away (Ollama may come back)", err)
		}
		if n := len(claude.Requests()); n != 0 {
			t.Errorf("%d requests to Anthropic", n)
		}
	})
	t.Run("server error is retried then unavailable", func(t *testing.T) {
		srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
		srv.Embedder.Fail(http.StatusInternalServerError, "runner crashed")
		cfg := embedConfig(srv.URL, "", "")
		cfg.Retry.LLMRetry = 2
		_, err := newClient(t, cfg).Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrUnavailable) || !errors.Is(err, llm.ErrServer) || llm.Away(err) {
			t.Fatalf("err = %v, want unavailable from a server error, not away", err)
		}
		if n := len(srv.Embedder.Calls()); n != 3 {
			t.Errorf("%d calls, want 3 (two retries)", n)
		}
	})
	t.Run("bad request is not retried", func(t *testing.T) {
		srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
		srv.Embedder.Fail(http.StatusBadRequest, "invalid input type")
		cfg := embedConfig(srv.URL, "", "")
		cfg.Retry.LLMRetry = 2
		_, err := newClient(t, cfg).Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrRejected) || errors.Is(err, llm.ErrUnavailable) {
			t.Fatalf("err = %v, want rejected", err)
		}
		if n := len(srv.Embedder.Calls()); n != 1 {
			t.Errorf("%d calls, want 1", n)
		}
	})
}

func TestEmbedCancelledWhileHeld(t *testing.T) {
	srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	release := srv.Embedder.Hold()
	defer release()
	got := make(chan llm.Record, 1)
	l := ledger{onRecord: func(r llm.Record) { got <- r }}
	c := newClient(t, embedConfig(srv.URL, "", ""), llm.WithRecorder(&l))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Embed(ctx, llm.EmbedRequest{Texts: []string{"sleep"}})
		done <- err
	}()
	for len(srv.Embedder.Calls()) == 0 {
		time.Sleep(time.Millisecond) // until the call is on the server
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the caller's cancellation", err)
	}
	if r := <-got; r.Outcome != "canceled" || r.Role != llm.RoleEmbed {
		t.Errorf("record %+v, want a canceled embed", r)
	}
	if srv.Embedder.Inputs() != 0 {
		t.Errorf("a held call embedded %d inputs", srv.Embedder.Inputs())
	}
}

func TestEmbedModelReadsTheConfiguration(t *testing.T) {
	tests := []struct {
		model       string
		dims        int
		fingerprint string
		maxTokens   int
	}{
		{llm.DefaultEmbedModel, 0, "ollama/embeddinggemma@768", 2048 - 20},
		{"qwen3-embedding:0.6b", 0, "ollama/qwen3-embedding:0.6b@1024", 8192 - 20},
		{"qwen3-embedding:8b", 512, "ollama/qwen3-embedding:8b@512", 8192 - 20},
		{"my-embedder", 0, "ollama/my-embedder@0", 512 - 20},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			cfg := embedConfig(closedURL(t), "", "")
			cfg.Tiers[llm.RoleEmbed][llm.KindOllama] = tt.model
			cfg.Embed.Dims = tt.dims
			m, err := newClient(t, cfg).EmbedModel()
			if err != nil || m.Fingerprint() != tt.fingerprint || m.MaxTokens != tt.maxTokens {
				t.Fatalf("EmbedModel = %+v (%s), %v; want %s with MaxTokens %d", m, m.Fingerprint(), err, tt.fingerprint, tt.maxTokens)
			}
		})
	}
}

func TestEmbedConfiguration(t *testing.T) {
	t.Run("a fallback with no embedding model is valid", func(t *testing.T) {
		cfg := embedConfig(closedURL(t), llm.KindOpenAI, closedURL(t))
		delete(cfg.Tiers[llm.RoleEmbed], llm.KindOpenAI)
		c := newClient(t, cfg)
		_, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"sleep"}})
		if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "llm.tiers.embed.openai") {
			t.Fatalf("err = %v, want unavailable naming llm.tiers.embed.openai", err)
		}
	})
	t.Run("negative embed keys are refused", func(t *testing.T) {
		cfg := llm.DefaultConfig()
		cfg.Embed = llm.EmbedConfig{Dims: -1, BatchSize: -2, NumCtx: -3}
		err := cfg.Validate()
		for _, key := range []string{"llm.embed.dims", "llm.embed.batch_size", "llm.embed.num_ctx"} {
			if err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("Validate = %v, want it to name %s", err, key)
			}
		}
	})
	t.Run("titles must match texts", func(t *testing.T) {
		c := newClient(t, embedConfig(closedURL(t), "", ""))
		if _, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a", "b"}, Titles: []string{"A"}}); err == nil {
			t.Fatal("no error for 1 title with 2 texts")
		}
		if _, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: []string{"a", ""}}); err == nil {
			t.Fatal("no error for an empty text")
		}
	})
}

func TestProbeEmbed(t *testing.T) {
	srv := llmtest.NewOllama(t, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
	claude := llmtest.NewAnthropic(t)
	c := newClient(t, embedConfig(srv.URL, llm.KindAnthropic, claude.URL))

	// The chat models' health does not depend on the embedding model.
	if h := c.Probe(context.Background(), llm.KindOllama); h.Err != nil || len(h.Missing) > 0 {
		t.Fatalf("chat probe: %+v", h)
	}
	hs := c.ProbeEmbed(context.Background())
	if len(hs) != 2 {
		t.Fatalf("ProbeEmbed = %+v, want ollama and anthropic", hs)
	}
	if hs[0].Provider != llm.KindOllama || !errors.Is(hs[0].Err, llm.ErrModelMissing) || hs[0].Fix != "ollama pull embeddinggemma" {
		t.Errorf("ollama: %+v, want embeddinggemma missing", hs[0])
	}
	if hs[1].Provider != llm.KindAnthropic || hs[1].Err == nil || !strings.Contains(hs[1].Err.Error(), "no embeddings API") {
		t.Errorf("anthropic: %+v, want skipped for having no embeddings API", hs[1])
	}
	srv.Pull(llm.DefaultEmbedModel)
	if h := c.ProbeEmbed(context.Background())[0]; h.Err != nil || !h.Reachable {
		t.Errorf("after the pull: %+v", h)
	}
}

// A provider that fails after some batches is dropped for the whole call:
// the fallback embeds every text again, so no call mixes two models'
// vectors.
func TestEmbedNeverMixesModels(t *testing.T) {
	ollama := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	cloud := llmtest.NewOpenAI(t, cloudEmbedModel)
	cfg := embedConfig(ollama.URL, llm.KindOpenAI, cloud.URL)
	cfg.Embed.BatchSize = 2
	l := ledger{onRecord: func(r llm.Record) {
		if r.Provider == llm.KindOllama && r.Outcome == "ok" {
			ollama.Stop() // after the first batch
		}
	}}
	c := newClient(t, cfg, llm.WithRecorder(&l))
	texts := []string{"sleep", "garden", "budget", "running", "links"}
	got, err := c.Embed(context.Background(), llm.EmbedRequest{Texts: texts})
	if err != nil {
		t.Fatal(err)
	}
	if got.Provider != llm.KindOpenAI || len(got.Vectors) != len(texts) {
		t.Fatalf("got %d vectors from %s, want all %d from openai", len(got.Vectors), got.Fingerprint(), len(texts))
	}
	for i, v := range got.Vectors {
		if len(v) != 1536 {
			t.Errorf("vector %d is %d wide, not the fallback's 1536", i, len(v))
		}
	}
	if want := []string{"ollama:ok", "ollama:unreachable", "openai:ok", "openai:ok", "openai:ok"}; strings.Join(l.outcomes(), " ") != strings.Join(want, " ") {
		t.Errorf("records %v, want %v", l.outcomes(), want)
	}
}

func TestEmbedNothing(t *testing.T) {
	srv := llmtest.NewOllama(t, llm.DefaultEmbedModel)
	got, err := newClient(t, embedConfig(srv.URL, "", "")).Embed(context.Background(), llm.EmbedRequest{})
	if err != nil || len(got.Vectors) != 0 || got.Fingerprint() != "ollama/embeddinggemma@768" {
		t.Fatalf("Embed of no texts = %+v, %v", got, err)
	}
	if n := len(srv.Embedder.Calls()); n != 0 {
		t.Errorf("%d calls for no texts", n)
	}
}
