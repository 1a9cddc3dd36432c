// Package kit holds the few small pieces the agents' parts (task,
// changes, templates, evolution) write the same way: quoted YAML in the
// files margin writes, diffs in prompts, and the tools the models call.
// It knows nothing of agents, change sets or templates.
package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/pmezard/go-difflib/difflib"
)

// YAMLString quotes s for YAML. A JSON string is a valid YAML
// double-quoted scalar, and quoting every value keeps a tldr such as
// "yes" or "2026-11-25" a string.
func YAMLString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// YAMLName writes a name plain when YAML reads it back as the same
// string, quoted otherwise ("2026", "yes", names with spaces).
func YAMLName(s string) string {
	if plainName.MatchString(s) && !slices.Contains([]string{"true", "false", "yes", "no", "on", "off", "null", "y", "n"}, strings.ToLower(s)) {
		return s
	}
	return YAMLString(s)
}

var plainName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// diffLines splits text into lines that each end in a newline; unlike
// difflib.SplitLines it adds no empty line after a final newline, which
// would show as a spurious blank line in every diff.
func diffLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		lines[len(lines)-1] += "\n"
	}
	return lines
}

// Diff is a unified diff of old and new, named from and to, with context
// lines around each change.
func Diff(from, to, old, new string, context int) string {
	// GetUnifiedDiffString fails only when writing to its strings.Builder
	// does, which never happens.
	d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: diffLines(old), B: diffLines(new), FromFile: from, ToFile: to, Context: context,
	})
	return d
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
