package edit

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// rendered is a frontmatter value as YAML text, either on the key's line or
// as a block below it.
type rendered struct {
	inline string    // the value on the key's line; "" when it needs a block
	head   string    // block form: what follows the colon on the key's line
	lines  []string  // block form: the lines below, relative to the block's indentation
	kind   yaml.Kind // block form: SequenceNode, MappingNode, or ScalarNode for a literal
}

// join indents the block's lines, leaving empty lines empty. With
// firstInPlace the first line goes where the old block's first line started.
func (r rendered) join(eol, indent string, firstInPlace bool) string {
	var b strings.Builder
	for i, l := range r.lines {
		if i > 0 {
			b.WriteString(eol)
		}
		if l != "" && (i > 0 || !firstInPlace) {
			b.WriteString(indent)
		}
		b.WriteString(l)
	}
	return b.String()
}

// renderPair renders a new `key: value` line (or block), ending with eol.
func renderPair(key string, value any, indent, eol string) (string, error) {
	k, err := renderStringInline(key, 0)
	if err != nil {
		return "", err
	}
	r, err := render(value, nil)
	if err != nil {
		return "", err
	}
	if r.inline != "" {
		return indent + k + ": " + r.inline + eol, nil
	}
	return indent + k + ":" + r.head + eol + r.join(eol, indent+"  ", false) + eol, nil
}

// render renders value in the style of old, the value it replaces (nil for a
// new key): quoting is kept where the new value allows it, and a block list
// stays a block list.
func render(value any, old *yaml.Node) (rendered, error) {
	var n yaml.Node
	if err := n.Encode(value); err != nil {
		return rendered{}, fmt.Errorf("encoding value: %w", err)
	}
	var oldStyle yaml.Style
	oldBlockList := false
	if old != nil {
		oldStyle = old.Style
		oldBlockList = old.Kind == yaml.SequenceNode && old.Style&yaml.FlowStyle == 0
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return renderString(n.Value, oldStyle)
		}
		s, err := encodeInline(&n)
		return rendered{inline: s}, err
	case yaml.SequenceNode:
		switch {
		case len(n.Content) == 0:
			return rendered{inline: "[]"}, nil
		case !allScalars(n.Content):
			return renderBlock(&n)
		}
		items := make([]string, len(n.Content))
		for i, c := range n.Content {
			var err error
			if items[i], err = renderScalarInline(c, !oldBlockList); err != nil {
				return rendered{}, err
			}
		}
		if oldBlockList {
			r := rendered{kind: yaml.SequenceNode}
			for _, it := range items {
				r.lines = append(r.lines, "- "+it)
			}
			return r, nil
		}
		return rendered{inline: "[" + strings.Join(items, ", ") + "]"}, nil
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			return rendered{inline: "{}"}, nil
		}
		return renderBlock(&n)
	}
	return rendered{}, fmt.Errorf("cannot write a %T as a frontmatter value", value)
}

