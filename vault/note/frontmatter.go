package note

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adrg/frontmatter"
	"go.yaml.in/yaml/v3"
)

// The YAML header is found by scanning for its fences here rather than with
// github.com/adrg/frontmatter: adrg returns the decoded value and the rest of
// the file through a bufio.Reader but neither the byte length of the block nor
// the keys in document order, and both are part of the Note contract. A
// note's header is decoded with gopkg.in/yaml.v3 into a yaml.Node for the key
// order; a typed header (a template's, a domain module's) is decoded by adrg
// (DecodeFrontmatter).

// Get returns the value of key, matched case-insensitively. When a header
// repeats a key the first one wins, as it does for Obsidian. A nil
// Frontmatter has no keys.
func (f *Frontmatter) Get(key string) (any, bool) {
	if f == nil {
		return nil, false
	}
	for i := range f.Fields {
		if strings.EqualFold(f.Fields[i].Key, key) {
			return f.Fields[i].Value, true
		}
	}
	return nil, false
}

// String returns the value of key as text: strings as written, numbers and
// booleans formatted, a date as YYYY-MM-DD (a timestamp with a clock as
// RFC 3339). Lists, maps, null and a missing key give "".
func (f *Frontmatter) String(key string) string {
	v, _ := f.Get(key)
	return scalarString(v)
}

// Strings returns the value of key as a list: each scalar of a YAML list, or
// a string split at commas and white space (`tags: a, b c`). Empty items are
// dropped; a missing key gives nil.
func (f *Frontmatter) Strings(key string) []string {
	v, ok := f.Get(key)
	if !ok {
		return nil
	}
	return listValue(v, splitCommaSpace)
}

func scalarString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case time.Time:
		if v.Hour() == 0 && v.Minute() == 0 && v.Second() == 0 && v.Nanosecond() == 0 {
			return v.Format(time.DateOnly)
		}
		return v.Format(time.RFC3339)
	}
	return ""
}

// listValue turns a YAML list or a separated string into trimmed, non-empty
// items. split says how a plain string is separated.
func listValue(v any, split func(string) []string) []string {
	switch v := v.(type) {
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			if s := strings.TrimSpace(scalarString(item)); s != "" {
				out = append(out, s)
			}
		}
		return out
	case string:
		return split(v)
	case nil:
		return nil
	}
	if s := strings.TrimSpace(scalarString(v)); s != "" {
		return []string{s}
	}
	return nil
}

func splitCommaSpace(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
}

