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

// Model is what the tool loop talks to: a [*Client], or anything that
// answers a [Request] the same way.
type Model interface {
	Chat(ctx context.Context, req Request) (Response, error)
}

// Tool is something the model may call.
type Tool interface {
	Name() string
	Description() string
	// Schema describes the arguments; calls are validated against it
	// before Run sees them.
	Schema() *jsonschema.Schema
	// Run does the work and returns what the model is told. An error is
	// told to the model too (as "error: ..."), so it can correct itself.
	Run(ctx context.Context, args json.RawMessage) (string, error)
}

// FuncTool is a [Tool] made of its parts: the agents' tools are each a
// name, a description, a schema of their arguments (see [ArgsSchema]) and
// a function.
type FuncTool struct {
	ToolName, About string
	ArgSchema       *jsonschema.Schema
	Do              func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t *FuncTool) Name() string               { return t.ToolName }
func (t *FuncTool) Description() string        { return t.About }
func (t *FuncTool) Schema() *jsonschema.Schema { return t.ArgSchema }
func (t *FuncTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.Do(ctx, args)
}

// Errors a tool call can fail with before its tool runs.
var (
	ErrUnknownTool = errors.New("unknown tool")
	ErrInvalidArgs = errors.New("invalid arguments")
)

// Toolbox is the set of tools offered in one loop, in the order the model
// sees them.
type Toolbox struct {
	tools   []Tool
	schemas map[string]*jsonschema.Resolved
	// withheld are tools not offered in this loop, by why; a call to
	// one is told why instead of only that the tool is unknown.
	withheld map[string]string
}

// NewToolbox resolves each tool's schema once, so every call is validated
// against it without recompiling.
func NewToolbox(tools ...Tool) (*Toolbox, error) {
	b := &Toolbox{schemas: make(map[string]*jsonschema.Resolved, len(tools))}
	for _, t := range tools {
		name := t.Name()
		if _, dup := b.schemas[name]; dup {
			return nil, fmt.Errorf("tool %s registered twice", name)
		}
		rs, err := t.Schema().Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("schema of tool %s: %w", name, err)
		}
		b.schemas[name] = rs
		b.tools = append(b.tools, t)
	}
	return b, nil
}

// Withhold names a tool that is not offered because it cannot apply, and
// why: a model that calls it anyway is told the reason, so it does not
// retry the call.
func (b *Toolbox) Withhold(name, why string) {
	if b.withheld == nil {
		b.withheld = map[string]string{}
	}
	b.withheld[name] = why
}

// Specs describes the tools to the model.
func (b *Toolbox) Specs() []ToolSpec {
	specs := make([]ToolSpec, len(b.tools))
	for i, t := range b.tools {
		specs[i] = ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema()}
	}
	return specs
}

func (b *Toolbox) names() string {
	names := make([]string, len(b.tools))
	for i, t := range b.tools {
		names[i] = t.Name()
	}
	return strings.Join(names, ", ")
}

// call validates and runs one call. The returned text is what the model is
// told; err says why the call failed (nil when the tool ran cleanly).
func (b *Toolbox) call(ctx context.Context, tc ToolCall) (string, error) {
	i := slices.IndexFunc(b.tools, func(t Tool) bool { return t.Name() == tc.Name })
	if i < 0 {
		err := fmt.Errorf("%w %q; available: %s", ErrUnknownTool, tc.Name, b.names())
		if why, ok := b.withheld[tc.Name]; ok {
			err = fmt.Errorf("%w %q: it is not offered, because %s; available: %s", ErrUnknownTool, tc.Name, why, b.names())
		}
		return "error: " + err.Error(), err
	}
	tool := b.tools[i]
	args := tc.Args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		err = fmt.Errorf("%w for %s: not JSON: %v", ErrInvalidArgs, tc.Name, err)
		return "error: " + err.Error(), err
	}
	if verr := b.schemas[tc.Name].Validate(instance); verr != nil {
		schema, _ := json.Marshal(tool.Schema())
		err := fmt.Errorf("%w for %s: %s", ErrInvalidArgs, tc.Name, readableValidation(verr))
		return fmt.Sprintf("error: %v. The arguments must match this schema: %s", err, schema), err
	}
	out, err := tool.Run(ctx, args)
	if err != nil {
		return "error: " + err.Error(), err
	}
	return out, nil
}

