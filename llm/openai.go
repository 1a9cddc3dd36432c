package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiCompat talks to any OpenAI-compatible chat completions endpoint:
// OpenAI, OpenRouter, Azure OpenAI's v1 API, vLLM, llama.cpp, LM Studio.
type openaiCompat struct {
	endpoint
	completions openai.ChatCompletionService
	embeddings  openai.EmbeddingService
	models      openai.ModelService
}

func newOpenAI(ep endpoint, pc ProviderConfig, hc *http.Client) (*openaiCompat, error) {
	base := ep.base
	if base == "" {
		base = defaultOpenAIBase
	}
	u, err := parseBase(base)
	if err != nil {
		return nil, err
	}
	ep.base = u.String()
	// The services are built from explicit options only: openai.NewClient
	// would also read OPENAI_* variables, and this package must not.
	opts := []option.RequestOption{
		option.WithBaseURL(ep.base),
		option.WithHTTPClient(hc),
		// The cascade retries; SDK retries underneath would multiply them.
		option.WithMaxRetries(0),
	}
	if pc.APIKey != "" {
		opts = append(opts, option.WithAPIKey(pc.APIKey))
	}
	if pc.APIVersion != "" {
		opts = append(opts, option.WithQueryAdd("api-version", pc.APIVersion), option.WithHeader("api-key", pc.APIKey))
	}
	return &openaiCompat{
		endpoint:    ep,
		completions: openai.NewChatCompletionService(opts...),
		embeddings:  openai.NewEmbeddingService(opts...),
		models:      openai.NewModelService(opts...),
	}, nil
}

func (o *openaiCompat) chat(ctx context.Context, model string, req Request) (Response, error) {
	params, err := openaiParams(model, req)
	if err != nil {
		return Response{}, err
	}
	var acc openai.ChatCompletionAccumulator
	err = o.attempt(ctx, model, func(ctx context.Context) error {
		stream := o.completions.NewStreaming(ctx, params)
		defer stream.Close()
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			return err
		}
		if len(acc.Choices) == 0 || acc.Choices[0].FinishReason == "" {
			return errIncomplete
		}
		return nil
	}, o.classify)
	if err != nil {
		return Response{}, err
	}
	choice := acc.Choices[0]
	msg := Message{Role: RoleAssistant, Content: choice.Message.Content}
	for _, tc := range choice.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	return Response{
		Message:    msg,
		Provider:   o.name,
		Model:      model,
		DoneReason: choice.FinishReason,
		Usage: Usage{
			PromptTokens:     int(acc.Usage.PromptTokens),
			CompletionTokens: int(acc.Usage.CompletionTokens),
			PromptEstimate:   EstimateTokens(req),
		},
	}, nil
}

func openaiParams(model string, req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model: model,
		// Usage arrives in a last chunk only when asked for.
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if t := req.Options.Temperature; t != nil {
		p.Temperature = openai.Float(*t)
	}
	if req.Options.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(int64(req.Options.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Args)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("message role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		params, err := functionParameters(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  params,
		}))
	}
	if req.Schema != nil {
		b, err := json.Marshal(req.Schema)
		if err != nil {
			return p, fmt.Errorf("encoding reply schema: %w", err)
		}
		// Not strict: strict mode demands every property be required,
		// and margin's types have optional fields. The reply is validated
		// against the schema anyway. RawMessage keeps property order.
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "reply", Schema: json.RawMessage(b)},
		}
	}
	return p, nil
}

// functionParameters keeps the schema's nested JSON as raw values:
// FunctionParameters is a Go map, which would sort property names.
func functionParameters(t ToolSpec) (shared.FunctionParameters, error) {
	b, err := json.Marshal(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("encoding schema of tool %s: %w", t.Name, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("schema of tool %s is not an object: %w", t.Name, err)
	}
	params := make(shared.FunctionParameters, len(top))
	for k, v := range top {
		params[k] = v
	}
	return params, nil
}

func (o *openaiCompat) classify(model string, err error) *CallError {
	var ae *openai.Error
	if !errors.As(err, &ae) {
		return nil
	}
	ce := o.callError(classifyStatus(ae.StatusCode, ae.Code+" "+ae.Message), model, err)
	ce.RetryAfter = retryAfter(ae.Response)
	return ce
}

// probe lists the provider's models, which checks address and key at once.
// Missing is left empty: hosted endpoints serve aliases and deployments
// that their model lists do not name.
func (o *openaiCompat) probe(ctx context.Context, _ []string) Health {
	return o.probeList(ctx, o.classify, func(ctx context.Context) ([]string, error) {
		page, err := o.models.List(ctx)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(page.Data))
		for i, m := range page.Data {
			ids[i] = m.ID
		}
		return ids, nil
	})
}

// embed calls the embeddings endpoint. OpenAI refuses a text longer than
// the model's window rather than cutting it, so nothing is asked for.
func (o *openaiCompat) embed(ctx context.Context, model string, texts []string, _ int) ([][]float32, int, error) {
	var resp *openai.CreateEmbeddingResponse
	err := o.attempt(ctx, model, func(ctx context.Context) error {
		var err error
		resp, err = o.embeddings.New(ctx, openai.EmbeddingNewParams{
			Model:          model,
			Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		})
		return err
	}, o.classify)
	if err != nil {
		return nil, 0, err
	}
	vecs := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(vecs) || vecs[d.Index] != nil {
			return nil, 0, o.callError(ErrServer, model, fmt.Errorf("embedding index %d out of place for %d texts", d.Index, len(texts)))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		vecs[d.Index] = v
	}
	return vecs, int(resp.Usage.PromptTokens), nil
}