func allScalars(ns []*yaml.Node) bool {
	for _, n := range ns {
		if n.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

func renderScalarInline(n *yaml.Node, inFlow bool) (string, error) {
	if n.Tag == "!!str" {
		return quoteString(n.Value, 0, inFlow)
	}
	return encodeInline(n)
}

// renderBlock renders a map or a list of maps with yaml.v3, two spaces deep.
func renderBlock(n *yaml.Node) (rendered, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return rendered{}, fmt.Errorf("encoding value: %w", err)
	}
	if err := enc.Close(); err != nil {
		return rendered{}, fmt.Errorf("encoding value: %w", err)
	}
	return rendered{lines: strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n"), kind: n.Kind}, nil
}

// renderString renders a string: multi-line text as a literal block when it
// can be one, anything else on one line.
func renderString(s string, oldStyle yaml.Style) (rendered, error) {
	if strings.Contains(s, "\n") && literalSafe(s) {
		body := strings.TrimRight(s, "\n")
		chomp := "+" // keep the trailing newlines
		switch len(s) - len(body) {
		case 0:
			chomp = "-"
		case 1:
			chomp = ""
		}
		lines := strings.Split(body, "\n")
		for range len(s) - len(body) - 1 {
			lines = append(lines, "")
		}
		return rendered{head: " |" + chomp, lines: lines, kind: yaml.ScalarNode}, nil
	}
	s, err := renderStringInline(s, oldStyle)
	return rendered{inline: s}, err
}

// dateRE matches a plain date, which Obsidian writes unquoted.
var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// renderStringInline renders s on one line, quoting it only when YAML needs
// quotes or the value it replaces was quoted. Quoting is done here rather
// than by yaml.v3, which escapes characters outside the BMP (emoji).
func renderStringInline(s string, oldStyle yaml.Style) (string, error) {
	return quoteString(s, oldStyle, false)
}

func quoteString(s string, oldStyle yaml.Style, inFlow bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("value is not valid UTF-8")
	}
	switch {
	case needsDoubleQuotes(s) || oldStyle&yaml.DoubleQuotedStyle != 0:
		return doubleQuote(s), nil
	case oldStyle&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
	case dateRE.MatchString(s) || plainOK(s, inFlow):
		return s, nil
	}
	return doubleQuote(s), nil
}

var (
	// yaml11BoolRE and base60RE match strings that YAML 1.1 readers take
	// for booleans and sexagesimal numbers (`10:30`), though yaml.v3 reads
	// them as strings; they are quoted so every reader agrees.
	yaml11BoolRE = regexp.MustCompile(`^(?i:y|n|yes|no|on|off|true|false)$`)
	base60RE     = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
)

// plainOK reports whether s can be written as a plain scalar and read back as
// the same string.
func plainOK(s string, inFlow bool) bool {
	switch {
	case s == "" || s == "<<" || strings.TrimSpace(s) != s || strings.HasPrefix(s, "..."):
		return false // "..." at the start of a line ends the YAML document
	case strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`"):
		return false
	case strings.HasSuffix(s, ":") || strings.Contains(s, ": ") || strings.Contains(s, ":\t") ||
		strings.Contains(s, " #") || strings.Contains(s, "\t#"):
		return false
	case inFlow && strings.ContainsAny(s, ",[]{}"):
		return false
	case yaml11BoolRE.MatchString(s) || base60RE.MatchString(s):
		return false
	}
	var v struct{ V any }
	if err := yaml.Unmarshal([]byte("v: "+s), &v); err != nil {
		return false
	}
	got, ok := v.V.(string)
	return ok && got == s
}

// doubleQuote writes a YAML double-quoted scalar, escaping only what YAML
// cannot hold literally.
func doubleQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\u0085':
			b.WriteString(`\N`)
		case '\u2028':
			b.WriteString(`\L`)
		case '\u2029':
			b.WriteString(`\P`)
		default:
			if printable(r) {
				b.WriteRune(r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// encodeInline renders a node with yaml.v3 and insists on one line.
func encodeInline(n *yaml.Node) (string, error) {
	b, err := yaml.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("encoding value: %w", err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("value %q does not fit on one line", n.Value)
	}
	return s, nil
}

// needsDoubleQuotes reports a string that only a double-quoted scalar can
// hold on one line: line breaks, or characters YAML does not print.
func needsDoubleQuotes(s string) bool {
	for _, r := range s {
		if !printable(r) || r == '\n' || r == '\r' || r == '\u0085' || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// printable is YAML's c-printable, less the byte order mark.
func printable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == '\u0085':
		return true
	case r >= 0x20 && r <= 0x7E, r >= 0xA0 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD && r != 0xFEFF:
		return true
	}
	return r >= 0x10000 && r <= 0x10FFFF
}

// literalSafe reports whether a multi-line string reads back unchanged from a
// literal block without an indentation indicator: printable, no CR or other
// breaks, no line of blanks only, and a first line that does not start with a
// space (which would be taken as indentation).
func literalSafe(s string) bool {
	if needsDoubleQuotes(strings.ReplaceAll(s, "\n", "")) {
		return false
	}
	first := true
	for l := range strings.SplitSeq(s, "\n") {
		if l == "" {
			continue
		}
		if strings.Trim(l, " \t") == "" || (first && (l[0] == ' ' || l[0] == '\t')) {
			return false
		}
		first = false
	}
	return !first
}