// splitComma is for values whose items may hold spaces, like aliases.
func splitComma(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Header is where a note's YAML frontmatter sits: a `---` line at the very
// start of the file (after an optional byte-order mark), the YAML, and the
// next `---` line (trailing blanks allowed). Obsidian reads nothing else as
// frontmatter: a `---` further down is a horizontal rule.
type Header struct {
	Open  int    // offset of the opening `---`, after any byte-order mark
	Start int    // first byte of the YAML
	End   int    // first byte of the closing line: the YAML is src[Start:End]
	Body  int    // first byte after the closing line
	EOL   string // the opening line's line ending
}

// FindHeader finds the frontmatter of s; Parse, the index and margin's edits
// all read it here. Without one, ok is false and h.Open is still the offset
// after any byte-order mark. unclosed says s opens a header and never closes
// it: Obsidian then reads the whole file as body, and an edit that added a
// header in front would make two.
func FindHeader(s string) (h Header, ok, unclosed bool) {
	if strings.HasPrefix(s, "\uFEFF") {
		h.Open = len("\uFEFF")
	}
	i := h.Open
	if !strings.HasPrefix(s[i:], "---") {
		return h, false, false
	}
	i += 3
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	switch {
	case strings.HasPrefix(s[i:], "\n"):
		h.EOL = "\n"
	case strings.HasPrefix(s[i:], "\r\n"):
		h.EOL = "\r\n"
	default:
		return h, false, false
	}
	i += len(h.EOL)
	h.Start = i
	for i < len(s) {
		end := strings.IndexByte(s[i:], '\n')
		next := len(s)
		if end < 0 {
			end = len(s)
		} else {
			end += i
			next = end + 1
		}
		if strings.TrimRight(s[i:end], " \t\r") == "---" {
			h.End, h.Body = i, next
			return h, true, false
		}
		i = next
	}
	return h, false, true
}

// decodeFrontmatter decodes the YAML text of a header. firstLine is the file
// line the text starts on, so that error messages point into the file.
func decodeFrontmatter(text string, firstLine int) (*Frontmatter, error) {
	if fields, ok := simpleYAML(text); ok {
		return &Frontmatter{Fields: fields}, nil
	}
	fields, err := yamlFields(text)
	if err != nil {
		return nil, errors.New(fileLineError(err.Error(), firstLine))
	}
	return &Frontmatter{Fields: fields}, nil
}

// yamlFields is the general decoder, for headers simpleYAML does not take.
func yamlFields(text string) (fields []Field, err error) {
	// yaml.v3 has panicked on hostile input before (CVE-2022-28948); a note
	// must never take the indexer down.
	defer func() {
		if r := recover(); r != nil {
			fields, err = nil, fmt.Errorf("yaml: %v", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // only comments or blank lines
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("frontmatter is not a YAML mapping")
	}
	fields = make([]Field, 0, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		var v any
		if err := root.Content[i+1].Decode(&v); err != nil {
			return nil, valueError(root.Content[i], root.Content[i+1])
		}
		fields = append(fields, Field{Key: root.Content[i].Value, Value: v, Line: root.Content[i].Line})
	}
	return fields, nil
}

// valueError says which key holds a value YAML parses but margin cannot
// read, in words rather than yaml.v3's Go types. Most often it is an
// unquoted template placeholder such as {{date}}, which YAML reads as a map
// used as a map key.
func valueError(key, value *yaml.Node) error {
	hint := ""
	if value.Kind == yaml.MappingNode && value.Style&yaml.FlowStyle != 0 {
		hint = ": {{…}} looks like a template placeholder; quote it, or keep the note in the templates folder"
	}
	return fmt.Errorf("yaml: line %d: the value of %q is not one margin can read%s", value.Line, key.Value, hint)
}

// fileLineError rewrites yaml.v3's "yaml: line N: …" to count lines of the
// whole file rather than of the header text.
func fileLineError(msg string, firstLine int) string {
	const prefix = "yaml: line "
	rest, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		return msg
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	n, err := strconv.Atoi(rest[:digits])
	if err != nil {
		return msg
	}
	return prefix + strconv.Itoa(n+firstLine-1) + rest[digits:]
}

// simpleYAML decodes the common shape of a note header — `key: scalar`
// lines, block lists of scalars and one-line flow lists — an order of
// magnitude faster than yaml.v3, which dominates the parse time of a task
// note otherwise. It gives exactly what yaml.v3 would (FuzzSimpleYAML checks
// this) and declines (ok false) anything it is not certain of, which then
// goes to yaml.v3.
func simpleYAML(text string) (fields []Field, ok bool) {
	if !plainYAMLText(text) {
		return nil, false
	}
	var (
		list       []any // items of the block list under the last key
		listIndent = -1
		open       = -1 // index of the field whose value may be a block list
	)
	closeList := func() {
		if open >= 0 && list != nil {
			fields[open].Value = list
		}
		list, listIndent, open = nil, -1, -1
	}
	for n := 1; len(text) > 0; n++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		line = strings.TrimSuffix(line, "\r")
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		rest := strings.TrimRight(line[indent:], " ")
		if rest == "" || rest[0] == '#' {
			continue
		}
		if strings.HasPrefix(rest, "- ") && open >= 0 && (listIndent < 0 || indent == listIndent) {
			v, ok := simpleScalar(strings.TrimLeft(rest[2:], " "))
			if !ok {
				return nil, false
			}
			listIndent = indent
			list = append(list, v)
			continue
		}
		if indent != 0 {
			return nil, false // nested map, continuation line or odd indent
		}
		closeList()
		colon := strings.IndexByte(rest, ':')
		if colon <= 0 || !simpleKey(rest[:colon]) {
			return nil, false
		}
		key, value := rest[:colon], rest[colon+1:]
		if value == "" {
			fields = append(fields, Field{Key: key, Line: n})
			open = len(fields) - 1
			continue
		}
		if value[0] != ' ' {
			return nil, false
		}
		v, ok := simpleScalar(strings.TrimLeft(value, " "))
		if !ok {
			return nil, false
		}
		fields = append(fields, Field{Key: key, Value: v, Line: n})
	}
	closeList()
	return fields, true
}

// plainYAMLText reports whether text holds nothing simpleYAML would have to
// think about: tabs, lone carriage returns, and the characters YAML treats as
// line breaks or rejects.
func plainYAMLText(text string) bool {
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '\r' && (i+1 == len(text) || text[i+1] != '\n'):
				return false
			case c < ' ' && c != '\n' && c != '\r', c == 0x7f:
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == utf8.RuneError, r < 0xA0, r == '\u2028', r == '\u2029', r == '\uFEFF',
			r >= 0xD800 && r < 0xE000, r == 0xFFFE, r == 0xFFFF:
			return false
		}
		i += size
	}
	return true
}

