package llmtest

import (
	"encoding/json"
	"slices"
	"strings"
)

// Fault is one way a small local model answers badly while keeping to the
// shape it was asked for.
type Fault string

// The faults a [Weak] model can have.
const (
	// Filler fills every free string with "ok" and every list of strings
	// with ["ok"]: dates, globs and tags included.
	Filler Fault = "filler"
	// DatesInWords writes dates as words ("last week").
	DatesInWords Fault = "dates in words"
	// Headings puts markdown headings inside text fields.
	Headings Fault = "headings"
	// EveryOptional fills every property, required or not, and sets every
	// flag: a correction target on a plain entry, clarify questions on a
	// plan that needs none.
	EveryOptional Fault = "every optional field"
	// NearDuplicates gives every list two items that differ only in case
	// and punctuation.
	NearDuplicates Fault = "near duplicates"
	// MissingPaths cites paths and links that do not exist, and writes
	// globs that match nothing.
	MissingPaths Fault = "missing paths"
	// OtherLanguage writes text in French, whatever the notes' language.
	OtherLanguage Fault = "other language"
	// Cut stops the reply mid-JSON, as a model does when it runs out of
	// tokens (done reason "length").
	Cut Fault = "cut"
)

// Faults lists every [Fault], for table tests to range over.
var Faults = []Fault{Filler, DatesInWords, Headings, EveryOptional, NearDuplicates, MissingPaths, OtherLanguage, Cut}

// The junk a weak model writes, exported so tests can look for it.
const (
	// WordDate is the date a [DatesInWords] model writes.
	WordDate = "last week"
	// MissingPath is the path a [MissingPaths] model cites and uses as a
	// glob; MissingLink is the wiki link it cites.
	MissingPath = "Notes/Never written.md"
	MissingLink = "[[Never written]]"
	// ForeignText is what an [OtherLanguage] model writes in text fields.
	ForeignText = "Voici la réponse d'après vos notes."
	// HeadingText is what a [Headings] model writes in text fields.
	HeadingText = "## Summary\n\nok"
)

// Weak is a model profile that answers every request the way small local
// models do: JSON that has the requested shape, with the one Fault's junk in
// it. It knows nothing about margin's flows: every value is built from the
// JSON schema the request carries (Ollama's format, OpenAI's
// response_format), and a request offering tools gets one call to Tool (the
// first tool offered when empty) with arguments built from that tool's
// parameter schema. After a tool result it ends the turn with text.
//
// Closed sets keep to the schema's enum (its first word), numbers to its
// minimum and lists to their minItems, so only what a schema leaves free,
// or what the model ignores (a date pattern, a maxLength), carries the
// fault. Fields are told apart by name: from, to, date, due... are dates;
// path, link, glob, evidence, citation, source, entry, target are paths;
// any other string is text. Fields a fault does not touch are left empty.
//
// Use a method value as a fake's handler:
//
//	fake.Handle(llmtest.Weak{Fault: llmtest.Filler}.Ollama)
type Weak struct {
	Fault Fault
	// Tool names the tool a tool-calling request gets a call to.
	Tool string
}

// Ollama answers an Ollama chat request.
func (w Weak) Ollama(req OllamaRequest) Reply {
	n := len(req.Messages)
	afterTool := n > 0 && req.Messages[n-1].Role == "tool"
	var tools []weakTool
	for _, t := range req.Tools {
		params, _ := json.Marshal(t.Function.Parameters)
		tools = append(tools, weakTool{t.Function.Name, params})
	}
	return w.reply(formatSchema(req.Format), tools, afterTool)
}

// OpenAI answers an OpenAI-compatible chat request.
func (w Weak) OpenAI(req OpenAIRequest) Reply {
	n := len(req.Messages)
	afterTool := n > 0 && req.Messages[n-1].Role == "tool"
	var format struct {
		JSONSchema struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	}
	_ = json.Unmarshal(req.ResponseFormat, &format)
	var tools []weakTool
	for _, raw := range req.Tools {
		var t struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		_ = json.Unmarshal(raw, &t)
		tools = append(tools, weakTool{t.Function.Name, t.Function.Parameters})
	}
	return w.reply(formatSchema(format.JSONSchema.Schema), tools, afterTool)
}

type weakTool struct {
	name   string
	params json.RawMessage
}

// formatSchema is the schema of a format field, or nil for none or for
// Ollama's bare "json".
func formatSchema(raw json.RawMessage) map[string]any {
	var s map[string]any
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return s
}

func (w Weak) reply(schema map[string]any, tools []weakTool, afterTool bool) Reply {
	if schema != nil {
		return w.jsonReply(schema)
	}
	if len(tools) > 0 && !afterTool {
		t := tools[0]
		if i := slices.IndexFunc(tools, func(t weakTool) bool { return t.name == w.Tool }); i >= 0 {
			t = tools[i]
		}
		params := formatSchema(t.params)
		if w.Fault == Cut {
			// Small models that lose the thread write the call as text.
			return w.jsonReply(params)
		}
		return Reply{ToolCalls: []ToolCall{{Name: t.name, Args: w.value(params, params, "", 0)}}}
	}
	return Reply{Content: w.text()}
}

