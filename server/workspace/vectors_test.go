package workspace

import (
	"context"
	"slices"
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

// TestChunksEmbedWithTheirTitleInTheModelsSlot: a chunk's first line (its
// note's title and heading path) goes in embeddinggemma's title slot, and
// a chunk with no such line goes as it is.
func TestChunksEmbedWithTheirTitleInTheModelsSlot(t *testing.T) {
	fake := llmtest.NewOllama(t, "embeddinggemma")
	client, err := llm.New(fake.Config())
	if err != nil {
		t.Fatal(err)
	}
	emb, off := embedderOf(client)
	if emb == nil {
		t.Fatalf("no embedder: %s", off)
	}
	if emb.Fingerprint() != "ollama/embeddinggemma@768" || emb.MaxTokens() <= 0 {
		t.Errorf("fingerprint %q, max tokens %d", emb.Fingerprint(), emb.MaxTokens())
	}
	texts := []string{
		"Garden > Beds\n\nPlants and seeds.\n\nMore seeds.",
		"Garden",
		"Two lines\nof body\n\nthen a paragraph",
		"\n\nno title",
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil || len(vecs) != len(texts) {
		t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
	}
	want := []string{
		"title: Garden > Beds | text: Plants and seeds.\n\nMore seeds.",
		"title: none | text: Garden",
		"title: none | text: Two lines\nof body\n\nthen a paragraph",
		"title: none | text: \n\nno title",
	}
	if got := fake.Embedder.Calls()[0].Input; !slices.Equal(got, want) {
		t.Errorf("sent %q\nwant %q", got, want)
	}
}

func TestNoEmbedderWithoutAModel(t *testing.T) {
	if emb, off := embedderOf(nil); emb != nil || off != "no model is configured" {
		t.Errorf("embedderOf(nil) = %v, %q", emb, off)
	}
}