func simpleKey(k string) bool {
	// YAML caps an implicit key at 1024 characters; real keys are short.
	if len(k) > 128 || !isASCIIAlnum(k[0]) && k[0] != '_' {
		return false
	}
	if k[len(k)-1] == ' ' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		if !isASCIIAlnum(c) && c != '_' && c != '-' && c != ' ' && c != '.' && c != '/' {
			return false
		}
	}
	return true
}

// simpleScalar decodes a value on one line: a plain scalar, a quoted string
// without escapes or a flow list of those.
func simpleScalar(v string) (any, bool) {
	if v == "" {
		return nil, false
	}
	if v[0] == '"' || v[0] == '\'' {
		end := strings.IndexByte(v[1:], v[0]) + 1
		if end == 0 {
			return nil, false
		}
		if rest := v[end+1:]; rest != "" && (rest[0] != ' ' || strings.TrimLeft(rest, " ")[0] != '#') {
			return nil, false // text after the closing quote, or an escaped quote
		}
		return quotedScalar(v[:end+1])
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimRight(v[:i], " ") // a comment
	}
	switch v[0] {
	case '[':
		if v[len(v)-1] != ']' {
			return nil, false
		}
		inner := strings.TrimSpace(v[1 : len(v)-1])
		items := []any{}
		if inner == "" {
			return items, true
		}
		for item := range strings.SplitSeq(inner, ",") {
			item = strings.TrimSpace(item)
			// libyaml reads ? as a key indicator inside flow collections
			// ("[1?]" does not parse), so such items go to yaml.v3.
			if item == "" || strings.ContainsAny(item, "[]{}#:?") {
				return nil, false
			}
			var x any
			var ok bool
			if item[0] == '"' || item[0] == '\'' {
				x, ok = quotedScalar(item)
			} else {
				x, ok = plainScalar(item)
			}
			if !ok {
				return nil, false
			}
			items = append(items, x)
		}
		return items, true
	}
	if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") {
		return nil, false
	}
	return plainScalar(v)
}

func quotedScalar(v string) (any, bool) {
	q := v[0]
	if len(v) < 2 || v[len(v)-1] != q {
		return nil, false
	}
	inner := v[1 : len(v)-1]
	if strings.IndexByte(inner, q) >= 0 || q == '"' && strings.IndexByte(inner, '\\') >= 0 {
		return nil, false
	}
	return inner, true
}

