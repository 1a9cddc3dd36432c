package llm_test

import (
	"encoding/json"
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
