package llm

import (
	"fmt"
	"strings"
)

// PromptPart is one named section of a system prompt.
type PromptPart struct {
	Heading string
	Text    string
}

// SystemPrompt joins parts, in the order given, into a system prompt whose
// bytes depend only on the parts' meaning: line endings are normalised to
// \n, trailing white space on every line and blank lines around each part
// are dropped, and empty parts are left out. Model servers reuse their KV
// cache only for a byte-identical prefix, so a task note saved with CRLF or
// a directive edited to add a trailing space must not invalidate it.
//
// Put what never changes between wakes first (scaffold, directives) and
// keep anything that varies (dates, diffs, the task itself) out of the
// system prompt entirely, in the user message.
func SystemPrompt(parts ...PromptPart) string {
	var b strings.Builder
	for _, p := range parts {
		text := normalize(p.Text)
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if h := strings.TrimSpace(p.Heading); h != "" {
			b.WriteString("## ")
			b.WriteString(h)
			b.WriteString("\n\n")
		}
		b.WriteString(text)
	}
	return b.String()
}

func normalize(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// FenceFor is a backtick fence longer than any backtick run in text, so
// the text cannot close it.
func FenceFor(text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Fenced wraps text in a code fence longer than any backtick run inside
// it, labelled, so note content can neither close the fence nor pass for
// part of the prompt.
func Fenced(label, text string) string {
	fence := FenceFor(text)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fmt.Sprintf("[%s]\n%s\n%s%s\n\n", label, fence, text, fence)
}