// plainScalar resolves an unquoted scalar the way yaml.v3 does when decoding
// into an interface value, for the cases it is sure of.
func plainScalar(v string) (any, bool) {
	switch c := v[0]; {
	case strings.IndexByte("-?:,[]{}#&*!|>'\"%@`<=", c) >= 0:
		return nil, false
	case c >= '1' && c <= '9':
		if isDate(v) {
			t, err := time.Parse("2006-1-2", v)
			return t, err == nil
		}
		if n, err := strconv.Atoi(v); err == nil && len(v) <= 18 {
			return n, true
		}
		// Without a leading 0 (0x, 0o, 0b) yaml.v3 reads a number only from
		// digits, '.', 'e', signs and '_', and a timestamp only after
		// "YYYY-"; anything else ("90m", "1h30m", "12:30") is a string.
		if len(v) > 4 && v[4] == '-' || strings.Trim(v, "0123456789.eE+-_") == "" {
			return nil, false
		}
		return v, true
	case c == '0' || c == '+' || c == '.':
		return 0, v == "0"
	case c == '~':
		return nil, v == "~"
	case strings.IndexByte("yYnNtTfFoO", c) >= 0:
		switch v {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		case "null", "Null", "NULL":
			return nil, true
		}
	}
	return v, true
}

// isDate reports whether s is exactly YYYY-MM-DD in digits.
func isDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < 10; i++ {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

func isASCIIAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isTemplate reports whether the note at p is in a templates folder.
func (o Options) isTemplate(p string) bool {
	for _, folder := range o.TemplateFolders {
		if inFolder(p, folder) {
			return true
		}
	}
	return false
}

// templateFrontmatter reads a template's header whose placeholders YAML
// cannot take as they stand (`created: {{date}}` is a map used as a key):
// each value holding {{…}} or <%…%> is read as the text it is, so the
// template's properties are searchable. Should the header still not
// decode, the first error stands.
func templateFrontmatter(text string, fm *Frontmatter, err error) (*Frontmatter, error) {
	lines := strings.SplitAfter(text, "\n")
	changed := false
	for i, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		m := anyValue.FindStringSubmatchIndex(body)
		if m == nil {
			continue
		}
		value := body[m[4]:m[5]]
		if value[0] == '\'' || value[0] == '"' || !strings.Contains(value, "{{") && !strings.Contains(value, "<%") {
			continue
		}
		lines[i] = body[:m[4]] + singleQuoted(value) + line[len(body):]
		changed = true
	}
	if !changed {
		return fm, err
	}
	fields, qerr := yamlFields(strings.Join(lines, ""))
	if qerr != nil {
		return fm, err
	}
	return &Frontmatter{Fields: fields}, nil
}

// salvageFrontmatter reads what it can of a header that YAML refuses as a
// whole, so that one bad line (`title: a: b`, `- @name`, a value after a
// closing quote) does not hide the rest of its properties from search and
// filters. Each top-level key is read with the lines under it on their own;
// a key that still does not decode has its unquoted values read as the
// text they are; a key that does not decode even then is left out. It
// returns nil when no key could be read.
func salvageFrontmatter(text string) *Frontmatter {
	var fields []Field
	line := 1 // of the block's first line in text
	read := func(block []string) {
		if len(block) == 0 {
			return
		}
		defer func() { line += len(block) }()
		fs, err := yamlFields(strings.Join(block, ""))
		if err != nil {
			quoted := make([]string, len(block))
			for i, line := range block {
				quoted[i] = quoteValue(line)
			}
			if fs, err = yamlFields(strings.Join(quoted, "")); err != nil {
				return
			}
		}
		for _, f := range fs {
			f.Line += line - 1
			fields = append(fields, f)
		}
	}
	var block []string
	for _, line := range strings.SplitAfter(text, "\n") {
		// A key at the margin starts a block; indented lines, list items
		// (YAML lets `- a` under `tags:` sit at the margin), comments and
		// blank lines belong to the block above.
		if line != "" && !strings.ContainsRune(" \t\r\n-#", rune(line[0])) {
			read(block)
			block = nil
		}
		block = append(block, line)
	}
	read(block)
	if len(fields) == 0 {
		return nil
	}
	return &Frontmatter{Fields: fields}
}

