// Package kit holds the few small pieces the agents' parts (task,
// changes, templates, evolution) write the same way: diffs in prompts
// and the tools the models call. It knows nothing of agents, change sets
// or templates.
package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/google/jsonschema-go/jsonschema"
)

// Diff is a unified diff of old and new, named from and to, with context
// lines around each change. A last line without a line break is diffed
// as if it had one, which a model reads more easily than a "\ No newline"
// marker.
func Diff(from, to, old, new string, context int) string {
	old, new = withFinalNewline(old), withFinalNewline(new)
	// ToUnified fails only on edits inconsistent with old, and Lines
	// computes them from it.
	d, _ := udiff.ToUnified(from, to, old, udiff.Lines(old, new), context)
	return d
}

// withFinalNewline is s ending in a line break unless it is empty.
func withFinalNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// Tool is one tool a model may call; it implements llm.Tool.
type Tool struct {
	ToolName, About string
	ArgSchema       *jsonschema.Schema
	Do              func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t *Tool) Name() string               { return t.ToolName }
func (t *Tool) Description() string        { return t.About }
func (t *Tool) Schema() *jsonschema.Schema { return t.ArgSchema }
func (t *Tool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.Do(ctx, args)
}

// SchemaFor generates a tool's argument schema from its Go type, then lets
// edit tighten it (enums, patterns, minimums) where Go types cannot say it.
func SchemaFor[T any](edit func(s *jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(T), err)) // the argument types are fixed at compile time
	}
	if edit != nil {
		edit(s)
	}
	return s
}

// SetProp lets f tighten the schema of one property.
func SetProp(s *jsonschema.Schema, name string, f func(p *jsonschema.Schema)) { f(s.Properties[name]) }

// One is a pointer to n, for a schema's minimums.
func One(n int) *int { return &n }
