package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// handler is a tool on Go types: its arguments decoded and checked
// against the input schema, its result the structured content.
type handler[In, Out any] func(context.Context, *sdk.CallToolRequest, In) (*sdk.CallToolResult, Out, error)

// add adds a tool whose input and output schemas are generated from In
// and Out (t.InputSchema, when set, is In's with enums), and its name to
// those the server answers for.
//
// It does what the SDK's AddTool does for such a tool, less the check of
// each result against the output schema: the result is a value of Out,
// whose schema that is, so the check (decoding the result again, walking
// it, encoding it a third time) costs a search a quarter of a millisecond
// and can find nothing. Arguments are checked as the SDK checks them.
func add[In, Out any](s *Server, t *sdk.Tool, h handler[In, Out]) {
	if t.InputSchema == nil {
		t.InputSchema = schema[In](nil)
	}
	in, err := t.InputSchema.(*jsonschema.Schema).Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("%s: input schema: %v", t.Name, err)) // the types in tools.go
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("%s: output schema: %v", t.Name, err))
	}
	t.OutputSchema = out
	s.tools = append(s.tools, t.Name)
	s.mcp.AddTool(t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args, err := decodeArgs[In](in, req.Params.Arguments)
		if err != nil {
			return toolError(fmt.Errorf("validating \"arguments\": %w", err)), nil
		}
		res, v, err := h(ctx, req, args)
		if err != nil {
			var wire *jsonrpc.Error
			if errors.As(err, &wire) {
				return nil, wire
			}
			return toolError(err), nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding the result of %s: %w", t.Name, err)
		}
		if res == nil {
			// The structured content as text too, for clients that read
			// only text (the MCP specification asks for it).
			res = &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
		}
		res.StructuredContent = json.RawMessage(b)
		return res, nil
	})
}

// decodeArgs checks a call's arguments against the resolved input schema
// and decodes them; no arguments are {}.
func decodeArgs[In any](schema *jsonschema.Resolved, raw json.RawMessage) (In, error) {
	var in In
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return in, err
	}
	if err := schema.Validate(v); err != nil {
		return in, err
	}
	// The schema holds no defaults to apply, and the names it allows are
	// In's own, so the arguments decode as they are.
	err := json.Unmarshal(raw, &in)
	return in, err
}

func toolError(err error) *sdk.CallToolResult {
	var res sdk.CallToolResult
	res.SetError(err)
	return &res
}
