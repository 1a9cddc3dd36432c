package note

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
)

// listItem adds the checklist item a list item starts with, if any. Any list
// kind counts (`-`, `*`, `+`, `1.`), at any depth.
func (p *scratch) listItem(li *ast.ListItem) {
	first := li.FirstChild()
	switch first.(type) {
	case *ast.TextBlock, *ast.Paragraph:
	default:
		return
	}
	lines := first.Lines()
	if lines.Len() == 0 {
		return
	}
	s := p.s
	box := p.base + lines.At(0).Start
	end := lineEnd(s, box)
	box = skipSpace(s, box, end)
	state, rest, ok := checkbox(s[box:end])
	if !ok {
		return
	}
	start := lineStart(s, box)
	it := ChecklistItem{
		Line:   p.lineOf(start),
		Offset: start,
		End:    end,
		State:  state,
		Raw:    s[start:end],
	}
	it.parseText(rest)
	p.n.Checklist = append(p.n.Checklist, it)
}

// checkbox reads `[c]` at the start of a list item's text, followed by a
// space or the end of the line. It returns the state and the text after it.
func checkbox(line string) (state rune, rest string, ok bool) {
	if len(line) < 3 || line[0] != '[' {
		return 0, "", false
	}
	r, size := utf8.DecodeRuneInString(line[1:])
	if r == '[' || r == ']' || r == utf8.RuneError || r < ' ' || 1+size >= len(line) || line[1+size] != ']' {
		return 0, "", false
	}
	rest = line[2+size:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	if r == 'X' {
		r = 'x'
	}
	return r, rest, true
}

// taskField is an Obsidian Tasks field, written as an emoji and a value.
type taskField int

const (
	fieldDue taskField = iota + 1
	fieldScheduled
	fieldStart
	fieldDone
	fieldCancelled
	fieldCreated
	fieldRepeat
	fieldOnCompletion
	fieldID
	fieldDependsOn
	fieldPriority
)

// taskMarker identifies the Tasks emoji at t[i:] and its byte length,
// including an optional variation selector.
func taskMarker(t string, i int) (f taskField, priority string, size int) {
	r, size := utf8.DecodeRuneInString(t[i:])
	switch r {
	case '📅', '📆', '🗓':
		f = fieldDue
	case '⏳', '⌛':
		f = fieldScheduled
	case '🛫':
		f = fieldStart
	case '✅':
		f = fieldDone
	case '❌':
		f = fieldCancelled
	case '➕':
		f = fieldCreated
	case '🔁':
		f = fieldRepeat
	case '🏁':
		f = fieldOnCompletion
	case '🆔':
		f = fieldID
	case '⛔':
		f = fieldDependsOn
	case '🔺':
		f, priority = fieldPriority, "highest"
	case '⏫':
		f, priority = fieldPriority, "high"
	case '🔼':
		f, priority = fieldPriority, "medium"
	case '🔽':
		f, priority = fieldPriority, "low"
	case '⏬':
		f, priority = fieldPriority, "lowest"
	default:
		return 0, "", 0
	}
	if strings.HasPrefix(t[i+size:], "\uFE0F") {
		size += len("\uFE0F")
	}
	return f, priority, size
}

// parseText fills the fields of an item from the text after its checkbox.
// Text keeps what is left once the Tasks and Dataview fields and the block
// id are taken out, the pieces joined by single spaces.
func (it *ChecklistItem) parseText(t string) {
	t = strings.TrimSpace(t)
	t, it.BlockID = cutBlockID(t)
	var pieces []string
	from := 0
	for i := 0; i < len(t); {
		end := 0
		switch c := t[i]; {
		case c >= utf8.RuneSelf:
			end = it.emojiField(t, i)
		case c == '[' || c == '(':
			if key, value, e := dataviewField(t, i); e > 0 {
				it.setDataview(key, value)
				end = e
			}
		}
		if end == 0 {
			_, size := utf8.DecodeRuneInString(t[i:])
			i += size
			continue
		}
		if piece := strings.TrimSpace(t[from:i]); piece != "" {
			pieces = append(pieces, piece)
		}
		i, from = end, end
	}
	if from == 0 {
		it.Text = t
		return
	}
	if piece := strings.TrimSpace(t[from:]); piece != "" {
		pieces = append(pieces, piece)
	}
	it.Text = strings.Join(pieces, " ")
}

// cutBlockID splits an Obsidian block id (` ^id`) off the end of t.
func cutBlockID(t string) (rest, id string) {
	k := strings.LastIndexAny(t, " \t") + 1
	cand, ok := strings.CutPrefix(t[k:], "^")
	if !ok || cand == "" {
		return t, ""
	}
	for i := 0; i < len(cand); i++ {
		if !isASCIIAlnum(cand[i]) && cand[i] != '-' {
			return t, ""
		}
	}
	return strings.TrimRight(t[:k], " \t"), cand
}

// emojiField parses the Tasks field at t[i] into it and returns the offset
// after it, or 0 when there is none (a date emoji without a date is text).
func (it *ChecklistItem) emojiField(t string, i int) int {
	f, priority, size := taskMarker(t, i)
	if f == 0 {
		return 0
	}
	j := skipSpace(t, i+size, len(t))
	switch f {
	case fieldPriority:
		if it.Priority == "" {
			it.Priority = priority
		}
		return i + size
	case fieldID:
		end := idEnd(t, j)
		if end == j {
			return 0
		}
		if it.ID == "" {
			it.ID = t[j:end]
		}
		return end
	case fieldDependsOn:
		end := j
		for {
			e := idEnd(t, end)
			if e == end {
				break
			}
			it.DependsOn = append(it.DependsOn, t[end:e])
			end = e
			if k := skipSpace(t, e, len(t)); k < len(t) && t[k] == ',' {
				end = skipSpace(t, k+1, len(t))
			} else {
				break
			}
		}
		if end == j {
			return 0
		}
		return end
	case fieldRepeat:
		end := j
		for end < len(t) {
			if c := t[end]; c >= utf8.RuneSelf {
				if g, _, _ := taskMarker(t, end); g != 0 {
					break
				}
			} else if c == '[' || c == '(' {
				if _, _, e := dataviewField(t, end); e > 0 {
					break
				}
			}
			_, n := utf8.DecodeRuneInString(t[end:])
			end += n
		}
		it.setField("repeat", strings.TrimSpace(t[j:end]))
		return end
	case fieldOnCompletion:
		end := j
		for end < len(t) && isASCIIAlnum(t[end]) {
			end++
		}
		if end == j {
			return 0
		}
		it.setField("oncompletion", t[j:end])
		return end
	}
	if j+10 > len(t) || !isDate(t[j:j+10]) {
		return 0
	}
	date := t[j : j+10]
	switch f {
	case fieldDue:
		setOnce(&it.Due, date)
	case fieldScheduled:
		setOnce(&it.Scheduled, date)
	case fieldStart:
		setOnce(&it.Start, date)
	case fieldDone:
		setOnce(&it.Done, date)
	case fieldCancelled:
		setOnce(&it.Cancelled, date)
	case fieldCreated:
		it.setField("created", date)
	}
	return j + 10
}

// idEnd is the end of a Tasks id (letters, digits, '_' and '-') at t[i:].
func idEnd(t string, i int) int {
	for i < len(t) && (isASCIIAlnum(t[i]) || t[i] == '_' || t[i] == '-') {
		i++
	}
	return i
}

// dataviewField parses `[key:: value]` or `(key:: value)` at t[i]. Brackets
// in the value nest, so `[related:: [[Note]]]` keeps its link.
func dataviewField(t string, i int) (key, value string, end int) {
	open, closer := t[i], byte(']')
	if open == '(' {
		closer = ')'
	}
	j := i + 1
	for j < len(t) && t[j] != ':' {
		c := t[j]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(t[j:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return "", "", 0
			}
			j += size
			continue
		}
		if !isASCIIAlnum(c) && c != ' ' && c != '_' && c != '-' {
			return "", "", 0
		}
		j++
	}
	key = strings.TrimSpace(t[i+1 : j])
	if key == "" || !strings.HasPrefix(t[j:], "::") {
		return "", "", 0
	}
	depth := 0
	for k := j + 2; k < len(t); k++ {
		switch t[k] {
		case open:
			depth++
		case closer:
			if depth == 0 {
				return key, strings.TrimSpace(t[j+2 : k]), k + 1
			}
			depth--
		}
	}
	return "", "", 0
}

// setDataview stores a Dataview field and, for the keys the Tasks plugin
// writes in its Dataview format, the matching typed field.
func (it *ChecklistItem) setDataview(key, value string) {
	key = strings.ToLower(key)
	it.setField(key, value)
	date := ""
	if isDate(value) {
		date = value
	}
	switch key {
	case "due":
		setOnce(&it.Due, date)
	case "scheduled":
		setOnce(&it.Scheduled, date)
	case "start":
		setOnce(&it.Start, date)
	case "completion":
		setOnce(&it.Done, date)
	case "cancelled":
		setOnce(&it.Cancelled, date)
	case "priority":
		setOnce(&it.Priority, strings.ToLower(value))
	case "id":
		setOnce(&it.ID, value)
	case "dependson":
		if it.DependsOn == nil {
			it.DependsOn = splitComma(value)
		}
	}
}

func (it *ChecklistItem) setField(key, value string) {
	if it.Fields == nil {
		it.Fields = make(map[string]string, 2)
	}
	if _, ok := it.Fields[key]; !ok {
		it.Fields[key] = value
	}
}

// setOnce keeps the first value a line gives a field.
func setOnce(field *string, value string) {
	if *field == "" {
		*field = value
	}
}
