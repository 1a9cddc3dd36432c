package edit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/note"
	"go.yaml.in/yaml/v3"
)

// SetFrontmatter sets one top-level key of a note's YAML frontmatter and
// returns the new note. The key is matched case-insensitively and keeps its
// spelling and place; a missing key is added at the end of the block, and a
// note without frontmatter gets a new block. Only the bytes of that key's
// value change: order, comments, quoting, indentation and line endings of
// everything else stay as they were.
//
// value may be a string (quoted only when YAML needs it, or when the old value
// was quoted; multi-line strings become literal blocks), a bool, a number, a
// []string (a block list if the old value was one, else a flow list), any
// other value yaml.v3 can encode (maps and lists of maps as blocks), or nil,
// which deletes the key. Broken YAML is an error and src is never modified.
func SetFrontmatter(src []byte, key string, value any) ([]byte, error) {
	if value == nil {
		return DeleteFrontmatter(src, key)
	}
	out, err := setFrontmatter(src, key, value)
	if err != nil {
		return nil, fmt.Errorf("setting frontmatter key %q: %w", key, err)
	}
	return out, nil
}

// DeleteFrontmatter removes one top-level key (matched case-insensitively),
// with its value and the comment on its lines, from a note's frontmatter. A
// note without the key is returned as it is.
func DeleteFrontmatter(src []byte, key string) ([]byte, error) {
	out, err := deleteFrontmatter(src, key)
	if err != nil {
		return nil, fmt.Errorf("deleting frontmatter key %q: %w", key, err)
	}
	return out, nil
}

func setFrontmatter(src []byte, key string, value any) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	fm, ok, err := findFrontmatter(src)
	if err != nil {
		return nil, err
	}
	if !ok {
		eol := lineEnding(src)
		line, err := renderPair(key, value, "", eol)
		if err != nil {
			return nil, err
		}
		out := splice(src, fm.Open, fm.Open, "---"+eol+line+"---"+eol)
		if err := checkSplice(out, src[fm.Open:], nil, fieldChange{key: key, at: -1, value: value}); err != nil {
			return nil, err
		}
		return out, nil
	}

	y := src[fm.Start:fm.End]
	m, fields, err := parseFields(y)
	if err != nil {
		return nil, err
	}
	at, err := findKey(m, key)
	if err != nil {
		return nil, err
	}
	var (
		a, b int
		repl string
	)
	if at < 0 {
		indent := ""
		if m != nil {
			indent = strings.Repeat(" ", m.Content[0].Column-1)
		}
		if repl, err = renderPair(key, value, indent, fm.EOL); err != nil {
			return nil, err
		}
		a, b = len(y), len(y)
	} else {
		t := newYAMLText(y)
		p, err := t.locate(m.Content[2*at], m.Content[2*at+1])
		if err != nil {
			return nil, err
		}
		if a, b, repl, err = p.replacement(t, value, fm.EOL); err != nil {
			return nil, err
		}
	}
	out := splice(src, fm.Start+a, fm.Start+b, repl)
	if err := checkSplice(out, src[fm.Body:], fields, fieldChange{key: key, at: at, value: value}); err != nil {
		return nil, err
	}
	return out, nil
}

func deleteFrontmatter(src []byte, key string) ([]byte, error) {
	fm, ok, err := findFrontmatter(src)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return src, nil
	}
	y := src[fm.Start:fm.End]
	m, fields, err := parseFields(y)
	if err != nil {
		return nil, err
	}
	at, err := findKey(m, key)
	switch {
	case err != nil:
		return nil, err
	case at < 0:
		return src, nil
	}
	t := newYAMLText(y)
	p, err := t.locate(m.Content[2*at], m.Content[2*at+1])
	if err != nil {
		return nil, err
	}
	a, b := t.lines[t.lineOf(p.keyStart)], t.nextLine(t.lineOf(p.ve))
	out := splice(src, fm.Start+a, fm.Start+b, "")
	if err := checkSplice(out, src[fm.Body:], fields, fieldChange{key: key, at: at, deleted: true}); err != nil {
		return nil, err
	}
	return out, nil
}

// maxKeyLen keeps keys within YAML's limit for implicit keys (1024
// characters, quotes included).
const maxKeyLen = 1000

func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case strings.ContainsAny(key, "\r\n\u0085\u2028\u2029"):
		return errors.New("key spans lines")
	case len(key) > maxKeyLen:
		return fmt.Errorf("key longer than %d bytes", maxKeyLen)
	}
	return nil
}

