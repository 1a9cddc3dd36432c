package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// replyTool is the tool Anthropic is forced to call for structured output.
//
// Structured output on Anthropic goes through a forced tool call, not
// output_config.format: every Claude model with tool use supports a forced
// tool whose input_schema is the reply schema, while native JSON output
// exists only on recent models, and the tiers may name older ones. The
// tool's input is the reply; it is still validated like any other.
const replyTool = "reply"

type claude struct {
	endpoint
	messages  anthropic.MessageService
	models    anthropic.ModelService
	maxTokens int
}

func newAnthropic(ep endpoint, pc ProviderConfig, hc *http.Client) (*claude, error) {
	// Explicit options only: anthropic.NewClient would read ANTHROPIC_*
	// variables, and this package must not.
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		// The cascade retries; SDK retries underneath would multiply them.
		option.WithMaxRetries(0),
	}
	if ep.base != "" {
		u, err := parseBase(ep.base)
		if err != nil {
			return nil, err
		}
		ep.base = u.String()
		opts = append(opts, option.WithBaseURL(ep.base))
	} else {
		opts = append(opts, option.WithEnvironmentProduction())
		ep.base = "https://api.anthropic.com"
	}
	if pc.APIKey != "" {
		opts = append(opts, option.WithAPIKey(pc.APIKey))
	}
	maxTokens := pc.MaxTokens
	if maxTokens == 0 {
		maxTokens = defaultMaxTokens
	}
	return &claude{
		endpoint:  ep,
		messages:  anthropic.NewMessageService(opts...),
		models:    anthropic.NewModelService(opts...),
		maxTokens: maxTokens,
	}, nil
}

func (c *claude) chat(ctx context.Context, model string, req Request) (Response, error) {
	params, err := c.params(model, req)
	if err != nil {
		return Response{}, err
	}
	var msg anthropic.Message
	err = c.attempt(ctx, model, func(ctx context.Context) error {
		stream := c.messages.NewStreaming(ctx, params)
		defer stream.Close()
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				return err
			}
		}
		if err := stream.Err(); err != nil {
			return err
		}
		if msg.StopReason == "" {
			return errIncomplete
		}
		return nil
	}, c.classify)
	if err != nil {
		return Response{}, err
	}
	out := Message{Role: RoleAssistant}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Content += b.Text
		case "tool_use":
			if req.Schema != nil && b.Name == replyTool {
				out.Content = string(b.Input)
				continue
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	u := msg.Usage
	return Response{
		Message:    out,
		Provider:   c.name,
		Model:      model,
		DoneReason: string(msg.StopReason),
		Usage: Usage{
			// input_tokens excludes the cached prefix; the prompt is all three.
			PromptTokens:     int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
			CompletionTokens: int(u.OutputTokens),
			PromptEstimate:   EstimateTokens(req),
		},
	}, nil
}

func (c *claude) params(model string, req Request) (anthropic.MessageNewParams, error) {
	maxTokens := req.Options.MaxTokens
	if maxTokens == 0 {
		maxTokens = c.maxTokens
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: int64(maxTokens)}
	if t := req.Options.Temperature; t != nil {
		p.Temperature = anthropic.Float(*t)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		case RoleTool:
			block := anthropic.NewToolResultBlock(m.ToolCallID, m.Content, false)
			// All results for one assistant turn go in a single user turn.
			if n := len(p.Messages); n > 0 && isToolResults(p.Messages[n-1]) {
				p.Messages[n-1].Content = append(p.Messages[n-1].Content, block)
				continue
			}
			p.Messages = append(p.Messages, anthropic.NewUserMessage(block))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				args := tc.Args
				if !json.Valid(args) {
					args = json.RawMessage(`{}`)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, args, tc.Name))
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		default:
			return p, fmt.Errorf("message role %q", m.Role)
		}
	}
	for _, t := range req.Tools {
		tool, err := anthropicTool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	if req.Schema != nil {
		tool, err := anthropicTool(ToolSpec{Name: replyTool, Description: "Give your reply as this tool's input.", Schema: req.Schema})
		if err != nil {
			return p, err
		}
		p.Tools = []anthropic.ToolUnionParam{{OfTool: &tool}}
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(replyTool)
	}
	return p, nil
}

func isToolResults(m anthropic.MessageParam) bool {
	return m.Role == anthropic.MessageParamRoleUser && len(m.Content) > 0 && m.Content[0].OfToolResult != nil
}

// anthropicTool passes the schema through as raw JSON so property order and
// every keyword survive.
func anthropicTool(t ToolSpec) (anthropic.ToolParam, error) {
	b, err := json.Marshal(t.Schema)
	if err != nil {
		return anthropic.ToolParam{}, fmt.Errorf("encoding schema of tool %s: %w", t.Name, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return anthropic.ToolParam{}, fmt.Errorf("schema of tool %s is not an object: %w", t.Name, err)
	}
	if typ := string(top["type"]); typ != `"object"` {
		return anthropic.ToolParam{}, fmt.Errorf("schema of tool %s has type %s; Anthropic tools take objects", t.Name, typ)
	}
	schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range top {
		switch k {
		case "type":
		case "properties":
			schema.Properties = v
		case "required":
			if err := json.Unmarshal(v, &schema.Required); err != nil {
				return anthropic.ToolParam{}, fmt.Errorf("schema of tool %s: required: %w", t.Name, err)
			}
		default:
			schema.ExtraFields[k] = v
		}
	}
	return anthropic.ToolParam{Name: t.Name, Description: anthropic.String(t.Description), InputSchema: schema}, nil
}

func (c *claude) classify(model string, err error) *CallError {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return nil
	}
	class := classifyStatus(ae.StatusCode, ae.RawJSON())
	if ae.Type() == "rate_limit_error" {
		class = ErrRateLimited
	}
	ce := c.callError(class, model, err)
	ce.RetryAfter = retryAfter(ae.Response)
	return ce
}

// probe lists the provider's models, which checks address and key at once.
// Missing is left empty: hosted endpoints serve aliases and deployments
// that their model lists do not name.
func (c *claude) probe(ctx context.Context, _ []string) Health {
	return c.probeList(ctx, c.classify, func(ctx context.Context) ([]string, error) {
		page, err := c.models.List(ctx, anthropic.ModelListParams{})
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
