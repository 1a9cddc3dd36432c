package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/ollama/ollama/api"
)

// ollama talks to an Ollama server through its own api package, so the wire
// format is always the one the pinned server version speaks.
type ollama struct {
	endpoint
	client *api.Client
	numCtx int
}

func newOllama(ep endpoint, pc ProviderConfig, hc *http.Client) (*ollama, error) {
	if ep.base == "" {
		ep.base = defaultOllamaBase
	}
	u, err := parseBase(ep.base)
	if err != nil {
		return nil, err
	}
	numCtx := pc.NumCtx
	if numCtx == 0 {
		numCtx = defaultNumCtx
	}
	return &ollama{endpoint: ep, client: api.NewClient(u, hc), numCtx: numCtx}, nil
}

func (o *ollama) chat(ctx context.Context, model string, req Request) (Response, error) {
	numCtx := req.Options.NumCtx
	if numCtx == 0 {
		numCtx = o.numCtx
	}
	creq, err := ollamaRequest(model, req, numCtx)
	if err != nil {
		return Response{}, err
	}

	var (
		content strings.Builder
		calls   []api.ToolCall
		final   api.ChatResponse
		done    bool
	)
	err = o.attempt(ctx, model, func(ctx context.Context) error {
		// Stream stays nil, which Ollama reads as "stream": tokens arrive
		// as they are generated and a cancelled ctx stops generation.
		err := o.client.Chat(ctx, creq, func(r api.ChatResponse) error {
			content.WriteString(r.Message.Content)
			calls = append(calls, r.Message.ToolCalls...)
			if r.Done {
				final, done = r, true
			}
			return nil
		})
		if err == nil && !done {
			// api.Client ignores read errors on the stream, so a dropped
			// connection or a cancelled ctx looks like a clean end.
			return errIncomplete
		}
		return err
	}, o.classify)
	if err != nil {
		return Response{}, err
	}

	msg := Message{Role: RoleAssistant, Content: content.String()}
	for i, c := range calls {
		args, err := json.Marshal(c.Function.Arguments)
		if err != nil {
			return Response{}, o.callError(ErrServer, model, fmt.Errorf("re-encoding arguments of tool call %s: %w", c.Function.Name, err))
		}
		id := c.ID
		if id == "" {
			// Older servers send no ids; the loop needs one to pair each
			// result with its call.
			id = fmt.Sprintf("call_%d", i)
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: c.Function.Name, Args: args})
	}
	est := EstimateTokens(req)
	return Response{
		Message:    msg,
		Provider:   o.name,
		Model:      model,
		DoneReason: final.DoneReason,
		Usage: Usage{
			PromptTokens:     final.PromptEvalCount,
			CompletionTokens: final.EvalCount,
			PromptEstimate:   est,
			Truncated:        Truncated(est, final.PromptEvalCount, numCtx),
		},
	}, nil
}

