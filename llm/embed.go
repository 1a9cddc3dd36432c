package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// RoleEmbed is the role that embeds text. It is configured like any role
// (llm.agents.embed: a tier, provider or model; llm.tiers.embed maps the
// tier to a model per provider) with llm.embed for what is particular to
// vectors. Its configuration is not checked by [Config.Validate]: a
// missing embedding model is not an error but keyword search, and
// [Client.Embed] and [Client.ProbeEmbed] say why.
const RoleEmbed = "embed"

// EmbedKind says what a text is to the model: embedding models are trained
// with different prefixes for the documents searched and for the queries
// searching them.
type EmbedKind int

const (
	EmbedDocument EmbedKind = iota
	EmbedQuery
)

// EmbedRequest asks for the vectors of Texts.
type EmbedRequest struct {
	Texts []string
	Kind  EmbedKind
	// Titles, for documents, are each text's title (a note's title and
	// heading path); empty or nil for none. A model with a title slot
	// (embeddinggemma) gets it there, others as the text's first line;
	// either way it counts against [EmbedModel.MaxTokens].
	Titles []string
}

// Embeddings are the vectors of one [EmbedRequest], in the order of its
// Texts, each of unit length.
type Embeddings struct {
	Vectors  [][]float32
	Provider string
	Model    string
	Dims     int
	// PromptTokens is the tokens embedded, as the server counted them.
	PromptTokens int
}

// Fingerprint names the vector space: vectors of different fingerprints
// must not be compared.
func (e Embeddings) Fingerprint() string {
	return EmbedModel{Provider: e.Provider, Model: e.Model, Dims: e.Dims}.Fingerprint()
}

// EmbedModel is what would embed, read from the configuration without a
// call: see [Client.EmbedModel].
type EmbedModel struct {
	Provider string
	Model    string
	// Dims is the vectors' width: llm.embed.dims, else the model's own
	// width when margin knows it, else 0 (learned on the first call).
	Dims int
	// MaxTokens is the most a text (with its title) may hold: the model's
	// window, less room for its prefix. A longer one fails the call with
	// [ErrContextTooLong]; nothing is cut silently.
	MaxTokens int
}

// Fingerprint is "provider/model@dims". A caller storing vectors keeps it
// and embeds everything again when it changes.
func (m EmbedModel) Fingerprint() string {
	return fmt.Sprintf("%s/%s@%d", m.Provider, m.Model, m.Dims)
}

// embedder is a provider with an embeddings API (Anthropic has none).
type embedder interface {
	// embed returns one vector per text, as the server gave it, and the
	// tokens it counted. numCtx is the model's window.
	embed(ctx context.Context, model string, texts []string, numCtx int) ([][]float32, int, error)
}

// errCannotEmbed marks the reason of an [UnavailableError] that says a
// provider of the cascade cannot embed at all (no embeddings API, or no
// model configured for the role on it); [Away] does not wait for it.
var errCannotEmbed = errors.New("cannot embed")

// EmbedModel is what the role's own provider would embed with. It reads
// the configuration only; whether that model is there is [Client.ProbeEmbed]'s.
func (c *Client) EmbedModel() (EmbedModel, error) {
	steps, err := c.embedCascade()
	if err != nil {
		return EmbedModel{}, err
	}
	for _, s := range steps {
		if s.err == nil {
			return s.EmbedModel, nil
		}
	}
	return EmbedModel{}, &UnavailableError{Role: RoleEmbed, Reasons: reasonsOf(steps)}
}

// embedStep is one provider of the embed cascade, or why it is skipped.
type embedStep struct {
	EmbedModel
	numCtx int
	// cut is llm.embed.dims: Dims may otherwise be only margin's guess
	// from its table, and the vectors' own width wins.
	cut int
	err error
}

func reasonsOf(steps []embedStep) []error {
	var out []error
	for _, s := range steps {
		if s.err != nil {
			out = append(out, s.err)
		}
	}
	return out
}