// errUnterminated refuses a note that opens a frontmatter block without
// closing it: adding a block in front would make two.
var errUnterminated = errors.New("frontmatter has no closing --- line")

// findFrontmatter finds src's frontmatter block as the parser does
// (note.FindHeader); h.Open is set even when it has none, to the offset
// after any byte-order mark.
func findFrontmatter(src []byte) (h note.Header, ok bool, err error) {
	h, ok, unclosed := note.FindHeader(string(src))
	if unclosed {
		return h, false, errUnterminated
	}
	return h, ok, nil
}

// lineEnding is the line ending a note uses, judged by its first line.
func lineEnding(src []byte) string {
	if i := bytes.IndexByte(src, '\n'); i > 0 && src[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// field is one top-level key with its decoded, normalised value.
type field struct {
	key   any
	value any
}

// parseFields parses frontmatter YAML. It returns the top-level mapping (nil
// when the block is empty or holds only comments) and its fields.
func parseFields(y []byte) (*yaml.Node, []field, error) {
	dec := yaml.NewDecoder(bytes.NewReader(y))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("parsing frontmatter: %w", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, nil, errors.New("frontmatter holds more than one YAML document")
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	m := doc.Content[0]
	switch {
	case m.Kind != yaml.MappingNode:
		return nil, nil, errors.New("frontmatter is not a mapping")
	case m.Style&yaml.FlowStyle != 0:
		return nil, nil, errors.New("frontmatter is a flow mapping")
	}
	fields := make([]field, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		var k, v any
		if err := m.Content[i].Decode(&k); err != nil {
			return nil, nil, fmt.Errorf("decoding frontmatter key on line %d: %w", m.Content[i].Line, err)
		}
		if err := m.Content[i+1].Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("decoding frontmatter value on line %d: %w", m.Content[i+1].Line, err)
		}
		fields = append(fields, field{key: normalise(k), value: normalise(v)})
	}
	return m, fields, nil
}

// findKey returns the index of the pair whose key matches key
// case-insensitively, or -1. Two matches are an error: which one a reader
// would take is anyone's guess.
func findKey(m *yaml.Node, key string) (int, error) {
	at := -1
	if m == nil {
		return at, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if k.Kind == yaml.ScalarNode && strings.EqualFold(k.Value, key) {
			if at >= 0 {
				return -1, fmt.Errorf("key %q appears more than once", key)
			}
			at = i / 2
		}
	}
	return at, nil
}

// pair is where a top-level key and its value sit in the frontmatter text.
type pair struct {
	val      *yaml.Node
	indent   int // the mapping's indentation
	keyStart int
	colon    int // first byte after the key's ':'
	vs, ve   int // the value's text, its anchor and tag included; both colon when it has none
}

func (t *yamlText) locate(k, v *yaml.Node) (pair, error) {
	ks, err := t.offset(k)
	if err != nil {
		return pair{}, err
	}
	li := t.lineOf(ks)
	kc, _ := t.skipProps(ks)
	if len(bytes.Trim(t.src[t.lines[li]:ks], " ")) != 0 || t.lineOf(kc) != li {
		return pair{}, fmt.Errorf("line %d: key %q is not a simple block key", k.Line, k.Value)
	}
	var kend int
	switch {
	case k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		if kend, err = t.quotedEnd(kc); err != nil {
			return pair{}, err
		}
	case k.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) == 0 && bytes.HasPrefix(t.src[kc:], []byte(k.Value)):
		kend = kc + len(k.Value)
	default:
		return pair{}, fmt.Errorf("line %d: key %q is not a simple block key", k.Line, k.Value)
	}
	for kend < t.ends[li] && (t.src[kend] == ' ' || t.src[kend] == '\t') {
		kend++
	}
	if kend >= t.ends[li] || t.src[kend] != ':' {
		return pair{}, fmt.Errorf("line %d: no ':' after key %q", k.Line, k.Value)
	}
	p := pair{val: v, indent: k.Column - 1, keyStart: ks, colon: kend + 1}
	if p.vs, err = t.offset(v); err != nil {
		return pair{}, err
	}
	if p.ve, err = t.end(v, p.indent); err != nil {
		return pair{}, err
	}
	if p.ve == p.vs { // no text at all, not even an anchor
		p.vs, p.ve = p.colon, p.colon
	}
	return p, nil
}

// replacement says which bytes of the frontmatter text to replace, and with
// what, to give the pair's key value.
func (p pair) replacement(t *yamlText, value any, eol string) (a, b int, repl string, err error) {
	r, err := render(value, p.val)
	if err != nil {
		return 0, 0, "", err
	}
	keyLine, valLine, endLine := t.lineOf(p.keyStart), t.lineOf(p.vs), t.lineOf(p.ve)
	switch {
	case r.inline != "" && p.vs == p.colon && p.ve == p.colon:
		return p.colon, p.colon, " " + r.inline, nil
	case r.inline != "" && valLine == keyLine:
		return p.vs, p.ve, r.inline, nil
	case r.inline != "":
		return p.colon, p.ve, " " + r.inline + commentSuffix(t.comment(p.colon, t.ends[keyLine])), nil
	case r.kind == p.val.Kind && p.val.Kind != yaml.ScalarNode && p.val.Style&yaml.FlowStyle == 0:
		// A block list stays a block list at its old indentation.
		first, _ := t.skipProps(p.vs)
		indent := t.src[t.lines[t.lineOf(first)]:first]
		if len(bytes.Trim(indent, " ")) != 0 {
			return 0, 0, "", fmt.Errorf("line %d: unexpected text before the value of %q", t.lineOf(first)+1, p.val.Value)
		}
		return first, p.ve, r.join(eol, string(indent), true), nil
	}
	// A block replaces the value from the colon to the end of its last line;
	// a comment on the key's line stays there.
	var comment string
	switch {
	case endLine == keyLine:
		comment = t.comment(p.ve, t.ends[keyLine])
	case valLine != keyLine:
		comment = t.comment(p.colon, t.ends[keyLine])
	}
	child := strings.Repeat(" ", p.indent+2)
	return p.colon, t.ends[endLine], r.head + commentSuffix(comment) + eol + r.join(eol, child, false), nil
}

func commentSuffix(c string) string {
	if c == "" {
		return ""
	}
	return " " + c
}

func splice(src []byte, a, b int, repl string) []byte {
	out := make([]byte, 0, len(src)-(b-a)+len(repl))
	out = append(out, src[:a]...)
	out = append(out, repl...)
	return append(out, src[b:]...)
}

// fieldChange is what a splice meant to do to the top-level fields.
type fieldChange struct {
	key     string
	at      int // index of the changed field; -1 for a new key
	value   any
	deleted bool
}

// checkSplice re-reads the spliced note and confirms the splice did exactly
// what it meant and nothing else: the same fields in the same order with the
// same values but for the changed one, and the same body. Splicing works on
// text it cannot fully parse, so this is the guard that turns a mistake on
// odd YAML into an error instead of a damaged note.
func checkSplice(out, body []byte, before []field, c fieldChange) error {
	want := append([]field(nil), before...)
	switch {
	case c.deleted:
		want = append(want[:c.at], want[c.at+1:]...)
	default:
		v, err := roundTrip(c.value)
		if err != nil {
			return err
		}
		if c.at < 0 {
			want = append(want, field{key: c.key, value: v})
		} else {
			want[c.at].value = v
		}
	}
	fm, ok, err := findFrontmatter(out)
	if err != nil || !ok {
		return fmt.Errorf("splice broke the frontmatter block (%v)", err)
	}
	if !bytes.Equal(out[fm.Body:], body) {
		return errors.New("splice changed the note's body")
	}
	_, got, err := parseFields(out[fm.Start:fm.End])
	if err != nil {
		return fmt.Errorf("splice produced invalid frontmatter: %w", err)
	}
	if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
		return errors.New("splice changed more than the key (unsupported YAML layout)")
	}
	return nil
}

// roundTrip is value as a YAML reader will see it once written.
func roundTrip(value any) (any, error) {
	b, err := yaml.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("encoding value: %w", err)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("encoding value: %w", err)
	}
	return normalise(v), nil
}

// normalise makes decoded values comparable: a date margin writes as a plain
// `2026-11-25` decodes as a time, the string it was given compares equal to
// it, and NaN equals itself.
func normalise(v any) any {
	switch v := v.(type) {
	case time.Time:
		if v.Equal(v.Truncate(24*time.Hour)) && v.Location() == time.UTC {
			return v.Format(time.DateOnly)
		}
		return v.Format(time.RFC3339Nano)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalise(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = normalise(e)
		}
		return out
	case map[any]any:
		out := make(map[any]any, len(v))
		for k, e := range v {
			out[normalise(k)] = normalise(e)
		}
		return out
	}
	return v
}