// defaultMaxTurns is agents.max_turns' documented default (SPEC §4.1).
const defaultMaxTurns = 5

// Loop bounds a tool loop.
type Loop struct {
	// MaxTurns caps model calls; 0 means defaultMaxTurns.
	MaxTurns int
	// StopAfter ends the loop once a call to one of these tools has run
	// cleanly (the task agent stops after update_report).
	StopAfter []string
}

// StopReason says why a loop ended.
type StopReason string

const (
	// StopAnswered: the model replied without calling a tool.
	StopAnswered StopReason = "answered"
	// StopTool: a StopAfter tool ran.
	StopTool StopReason = "tool"
	// StopMaxTurns: the turn cap was reached with the model still calling tools.
	StopMaxTurns StopReason = "max_turns"
)

// ToolOutcome is one call the loop handled.
type ToolOutcome struct {
	Call ToolCall
	// Result is what the model was told.
	Result string
	// Err is why the call failed: [ErrUnknownTool], [ErrInvalidArgs], or
	// the tool's own error. Nil when it ran cleanly.
	Err error
}

// LoopResult is what a tool loop did.
type LoopResult struct {
	// Messages is the conversation after the loop: the request's messages,
	// then each assistant turn and its tool results.
	Messages []Message
	Turns    int
	Stop     StopReason
	// Calls lists every call in order, including the failed ones.
	Calls []ToolOutcome
	// Last is the last model response.
	Last Response
}

// RunTools runs the tool-call loop: it offers box's tools, runs the calls
// the model makes (each validated against its tool's schema first; unknown
// tools and invalid arguments are answered with a corrective error instead
// of running), feeds the results back as tool messages carrying the call id
// and tool name, and repeats until the model answers without tools, a
// StopAfter tool has run, or MaxTurns model calls were made. A model
// failure or a cancelled ctx ends it with an error; the result still shows
// what happened before.
func RunTools(ctx context.Context, m Model, req Request, box *Toolbox, loop Loop) (LoopResult, error) {
	maxTurns := loop.MaxTurns
	if maxTurns <= 0 {
		maxTurns = defaultMaxTurns
	}
	req.Tools = box.Specs()
	req.Messages = slices.Clip(req.Messages)
	res := LoopResult{Stop: StopMaxTurns}
	for res.Turns < maxTurns {
		resp, err := m.Chat(ctx, req)
		if err != nil {
			res.Messages = req.Messages
			return res, fmt.Errorf("tool loop turn %d: %w", res.Turns+1, err)
		}
		res.Turns++
		res.Last = resp
		req.Messages = append(req.Messages, resp.Message)
		if len(resp.Message.ToolCalls) == 0 {
			res.Stop = StopAnswered
			break
		}
		stop := false
		for _, tc := range resp.Message.ToolCalls {
			out, err := box.call(ctx, tc)
			if ctx.Err() != nil {
				res.Messages = req.Messages
				return res, fmt.Errorf("tool loop: running %s: %w", tc.Name, ctx.Err())
			}
			res.Calls = append(res.Calls, ToolOutcome{Call: tc, Result: out, Err: err})
			req.Messages = append(req.Messages, Message{Role: RoleTool, Content: out, ToolCallID: tc.ID, ToolName: tc.Name})
			stop = stop || err == nil && slices.Contains(loop.StopAfter, tc.Name)
		}
		if stop {
			res.Stop = StopTool
			break
		}
	}
	res.Messages = req.Messages
	return res, nil
}