// embedCascade is the role's own provider then the fallback, each with its
// model or the reason it cannot embed.
func (c *Client) embedCascade() ([]embedStep, error) {
	rc, err := c.cfg.roleFor(RoleEmbed, "", "")
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	primary := c.cfg.ownProvider(rc)
	names := []string{primary}
	if fb := c.cfg.FallbackProvider; fb != "" && fb != primary {
		names = append(names, fb)
	}
	var steps []embedStep
	for _, name := range names {
		p, ok := c.providers[name]
		if !ok {
			steps = append(steps, embedStep{EmbedModel: EmbedModel{Provider: name}, err: fmt.Errorf("%w: llm.providers.%s: provider not configured", errCannotEmbed, name)})
			continue
		}
		if _, ok := p.(embedder); !ok {
			steps = append(steps, embedStep{EmbedModel: EmbedModel{Provider: name}, err: fmt.Errorf("%w: %s has no embeddings API; the embed role skips it", errCannotEmbed, name)})
			continue
		}
		model, err := c.cfg.modelOn(RoleEmbed, rc, name)
		if err != nil {
			steps = append(steps, embedStep{EmbedModel: EmbedModel{Provider: name}, err: fmt.Errorf("%w: %w", errCannotEmbed, err)})
			continue
		}
		steps = append(steps, c.embedStepFor(name, model))
	}
	return steps, nil
}

func (c *Client) embedStepFor(provider, model string) embedStep {
	f, size, known := embedFamilyOf(model)
	numCtx := c.cfg.Embed.NumCtx
	if numCtx == 0 {
		numCtx = unknownEmbedContext
		if known {
			numCtx = min(f.context, maxEmbedContext)
		}
	}
	dims := c.cfg.Embed.Dims
	if dims == 0 {
		dims = f.nativeDims(size)
	}
	return embedStep{
		EmbedModel: EmbedModel{Provider: provider, Model: model, Dims: dims, MaxTokens: max(numCtx-embedPrefixTokens, 1)},
		numCtx:     numCtx,
		cut:        c.cfg.Embed.Dims,
	}
}

// Embed returns the vectors of req.Texts from the embed role's model,
// through the cascade: retries on the same provider, then the fallback,
// then an [UnavailableError] (callers search by keyword meanwhile).
// All vectors of one call come from one model, so a provider that fails
// part way is dropped for the whole call. A text too long for the model
// ([ErrContextTooLong]) or a request the provider refuses ([ErrRejected])
// fails the call at once: no other provider is asked, because the caller
// must split its text, not get it from a model it did not expect.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (Embeddings, error) {
	if err := req.check(); err != nil {
		return Embeddings{}, fmt.Errorf("embed: %w", err)
	}
	steps, err := c.embedCascade()
	if err != nil {
		return Embeddings{}, err
	}
	var reasons []error
	for i, s := range steps {
		if s.err != nil {
			reasons = append(reasons, s.err)
			continue
		}
		if len(reasons) > 0 {
			c.log.Warn("falling back", "role", RoleEmbed, "to", s.Provider, "model", s.Model, "reason", reasons[len(reasons)-1])
		}
		out, err := c.embedOn(ctx, s, req, i > 0)
		if err == nil {
			return out, nil
		}
		if ctx.Err() != nil {
			return Embeddings{}, fmt.Errorf("embed: %w", ctx.Err())
		}
		if errors.Is(err, ErrContextTooLong) || errors.Is(err, ErrRejected) {
			return Embeddings{}, fmt.Errorf("embed: %w", err)
		}
		reasons = append(reasons, err)
	}
	return Embeddings{}, &UnavailableError{Role: RoleEmbed, Reasons: reasons}
}

func (r EmbedRequest) check() error {
	if r.Titles != nil && len(r.Titles) != len(r.Texts) {
		return fmt.Errorf("%d titles for %d texts", len(r.Titles), len(r.Texts))
	}
	for i, t := range r.Texts {
		if t == "" {
			return fmt.Errorf("text %d is empty", i)
		}
	}
	return nil
}

