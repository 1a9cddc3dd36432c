package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault/retrieve"
	"github.com/margin-md/margin/vault/vectors"
)

// openRetriever opens the notes' vectors, when a queue has made some, and
// the retriever over them and the index. Without a vectors file it opens
// none (creating it is the queue's), and search by meaning says "no
// vectors yet".
func (w *Workspace) openRetriever(ctx context.Context, opts Options) error {
	path := filepath.Join(w.Vault.StateDir(), vectors.FileName)
	if _, err := os.Stat(path); err == nil {
		if w.Vectors, err = vectors.Open(ctx, path); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("opening vectors: %w", err)
	}
	var emb retrieve.QueryEmbedder
	if opts.LLM != nil {
		emb = Embedder{opts.LLM}
	}
	w.Retrieve = retrieve.New(w.Vault.Index(), w.Vectors, emb, retrieve.Options{})
	return nil
}

// Embedder embeds notes' chunks (vectors.Embedder) and search queries
// (retrieve.QueryEmbedder) with the embed role's model, each with the
// kind of text it is.
type Embedder struct{ C *llm.Client }

// Embed embeds chunks of notes, which vectors prefixed with their title
// and heading path.
func (e Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := e.C.Embed(ctx, llm.EmbedRequest{Texts: texts, Kind: llm.EmbedDocument})
	if err != nil {
		return nil, err
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