func (w Weak) jsonReply(schema map[string]any) Reply {
	if w.Fault != Cut {
		return Reply{JSON: w.value(schema, schema, "", 0)}
	}
	full := Weak{Fault: EveryOptional}
	b, _ := json.Marshal(full.value(schema, schema, "", 0))
	return Reply{Content: string(b[:len(b)/2]), DoneReason: "length"}
}

type strKind int

const (
	kindText strKind = iota
	kindDate
	kindPath
)

var (
	dateNames = []string{"from", "to", "date", "due", "day", "since", "until", "when", "scheduled"}
	pathWords = []string{"path", "link", "glob", "evidence", "citation", "cited", "source", "entry", "target", "file"}
)

// kindOf tells a string field's kind from its name and schema.
func kindOf(name string, s map[string]any) strKind {
	desc, _ := s["description"].(string)
	if f, _ := s["format"].(string); f == "date" || f == "date-time" || strings.Contains(desc, "YYYY-MM-DD") {
		return kindDate
	}
	lower := strings.ToLower(name)
	for _, part := range strings.FieldsFunc(lower, func(r rune) bool { return r == '_' || r == '-' }) {
		if slices.Contains(dateNames, part) {
			return kindDate
		}
	}
	for _, p := range pathWords {
		if strings.Contains(lower, p) {
			return kindPath
		}
	}
	return kindText
}

// value builds a JSON value for schema s, the schema of property name
// (empty at the top); item is its index in a list, for near duplicates.
func (w Weak) value(root, s map[string]any, name string, item int) any {
	s = resolve(root, s)
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	if c, ok := s["const"]; ok {
		return c
	}
	switch schemaType(s) {
	case "object":
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				r, _ := r.(string)
				required[r] = true
			}
		}
		out := map[string]any{}
		for key, ps := range props {
			if required[key] || w.Fault == EveryOptional {
				ps, _ := ps.(map[string]any)
				out[key] = w.value(root, ps, key, item)
			}
		}
		return out
	case "array":
		items, _ := s["items"].(map[string]any)
		n := w.listLen(root, items, name)
		if m, ok := s["minItems"].(float64); ok {
			n = max(n, int(m))
		}
		if m, ok := s["maxItems"].(float64); ok {
			n = min(n, int(m))
		}
		out := make([]any, n)
		for i := range out {
			out[i] = w.value(root, items, name, i)
		}
		return out
	case "string":
		return w.str(name, kindOf(name, s), item)
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		if w.Fault == EveryOptional {
			return 1
		}
		return 0
	case "boolean":
		return w.Fault == EveryOptional
	case "null":
		return nil
	}
	return map[string]any{}
}

// listLen is how many items a list gets: lists of objects one, so the
// fault reaches their fields; lists of strings only when the fault is in
// them.
func (w Weak) listLen(root, items map[string]any, name string) int {
	if w.Fault == NearDuplicates {
		return 2
	}
	if schemaType(resolve(root, items)) != "string" {
		return 1
	}
	if w.str(name, kindOf(name, resolve(root, items)), 0) != "" {
		return 1
	}
	return 0
}

// str is the string a faulty model writes for a field of kind k.
func (w Weak) str(name string, k strKind, item int) string {
	switch {
	case w.Fault == Filler:
		return "ok"
	case w.Fault == DatesInWords && k == kindDate:
		return WordDate
	case w.Fault == MissingPaths && k == kindPath:
		if item%2 == 1 {
			return MissingLink
		}
		return MissingPath
	case w.Fault == Headings && k == kindText:
		return HeadingText
	case w.Fault == OtherLanguage && k == kindText:
		return ForeignText
	case w.Fault == EveryOptional && k != kindDate:
		return "The " + strings.ReplaceAll(name, "_", " ") + "."
	case w.Fault == NearDuplicates && k == kindText:
		if item%2 == 1 {
			return "same point."
		}
		return "Same point"
	}
	return ""
}

// text is a free-text reply of a model with w's fault.
func (w Weak) text() string {
	if s := w.str("reply", kindText, 0); s != "" {
		return s
	}
	return "ok"
}

func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		// ["string","null"] and the like: the first non-null type.
		for _, v := range t {
			if v, _ := v.(string); v != "null" {
				return v
			}
		}
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

// resolve follows a local $ref ("#/$defs/Name" or "#/definitions/Name").
func resolve(root, s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
	var cur any = root
	for _, p := range parts {
		m, _ := cur.(map[string]any)
		cur = m[p]
	}
	if m, ok := cur.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