// embedOn embeds every text on one provider, in batches of llm.embed.batch_size.
func (c *Client) embedOn(ctx context.Context, s embedStep, req EmbedRequest, fallback bool) (Embeddings, error) {
	p := c.providers[s.Provider].(embedder)
	texts := make([]string, len(req.Texts))
	for i, t := range req.Texts {
		title := ""
		if req.Titles != nil {
			title = req.Titles[i]
		}
		texts[i] = prefixed(s.Model, req.Kind, title, t)
	}
	out := Embeddings{Provider: s.Provider, Model: s.Model, Vectors: make([][]float32, 0, len(texts))}
	size := c.cfg.Embed.batchSize()
	for start := 0; start < len(texts); start += size {
		batch := texts[start:min(start+size, len(texts))]
		var (
			vecs   [][]float32
			tokens int
		)
		err := c.retry(ctx, func(attempt int) error {
			begin := time.Now()
			var err error
			vecs, tokens, err = p.embed(ctx, s.Model, batch, s.numCtx)
			if err == nil {
				err = s.shape(vecs, len(batch))
			}
			if ce := (*CallError)(nil); errors.As(err, &ce) && ce.Class == ErrContextTooLong {
				ce.Fix = fmt.Sprintf("embed texts of at most %d tokens (%s takes %d); the model server is told not to cut them", s.MaxTokens, s.Model, s.numCtx)
			}
			resp := Response{Latency: time.Since(begin), Usage: Usage{PromptTokens: tokens, PromptEstimate: estimateTexts(batch)}}
			c.record(ctx, Record{Time: begin, Role: RoleEmbed, Provider: s.Provider, Model: s.Model, Attempt: attempt, Fallback: fallback, Inputs: len(batch)}, resp, err)
			return err
		})
		if err != nil {
			if len(texts) > len(batch) {
				err = fmt.Errorf("texts %d to %d of %d: %w", start, start+len(batch)-1, len(texts), err)
			}
			return Embeddings{}, err
		}
		for _, v := range vecs {
			out.Vectors = append(out.Vectors, unit(v[:s.dimsOf(v)]))
		}
		out.PromptTokens += tokens
	}
	if len(out.Vectors) > 0 {
		out.Dims = len(out.Vectors[0])
	} else {
		out.Dims = s.Dims
	}
	return out, nil
}

// shape checks the server's answer: one vector per text, all as wide as
// each other and at least as wide as llm.embed.dims asks.
func (s embedStep) shape(vecs [][]float32, n int) error {
	if len(vecs) != n {
		return &CallError{Class: ErrServer, Provider: s.Provider, Model: s.Model, Err: fmt.Errorf("%d vectors for %d texts", len(vecs), n)}
	}
	for _, v := range vecs {
		switch {
		case len(v) == 0 || len(v) != len(vecs[0]):
			return &CallError{Class: ErrServer, Provider: s.Provider, Model: s.Model, Err: fmt.Errorf("vectors of %d and %d dimensions in one answer", len(vecs[0]), len(v))}
		case s.cut > len(v):
			return &CallError{Class: ErrRejected, Provider: s.Provider, Model: s.Model, Fix: "lower llm.embed.dims or leave it 0",
				Err: fmt.Errorf("the model gives %d dimensions, llm.embed.dims asks for %d", len(v), s.cut)}
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return &CallError{Class: ErrServer, Provider: s.Provider, Model: s.Model, Err: errors.New("a vector holds NaN or Inf")}
			}
		}
	}
	return nil
}

// dimsOf is how much of v to keep: llm.embed.dims when set (the
// Matryoshka-trained models put the most meaning first), else all of it.
func (s embedStep) dimsOf(v []float32) int {
	if s.cut > 0 {
		return s.cut
	}
	return len(v)
}

// unit scales v to length 1 in place: servers differ (Ollama normalises,
// llama.cpp need not) and a cut vector is no longer of unit length, while
// callers compare vectors by dot product.
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return v
}

// estimateTexts is margin's token estimate of a batch, as [EstimateTokens]
// counts a prompt.
func estimateTexts(texts []string) int {
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	return (n + 3) / 4
}

// ProbeEmbed checks, without embedding anything, each provider of the
// embed cascade: whether it answers and has the role's model. A provider
// that cannot embed (Anthropic) is listed with the reason it is skipped.
func (c *Client) ProbeEmbed(ctx context.Context) []Health {
	steps, err := c.embedCascade()
	if err != nil {
		return []Health{{Provider: c.cfg.DefaultProvider, Err: err}}
	}
	var out []Health
	for _, s := range steps {
		if s.err != nil {
			out = append(out, Health{Provider: s.Provider, Err: s.err})
			continue
		}
		out = append(out, c.providers[s.Provider].probe(ctx, []string{s.Model}))
	}
	return out
}
