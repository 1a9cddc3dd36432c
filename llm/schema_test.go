package llm_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

type verdict string

func (verdict) EnumValues() []string { return []string{"sufficient", "insufficient"} }

// judged has an enum at the top, inside a slice of structs and behind a
// pointer, and a plain string beside it that stays free text.
type judged struct {
	Note    string    `json:"note"`
	Parts   []part    `json:"parts"`
	Maybe   *verdict  `json:"maybe,omitempty"`
	Verdict verdict   `json:"verdict" jsonschema:"decided last"`
	Others  []verdict `json:"others"`
}

type part struct {
	Verdict verdict `json:"verdict"`
}

func TestSchemaForGivesEnumTypesTheirEnum(t *testing.T) {
	s, err := llm.SchemaFor[judged]()
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"sufficient", "insufficient"}
	for name, got := range map[string][]any{
		"verdict":       s.Properties["verdict"].Enum,
		"parts.verdict": s.Properties["parts"].Items.Properties["verdict"].Enum,
		"others[]":      s.Properties["others"].Items.Enum,
	} {
		if !slices.Equal(got, want) {
			t.Errorf("%s enum = %v, want %v", name, got, want)
		}
	}
	if m := s.Properties["maybe"]; !slices.Equal(m.Enum, want) || !slices.Contains(m.Types, "null") {
		t.Errorf("pointer enum = %+v, want the enum or null", m)
	}
	if s.Properties["note"].Enum != nil {
		t.Error("a plain string got an enum")
	}
	if d := s.Properties["verdict"].Description; d != "decided last" {
		t.Errorf("description = %q, want the field's jsonschema tag", d)
	}
	b, _ := json.Marshal(s)
	if got := keyOrder(t, b, "properties"); !slices.Equal(got, []string{"note", "parts", "maybe", "verdict", "others"}) {
		t.Errorf("property order = %v, want struct order", got)
	}
}

// A word outside the set is not guessed at: the reply is sent back with
// the validation error, and the format on the wire carries the enum.
func TestStructuredRetriesAWordOutsideItsEnum(t *testing.T) {
	bad := `{"note":"n","parts":[],"verdict":"probably","others":[]}`
	good := `{"note":"n","parts":[],"verdict":"insufficient","others":[]}`
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: bad}, llmtest.Reply{Content: good})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))

	got, _, err := llm.Structured[judged](t.Context(), c, userAsks("q"))
	if err != nil || got.Verdict != "insufficient" {
		t.Fatalf("got %+v, %v", got, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if !strings.Contains(string(reqs[0].Format), `"enum":["sufficient","insufficient"]`) {
		t.Errorf("format on the wire lacks the enum: %s", reqs[0].Format)
	}
	fix := reqs[1].Messages[len(reqs[1].Messages)-1]
	if fix.Role != "user" || !strings.Contains(fix.Content, "verdict") || !strings.Contains(fix.Content, "probably") {
		t.Errorf("corrective message = %q, want the verdict's validation error", fix.Content)
	}
}

// instruction is tagged the way the query agents' outputs are.
type instruction struct {
	From     string   `json:"from" llm:"day"`
	Purpose  string   `json:"purpose" llm:"line"`
	Keywords []string `json:"keywords" llm:"word"`
	Score    float64  `json:"score" llm:"unit"`
	Free     string   `json:"free"`
}

type plan struct {
	Steps []instruction `json:"steps"`
	First *instruction  `json:"first,omitempty"`
}

func TestSchemaForConstrainsTaggedFields(t *testing.T) {
	s, err := llm.SchemaFor[plan]()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"steps", "first"} {
		props := s.Properties[in].Properties
		if in == "steps" {
			props = s.Properties[in].Items.Properties
		}
		if props["from"].Pattern != llm.DayPattern {
			t.Errorf("%s.from pattern %q", in, props["from"].Pattern)
		}
		if p := props["purpose"]; p.MaxLength == nil || *p.MaxLength != llm.LineMax || p.Pattern == "" {
			t.Errorf("%s.purpose: maxLength %v pattern %q", in, p.MaxLength, p.Pattern)
		}
		if k := props["keywords"]; k.MaxLength != nil || k.Items.MaxLength == nil || *k.Items.MaxLength != llm.WordMax {
			t.Errorf("%s.keywords: the list or its items unconstrained: %+v", in, k)
		}
		if u := props["score"]; u.Minimum == nil || *u.Minimum != 0 || u.Maximum == nil || *u.Maximum != 1 {
			t.Errorf("%s.score: %+v", in, u)
		}
		if f := props["free"]; f.Pattern != "" || f.MaxLength != nil {
			t.Errorf("%s.free got constraints: %+v", in, f)
		}
	}
}

// A reply that breaks a tag's constraint is re-asked, with the reason,
// and a model that never keeps it fails as a parse error: a date in words
// never reaches the caller.
func TestStructuredHoldsTaggedConstraints(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: `{"from":"last week","purpose":"p","keywords":[],"score":0.5,"free":""}`},
		llmtest.Reply{Content: `{"from":"2026-11-09","purpose":"p","keywords":[],"score":0.5,"free":""}`})
	cfg := testConfig("ollama", "", map[string]string{"ollama": fake.URL})
	cfg.Retry.ParseRetry = 1
	c := newClient(t, cfg)
	got, _, err := llm.Structured[instruction](t.Context(), c, userAsks("plan it"))
	if err != nil || got.From != "2026-11-09" {
		t.Fatalf("got %+v, %v", got, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "from") {
		t.Fatalf("%d requests; the retry does not name the field", len(reqs))
	}
	var format struct {
		Properties map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(reqs[0].Format, &format); err != nil || format.Properties["from"].Pattern != llm.DayPattern {
		t.Errorf("the format on the wire carries no day pattern: %s", reqs[0].Format)
	}

	fake.Handle(llmtest.Weak{Fault: llmtest.DatesInWords}.Ollama)
	if _, _, err := llm.Structured[instruction](t.Context(), c, userAsks("plan it")); !errors.Is(err, llm.ErrParse) {
		t.Errorf("a model that writes dates in words: err %v, want a parse error", err)
	}
}

// Ollama's tool parameters keep a property's type, description and enum
// only: its pattern and length bounds are said in its description, nested
// properties' too, in the schema's property order.
func TestOllamaToolsSayWhatTheirTypeCannotCarry(t *testing.T) {
	fake := llmtest.NewOllama(t, ollamaModel)
	fake.Script(llmtest.Reply{Content: "done"})
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	schema, err := llm.SchemaFor[plan]()
	if err != nil {
		t.Fatal(err)
	}
	req := userAsks("plan it")
	req.Tools = []llm.ToolSpec{{Name: "plan", Description: "Plan.", Schema: schema}}
	if _, err := c.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	params := fake.Requests()[0].Tools[0].Function.Parameters
	first, ok := params.Properties.Get("first")
	if !ok {
		t.Fatalf("no property first: %v", params)
	}
	var names []string
	for name, p := range first.Properties.All() {
		names = append(names, name)
		var want string
		switch name {
		case "from":
			want = "(matching " + llm.DayPattern + ")"
		case "purpose":
			want = "at most 300 characters)"
		}
		if !strings.Contains(p.Description, want) {
			t.Errorf("first.%s description %q does not say %q", name, p.Description, want)
		}
	}
	if !slices.Equal(names, []string{"from", "purpose", "keywords", "score", "free"}) {
		t.Errorf("property order %v", names)
	}
}
