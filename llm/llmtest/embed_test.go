package llmtest_test

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/margin-md/margin/llm/llmtest"
)

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// Texts sharing a concept, in any language or form, are nearer each other
// than texts that share none; the vectors are the same on every call.
func TestEmbedderNearWordsAreNear(t *testing.T) {
	e := llmtest.NewEmbedder(256, llmtest.Meanings)
	tests := []struct {
		name            string
		text, near, far string
	}{
		{"a word's other forms", "I slept badly", "sleep quality", "garden quality"},
		{"across languages", "수면 기록", "Schlaf Tagebuch", "garden plans"},
		{"French and English", "budget de mai", "expenses in May", "running in May"},
		{"a query and its note", "how do I link notes", "Backlinks between notes", "seeds between rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Vector(tt.text)
			near, far := cosine(v, e.Vector(tt.near)), cosine(v, e.Vector(tt.far))
			if near <= far+0.1 {
				t.Fatalf("cos(%q, %q) = %.3f is not clearly above cos(%q, %q) = %.3f", tt.text, tt.near, near, tt.text, tt.far, far)
			}
		})
	}
	a, b := e.Vector("Garden plans"), e.Vector("garden PLANS")
	if cosine(a, b) < 0.99999 || len(a) != 256 {
		t.Fatalf("the same words gave different vectors (cosine %v) or the wrong width %d", cosine(a, b), len(a))
	}
}

// The Ollama fake speaks /api/embed to Ollama's own client: a single
// string input, normalised vectors, counts, a chosen width and failures.
func TestOllamaEmbed(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	c := ollamaClient(t, fake.URL)
	ctx := context.Background()

	resp, err := c.Embed(ctx, &api.EmbedRequest{Model: "embeddinggemma", Input: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Embeddings) != 1 || len(resp.Embeddings[0]) != 768 || math.Abs(cosine(resp.Embeddings[0], resp.Embeddings[0])-1) > 1e-6 {
		t.Fatalf("embeddings %d×%d", len(resp.Embeddings), len(resp.Embeddings[0]))
	}
	fake.Embedder.SetDims(32)
	fake.Embedder.SetContext(2)
	resp, err = c.Embed(ctx, &api.EmbedRequest{Model: "embeddinggemma", Input: []string{"a", "a text longer than two tokens"}})
	if err != nil {
		t.Fatalf("without truncate:false a long input is cut, not refused: %v", err)
	}
	if len(resp.Embeddings[1]) != 32 || resp.PromptEvalCount != 1+2 {
		t.Fatalf("width %d, %d tokens; want 32 and 3 (the long input cut to 2)", len(resp.Embeddings[1]), resp.PromptEvalCount)
	}
	no := false
	_, err = c.Embed(ctx, &api.EmbedRequest{Model: "embeddinggemma", Input: []string{"a text longer than two tokens"}, Truncate: &no})
	if se, ok := err.(api.StatusError); !ok || se.StatusCode != http.StatusBadRequest {
		t.Fatalf("truncate false, input too long: %v, want a 400", err)
	}
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "bge-m3", Input: "a"}); err == nil {
		t.Fatal("a model not pulled embedded")
	}
	fake.Embedder.Fail(http.StatusServiceUnavailable, "server busy")
	if _, err := c.Embed(ctx, &api.EmbedRequest{Model: "embeddinggemma", Input: "a"}); err == nil {
		t.Fatal("Fail did not fail the call")
	}
	if got := len(fake.Embedder.Calls()); got != 5 {
		t.Errorf("%d calls recorded, want 5", got)
	}
	// "sleep" is 2 tokens, "a" 1, the long input cut to 2.
	if fake.Embedder.Inputs() != 3 || fake.Embedder.Tokens() != 5 {
		t.Errorf("counted %d inputs and %d tokens of the calls that succeeded, want 3 and 5", fake.Embedder.Inputs(), fake.Embedder.Tokens())
	}
}

// A held call waits for its release; a client that gives up is let go.
func TestEmbedderHold(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	c := ollamaClient(t, fake.URL)
	release := fake.Embedder.Hold()
	done := make(chan error, 1)
	go func() {
		_, err := c.Embed(context.Background(), &api.EmbedRequest{Model: "embeddinggemma", Input: "sleep"})
		done <- err
	}()
	for len(fake.Embedder.Calls()) == 0 {
		time.Sleep(time.Millisecond) // until the call is on the server
	}
	select {
	case err := <-done:
		t.Fatalf("a held call returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	release() // twice is harmless
}