func ollamaRequest(model string, req Request, numCtx int) (*api.ChatRequest, error) {
	opts := map[string]any{"num_ctx": numCtx}
	if t := req.Options.Temperature; t != nil {
		opts["temperature"] = *t
	}
	if req.Options.MaxTokens > 0 {
		opts["num_predict"] = req.Options.MaxTokens
	}
	creq := &api.ChatRequest{Model: model, Options: opts}
	if req.System != "" {
		creq.Messages = append(creq.Messages, api.Message{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		am := api.Message{Role: string(m.Role), Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		for i, tc := range m.ToolCalls {
			args := api.NewToolCallFunctionArguments()
			if len(tc.Args) > 0 && json.Valid(tc.Args) {
				// A model's invalid arguments were answered with a
				// corrective error; the history shows the call without them.
				if err := args.UnmarshalJSON(tc.Args); err != nil {
					args = api.NewToolCallFunctionArguments()
				}
			}
			am.ToolCalls = append(am.ToolCalls, api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Index: i, Name: tc.Name, Arguments: args}})
		}
		creq.Messages = append(creq.Messages, am)
	}
	for _, t := range req.Tools {
		var params api.ToolFunctionParameters
		b, err := json.Marshal(t.Schema)
		if err != nil {
			return nil, fmt.Errorf("encoding schema of tool %s: %w", t.Name, err)
		}
		// Through JSON because ToolPropertiesMap keeps the schema's
		// property order, which jsonschema-go emits in struct field order.
		if err := json.Unmarshal(b, &params); err != nil {
			return nil, fmt.Errorf("converting schema of tool %s: %w", t.Name, err)
		}
		sayConstraints(params.Properties, t.Schema)
		creq.Tools = append(creq.Tools, api.Tool{Type: "function", Function: api.ToolFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if req.Schema != nil {
		b, err := json.Marshal(req.Schema)
		if err != nil {
			return nil, fmt.Errorf("encoding reply schema: %w", err)
		}
		creq.Format = b
	}
	return creq, nil
}

func (o *ollama) classify(model string, err error) *CallError {
	var se api.StatusError
	var ae api.AuthorizationError
	switch {
	case errors.As(err, &ae):
		ce := o.callError(ErrAuth, model, err)
		if ae.SigninURL != "" {
			ce.Fix = "sign in at " + ae.SigninURL
		}
		return ce
	case errors.As(err, &se):
		return o.callError(classifyStatus(se.StatusCode, se.ErrorMessage), model, err)
	}
	return nil
}

// probe asks the server for its version and pulled models and compares them
// with the models the configuration names for this provider.
func (o *ollama) probe(ctx context.Context, configured []string) Health {
	h := Health{Provider: o.name}
	v, err := o.client.Version(ctx)
	if err == nil {
		h.Reachable, h.Version = true, v
		var list *api.ListResponse
		if list, err = o.client.List(ctx); err == nil {
			for _, m := range list.Models {
				h.Models = append(h.Models, m.Name)
			}
		}
	}
	if err != nil {
		h.Err = o.probeError(ctx, err, o.classify)
		h.Fix = Fix(h.Err)
		return h
	}
	slices.Sort(h.Models)
	have := map[string]bool{}
	for _, m := range h.Models {
		have[withTag(m)] = true
	}
	var pulls []string
	for _, m := range configured {
		if !have[withTag(m)] {
			h.Missing = append(h.Missing, m)
			pulls = append(pulls, "ollama pull "+m)
		}
	}
	if len(pulls) > 0 {
		h.Fix = strings.Join(pulls, " && ")
		h.Err = &CallError{Class: ErrModelMissing, Provider: o.name, Model: strings.Join(h.Missing, ", "), Fix: h.Fix, Err: errors.New("configured but not pulled")}
	}
	return h
}

// withTag makes "qwen2.5" and "qwen2.5:latest" compare equal, as Ollama does.
func withTag(name string) string {
	if strings.Contains(name[strings.LastIndex(name, "/")+1:], ":") {
		return name
	}
	return name + ":latest"
}

// sayConstraints writes the constraints of each property that Ollama's
// tool parameters cannot carry (a property keeps its type, description and
// enum; a list's items keep all) into its description, so the model still
// reads them: "YYYY-MM-DD" as a pattern, "one line" as a maxLength. The
// tool loop validates a call against the whole schema either way.
func sayConstraints(props *api.ToolPropertiesMap, s *jsonschema.Schema) {
	if props == nil || s == nil {
		return
	}
	said := map[string]api.ToolProperty{}
	for name, p := range props.All() {
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		sayConstraints(p.Properties, ps)
		if notes := constraintNotes(ps); notes != "" {
			p.Description = strings.TrimSpace(p.Description + " (" + notes + ")")
			said[name] = p
		}
	}
	for name, p := range said {
		props.Set(name, p)
	}
}

func constraintNotes(s *jsonschema.Schema) string {
	var notes []string
	if s.Pattern != "" {
		notes = append(notes, "matching "+s.Pattern)
	}
	for _, c := range []struct {
		n          *int
		bound, per string
	}{{s.MinLength, "at least", "character"}, {s.MaxLength, "at most", "character"}, {s.MinItems, "at least", "item"}, {s.MaxItems, "at most", "item"}} {
		if c.n != nil {
			notes = append(notes, fmt.Sprintf("%s %d %s", c.bound, *c.n, c.per))
			if *c.n != 1 {
				notes[len(notes)-1] += "s"
			}
		}
	}
	return strings.Join(notes, "; ")
}

// embed calls /api/embed with truncate false: Ollama's default cuts a text
// longer than the window to fit and embeds what is left, which would file
// a section under the meaning of its first part. keep_alive is left to
// the server, as for chat.
func (o *ollama) embed(ctx context.Context, model string, texts []string, numCtx int) ([][]float32, int, error) {
	truncate := false
	var resp *api.EmbedResponse
	err := o.attempt(ctx, model, func(ctx context.Context) error {
		var err error
		resp, err = o.client.Embed(ctx, &api.EmbedRequest{
			Model:    model,
			Input:    texts,
			Truncate: &truncate,
			Options:  map[string]any{"num_ctx": numCtx},
		})
		return err
	}, o.classify)
	if err != nil {
		return nil, 0, err
	}
	return resp.Embeddings, resp.PromptEvalCount, nil
}
