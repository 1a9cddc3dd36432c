package server

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/margin-md/margin/server/protocol"
)

// positionEncoding is how the character of an LSP Position counts: UTF-16
// code units unless the client offered another encoding at initialize
// (LSP 3.17 general.positionEncodings). margin keeps text as UTF-8 bytes,
// so every Position it sends or reads is converted here and nowhere else.
type positionEncoding string

const (
	utf8Encoding  positionEncoding = "utf-8"
	utf16Encoding positionEncoding = "utf-16"
	utf32Encoding positionEncoding = "utf-32"
)

// negotiateEncoding picks the first encoding the client offers that margin
// speaks; a client that offers none speaks UTF-16, which LSP makes mandatory.
func negotiateEncoding(offered []string) positionEncoding {
	for _, e := range offered {
		if enc := positionEncoding(e); slices.Contains([]positionEncoding{utf8Encoding, utf16Encoding, utf32Encoding}, enc) {
			return enc
		}
	}
	return utf16Encoding
}

// width is the size in bytes of the rune at the start of s and how many
// characters of enc it counts for. An invalid byte counts as one U+FFFD,
// which is what an editor decoding it shows.
func (enc positionEncoding) width(s string) (size, units int) {
	r, size := utf8.DecodeRuneInString(s)
	switch {
	case enc == utf8Encoding:
		return size, size
	case enc == utf16Encoding && r >= 0x10000:
		return size, 2 // a surrogate pair
	}
	return size, 1
}

// character is the Position character of byte offset col in line. An
// offset inside a rune counts to that rune's start.
func (enc positionEncoding) character(line string, col int) int {
	n := 0
	for i := 0; i < len(line); {
		size, u := enc.width(line[i:])
		if i+size > col {
			break
		}
		i += size
		n += u
	}
	return n
}

// byteOffset is the byte offset in line of Position character ch. A
// character past the end of the line is the end of the line (LSP: it
// defaults back to the line length); one inside a rune (half a surrogate
// pair) is the start of that rune.
func (enc positionEncoding) byteOffset(line string, ch int) int {
	n := 0
	for i := 0; i < len(line); {
		size, u := enc.width(line[i:])
		if n+u > ch {
			return i
		}
		i += size
		n += u
	}
	return len(line)
}

// lineSpan is where line n of text starts and ends (before its line
// break), in bytes; ok is false past the last line. A "\r\n" counts as one
// break, as LSP reads line ends.
func lineSpan(text string, n int) (start, end int, ok bool) {
	for range n {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return 0, 0, false
		}
		start += i + 1
	}
	end = len(text)
	if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
		end = start + i
	}
	if end > start && text[end-1] == '\r' {
		end--
	}
	return start, end, true
}

// offsetOf is the byte offset in text of p; a line past the end is the end
// of the text.
func (enc positionEncoding) offsetOf(text string, p protocol.Position) int {
	start, end, ok := lineSpan(text, p.Line)
	if !ok {
		return len(text)
	}
	return start + enc.byteOffset(text[start:end], p.Character)
}

// positionOf is the Position of byte offset off in text.
func (enc positionEncoding) positionOf(text string, off int) protocol.Position {
	off = min(max(off, 0), len(text))
	line := strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	end := len(text)
	if i := strings.IndexByte(text[start:], '\n'); i >= 0 {
		end = start + i
	}
	return protocol.Position{Line: line, Character: enc.character(text[start:end], off-start)}
}