// quoteValue single-quotes the value of a `key: value` or `- value` line
// when it is plain text YAML may refuse: unquoted, or quoted only at its
// start (`"250 queued" is not delivery`). Flow lists and maps, block
// scalars and values quoted whole are left as they are.
func quoteValue(line string) string {
	m := anyValue.FindStringSubmatchIndex(strings.TrimRight(line, "\r\n"))
	if m == nil {
		return line
	}
	v := line[m[4]:m[5]]
	switch v[0] {
	case '[', '{', '|', '>':
		return line
	case '"', '\'':
		if len(v) > 1 && v[len(v)-1] == v[0] {
			return line
		}
	}
	return line[:m[4]] + singleQuoted(v) + line[m[5]:]
}

// singleQuoted is s as a single-quoted YAML scalar.
func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// anyValue finds the value of a `key: value` or `- value` line.
var anyValue = regexp.MustCompile(`^(\s*(?:- |[^\s#'"][^:]*:\s+))(\S.*?)\s*$`)

// ErrNoFrontmatter is DecodeFrontmatter's answer for a file without a YAML
// header: no `---` first line, or none closing it.
var ErrNoFrontmatter = errors.New("no frontmatter (a --- line, the YAML, and a closing --- line at the top of the note)")

// DecodeFrontmatter decodes the YAML header of src into v by yaml.v3's rules
// (a struct's fields by their `yaml` tags, so that `version: two` into an
// int is an error rather than 0) and returns the offset of the body. A file
// without a header gives ErrNoFrontmatter. The header has the parse budget
// Parse gives it, and errors count lines of the whole file.
func DecodeFrontmatter(src []byte, v any) (body int, err error) {
	s := string(src)
	h, ok, _ := FindHeader(s)
	if !ok {
		return 0, ErrNoFrontmatter
	}
	ys, ye, body := h.Start, h.End, h.Body
	if _, why := headerBudget(src[ys:ye]); why != "" {
		return body, errors.New("frontmatter not read: " + why)
	}
	// yaml.v3 has panicked on hostile input before (see yamlFields).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	if err := decodeHeader(src, ys, ye, body, v); err != nil {
		first := 1 + strings.Count(s[:ys], "\n")
		var te *yaml.TypeError
		if errors.As(err, &te) {
			// "line N: cannot unmarshal …", one per value
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = strings.TrimPrefix(fileLineError("yaml: "+m, first), "yaml: ")
			}
			return body, errors.New("yaml: " + strings.Join(msgs, "; "))
		}
		return body, errors.New(fileLineError(err.Error(), first))
	}
	return body, nil
}

// headerFormat is the YAML header as github.com/adrg/frontmatter reads it,
// decoded by yaml.v3 so that typed fields refuse a wrong value.
var headerFormat = frontmatter.NewFormat("---", "---", yaml.Unmarshal)

// decodeHeader decodes the header FindHeader found (YAML at
// src[ys:ye], body at body) into v with adrg/frontmatter. adrg ends a
// header at any line that is "---" once trimmed, an indented one too,
// which Obsidian (and FindHeader) reads as YAML: when adrg's header
// is shorter than the block, the block is decoded as it is.
func decodeHeader(src []byte, ys, ye, body int, v any) error {
	open := 0
	if bytes.HasPrefix(src, []byte("\uFEFF")) {
		open = len("\uFEFF")
	}
	whole := true
	format := *headerFormat
	format.Unmarshal = func(data []byte, v any) error {
		if whole = len(data) == ye-ys; !whole {
			return nil
		}
		return yaml.Unmarshal(data, v)
	}
	if _, err := frontmatter.MustParse(bytes.NewReader(src[open:body]), v, &format); err != nil {
		return err
	}
	if !whole {
		return yaml.Unmarshal(src[ys:ye], v)
	}
	return nil
}
