package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Structured asks the model serving req.Role for a reply of type T.
//
// The JSON schema is generated from T with [SchemaFor], which lists
// properties in struct field order (Schema.PropertyOrder) and marshals them
// in that order; the order reaches the wire unchanged (Ollama's format,
// OpenAI's response_format, Anthropic's forced tool), and models generate
// fields in schema order — so a field that must be decided last, such as
// the analyzer's verdict, is declared last in its struct. A closed set of
// words is an [Enum] type, so a word outside it is a validation error.
//
// The reply is repaired where that cannot change its meaning (a byte-order
// mark, a ```json fence, prose around one complete JSON value), validated
// against the schema, and unmarshalled. A reply that still does not match
// is sent back with the validation error as a corrective user message, up
// to llm.retry.parse_retry times; then the error is a [ParseError]. The
// returned Response is the last one received.
func Structured[T any](ctx context.Context, c *Client, req Request) (T, Response, error) {
	var zero T
	if len(req.Tools) > 0 {
		return zero, Response{}, fmt.Errorf("structured reply for role %s: %w", req.Role, errFormatWithTools)
	}
	schema, err := SchemaFor[T]()
	if err != nil {
		return zero, Response{}, fmt.Errorf("schema for role %s: %w", req.Role, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return zero, Response{}, fmt.Errorf("schema for role %s: %w", req.Role, err)
	}
	req.Schema = schema
	req.Messages = slices.Clip(req.Messages)
	attempts := 1 + c.cfg.Retry.ParseRetry
	var (
		resp Response
		perr error
	)
	for range attempts {
		resp, err = c.Chat(ctx, req)
		if err != nil {
			return zero, resp, err
		}
		var v T
		if v, perr = decode[T](resp.Message.Content, resolved); perr == nil {
			return v, resp, nil
		}
		req.Messages = append(req.Messages,
			Message{Role: RoleAssistant, Content: resp.Message.Content},
			Message{Role: RoleUser, Content: "Your reply could not be used: " + perr.Error() +
				". Reply again with only the JSON value, matching the schema exactly."})
	}
	return zero, resp, &ParseError{Role: req.Role, Attempts: attempts, Reply: resp.Message.Content, Err: perr}
}

func decode[T any](reply string, schema *jsonschema.Resolved) (T, error) {
	var v T
	raw, err := extractJSON(reply, schema.Schema().Type)
	if err != nil {
		return v, err
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return v, fmt.Errorf("the reply is not valid JSON: %w", err)
	}
	if err := schema.Validate(instance); err != nil {
		return v, errors.New(readableValidation(err))
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("the reply does not fit the expected types: %w", err)
	}
	return v, nil
}

// extractJSON returns the first complete JSON value of the schema's type
// (object or array) in reply. Skipping to its opening bracket removes a
// BOM, a ```json fence and any leading prose; decoding one value stops
// before a closing fence and any trailing prose. It never edits the JSON
// itself: a value that needs more than that is re-asked for, not guessed.
func extractJSON(reply, schemaType string) (json.RawMessage, error) {
	open := "{["
	switch schemaType {
	case "object":
		open = "{"
	case "array":
		open = "["
	}
	i := strings.IndexAny(reply, open)
	if i < 0 {
		return nil, errors.New("the reply contains no JSON value")
	}
	var raw json.RawMessage
	if err := json.NewDecoder(strings.NewReader(reply[i:])).Decode(&raw); err != nil {
		return nil, fmt.Errorf("the reply is not valid JSON: %w", err)
	}
	return raw, nil
}

// readableValidation drops jsonschema-go's "validating root: " preamble,
// which means nothing to a model.
func readableValidation(err error) string {
	return strings.ReplaceAll(err.Error(), "validating root: ", "")
}
