package server

import (
	"testing"

	"github.com/margin-md/margin/server/protocol"
)

func TestPositionEncodingCharacters(t *testing.T) {
	// "- 🚀 발사 [[Ship]]": the rocket is 4 bytes and 2 UTF-16 units, each
	// Hangul syllable 3 bytes and 1 unit.
	line := "- 🚀 발사 [[Ship]]"
	link := len("- 🚀 발사 ") // byte offset of "[["
	for _, tc := range []struct {
		enc  positionEncoding
		want int // the character of "[["
	}{
		{utf16Encoding, 2 + 2 + 1 + 2 + 1},
		{utf8Encoding, 2 + 4 + 1 + 6 + 1},
		{utf32Encoding, 2 + 1 + 1 + 2 + 1},
	} {
		if got := tc.enc.character(line, link); got != tc.want {
			t.Errorf("%s: character of byte %d = %d, want %d", tc.enc, link, got, tc.want)
		}
		if got := tc.enc.byteOffset(line, tc.want); got != link {
			t.Errorf("%s: byte offset of character %d = %d, want %d", tc.enc, tc.want, got, link)
		}
		if got, want := tc.enc.character(line, len(line)), tc.want+len("[[Ship]]"); got != want {
			t.Errorf("%s: line length = %d, want %d", tc.enc, got, want)
		}
	}
}

func TestPositionEncodingEdges(t *testing.T) {
	line := "a🚀b"
	for _, tc := range []struct {
		name string
		ch   int
		want int
	}{
		{"before the emoji", 1, 1},
		{"inside its surrogate pair", 2, 1},
		{"after the emoji", 3, 5},
		{"past the end", 99, len(line)},
		{"the end", 4, len(line)},
	} {
		if got := utf16Encoding.byteOffset(line, tc.ch); got != tc.want {
			t.Errorf("%s: byteOffset(%d) = %d, want %d", tc.name, tc.ch, got, tc.want)
		}
	}
	// A byte offset inside a rune counts to the rune's start.
	if got := utf16Encoding.character(line, 3); got != 1 {
		t.Errorf("character inside the emoji = %d, want 1", got)
	}
	// An invalid byte counts as one U+FFFD.
	if got := utf16Encoding.character("\xffx", 2); got != 2 {
		t.Errorf("character after an invalid byte = %d, want 2", got)
	}
}

func TestPositionsInText(t *testing.T) {
	text := "# 計画\r\n- 🚀 [[Ship]]\n\nlast"
	for _, tc := range []struct {
		p   protocol.Position
		off int
	}{
		{protocol.Position{Line: 0, Character: 0}, 0},
		{protocol.Position{Line: 0, Character: 4}, len("# 計画")},
		{protocol.Position{Line: 0, Character: 3}, len("# 計")},
		{protocol.Position{Line: 0, Character: 9}, len("# 計画")}, // past the end: before the \r\n
		{protocol.Position{Line: 1, Character: 5}, len("# 計画\r\n- 🚀 ")},
		{protocol.Position{Line: 2, Character: 0}, len("# 計画\r\n- 🚀 [[Ship]]\n")},
		{protocol.Position{Line: 3, Character: 4}, len(text)},
		{protocol.Position{Line: 7, Character: 0}, len(text)},
	} {
		if got := utf16Encoding.offsetOf(text, tc.p); got != tc.off {
			t.Errorf("offsetOf(%+v) = %d, want %d", tc.p, got, tc.off)
		}
	}
	if got, want := utf16Encoding.positionOf(text, len("# 計画\r\n- 🚀 [[")), (protocol.Position{Line: 1, Character: 7}); got != want {
		t.Errorf("positionOf = %+v, want %+v", got, want)
	}
}

func TestNegotiateEncoding(t *testing.T) {
	for _, tc := range []struct {
		offered []string
		want    positionEncoding
	}{
		{nil, utf16Encoding},
		{[]string{"utf-8", "utf-16"}, utf8Encoding},
		{[]string{"utf-32"}, utf32Encoding},
		{[]string{"latin-1", "utf-16"}, utf16Encoding},
		{[]string{"latin-1"}, utf16Encoding},
	} {
		if got := negotiateEncoding(tc.offered); got != tc.want {
			t.Errorf("negotiateEncoding(%q) = %s, want %s", tc.offered, got, tc.want)
		}
	}
}

func TestLineEditTurnsOldIntoNew(t *testing.T) {
	for _, tc := range []struct{ old, new string }{
		{"a\nb\n", "a\nB\n"},
		{"a\n🚀 東京", "a\n🚀 東京\n\n## 21:10\nwalked\n"}, // no final line break, astral and CJK on the last line
		{"---\nx: 1\n---\n本文 🎉", "---\nx: 1\nlanguage: ja\n---\n本文 🎉"},
		{"", "new\n"},
		{"a\r\nb\r\n", "a\r\nb\r\nc\r\n"},
		{"only", ""},
	} {
		for _, enc := range []positionEncoding{utf16Encoding, utf8Encoding, utf32Encoding} {
			e := lineEdit(tc.old, tc.new, enc)
			start, end := enc.offsetOf(tc.old, e.Range.Start), enc.offsetOf(tc.old, e.Range.End)
			// Editors differ on a position past the last line; margin
			// sends none.
			if from, to, ok := lineSpan(tc.old, e.Range.End.Line); !ok || e.Range.End.Character > enc.character(tc.old[from:to], to-from) {
				t.Errorf("%s %q: edit ends at %+v, past the text", enc, tc.old, e.Range.End)
			}
			if got := tc.old[:start] + e.NewText + tc.old[end:]; got != tc.new {
				t.Errorf("%s: applying %+v to %q gives %q, want %q", enc, e, tc.old, got, tc.new)
			}
		}
	}
}
