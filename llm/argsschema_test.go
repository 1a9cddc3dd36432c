package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/margin-md/margin/llm"
)

type dueArgs struct {
	Title string `json:"title"`
	Due   string `json:"due" llm:"day"`
}

func TestArgsSchema(t *testing.T) {
	s := llm.ArgsSchema[dueArgs](func(s *jsonschema.Schema) { s.Properties["title"].MinLength = jsonschema.Ptr(1) })
	if got := s.Properties["due"].Pattern; got != llm.DayPattern {
		t.Errorf("due pattern = %q, want the llm:\"day\" kind's", got)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, args string
		ok         bool
	}{
		{"a title and a day", `{"title": "Plan", "due": "2026-11-29"}`, true},
		{"an empty title, as tightened", `{"title": "", "due": "2026-11-29"}`, false},
		{"not a day", `{"title": "Plan", "due": "soon"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			if err := json.Unmarshal([]byte(tc.args), &v); err != nil {
				t.Fatal(err)
			}
			if err := rs.Validate(v); (err == nil) != tc.ok {
				t.Errorf("Validate(%s) = %v, want ok %v", tc.args, err, tc.ok)
			}
		})
	}
}

func TestArgsSchemaPanicsWithoutASchema(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("ArgsSchema of a channel did not panic")
		}
	}()
	llm.ArgsSchema[struct{ C chan int }](nil)
}

func TestFuncTool(t *testing.T) {
	var tool llm.Tool = &llm.FuncTool{ToolName: "echo", About: "Says it back.", ArgSchema: llm.ArgsSchema[dueArgs](nil),
		Do: func(_ context.Context, args json.RawMessage) (string, error) { return "got " + string(args), nil }}
	out, err := tool.Run(context.Background(), json.RawMessage(`{"title":"x"}`))
	if tool.Name() != "echo" || tool.Description() != "Says it back." || tool.Schema().Properties["title"] == nil || err != nil || out != `got {"title":"x"}` {
		t.Errorf("FuncTool = %s %q %v, ran to %q, %v", tool.Name(), tool.Description(), tool.Schema(), out, err)
	}
}
