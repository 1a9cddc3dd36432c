package workspace

import (
	"context"
	"fmt"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/retrieve"
)

// openRetriever makes the retriever over the index and the notes'
// vectors (the Embeddings part, which may still be opening: a search by
// meaning waits for it, a keyword search does not).
func (w *Workspace) openRetriever(opts Options) {
	var emb retrieve.QueryEmbedder
	if opts.LLM != nil {
		emb = Embedder{opts.LLM}
	}
	w.Retrieve = retrieve.New(w.Vault.Index(), w.Vectors, emb, retrieve.Options{})
}

// Embedder embeds notes' chunks (vectors.Embedder) and search queries
// (retrieve.QueryEmbedder) with the embed role's model, each with the
// kind of text it is.
type Embedder struct{ C *llm.Client }

// Embed embeds chunks of notes as documents. A chunk's first paragraph —
// its note's title and heading path, a line the vectors package puts
// there, "Title > Heading\n\n" — goes in the model's title slot, or back as
// the same first line for a model without one.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m, err := e.C.EmbedModel()
	if err != nil {
		return nil, err
	}
	req := llm.EmbedRequest{Texts: make([]string, len(texts)), Titles: make([]string, len(texts)), Kind: llm.EmbedDocument}
	for i, t := range texts {
		req.Texts[i] = t
		if title, body, ok := cutTitle(t); ok {
			req.Titles[i], req.Texts[i] = title, body
		}
	}
	out, err := e.C.Embed(ctx, req)
	if err != nil {
		return nil, err
	}
	// The fallback provider's vectors are of another space: stored under
	// this fingerprint they would be compared with the model's.
	if out.Provider != m.Provider || out.Model != m.Model {
		return nil, fmt.Errorf("%s/%s answered for %s/%s, whose vectors these are not", out.Provider, out.Model, m.Provider, m.Model)
	}
	return out.Vectors, nil
}

// Fingerprint names the configured model; "" without one.
func (e Embedder) Fingerprint() string {
	m, err := e.C.EmbedModel()
	if err != nil {
		return ""
	}
	return m.Fingerprint()
}

// MaxTokens is the configured model's limit on one text.
func (e Embedder) MaxTokens() int {
	m, err := e.C.EmbedModel()
	if err != nil {
		return 0
	}
	return m.MaxTokens
}

// EmbedQuery embeds a search's text as a query; retrieve.ErrNoModel when
// no embedding model is configured.
func (e Embedder) EmbedQuery(ctx context.Context, text string) ([]float32, string, error) {
	if _, err := e.C.EmbedModel(); err != nil {
		return nil, "", fmt.Errorf("%w: %v", retrieve.ErrNoModel, err)
	}
	out, err := e.C.Embed(ctx, llm.EmbedRequest{Texts: []string{text}, Kind: llm.EmbedQuery})
	if err != nil {
		return nil, "", err
	}
	if len(out.Vectors) != 1 {
		return nil, "", fmt.Errorf("embedding the query: %d vectors for one text", len(out.Vectors))
	}
	return out.Vectors[0], out.Fingerprint(), nil
}
