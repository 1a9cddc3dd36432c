package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
)

// JSON-RPC 2.0 protocol error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

const (
	// maxHeaderLine bounds one header line, so a stream of garbage without
	// newlines cannot grow a buffer without limit.
	maxHeaderLine = 4 << 10
	// maxHeaderLines bounds the header block for the same reason.
	maxHeaderLines = 32
	// idPeekSize is how much of an oversize message is read to find its id,
	// so the client's pending request gets an answer and not silence.
	idPeekSize = 16 << 10
)

// stream implements jsonrpc2.ObjectStream for LSP base-protocol framing.
//
// Unlike jsonrpc2.VSCodeObjectCodec it never fails on bad input: a broken
// header, a body that is not JSON, a message that is not a JSON-RPC request or
// response, or one over the size cap is answered with an error reply written
// here, and reading goes on with the next message. ReadObject returns an error
// only when the input itself ends or fails, which is when the connection
// should close.
type stream struct {
	r       *bufio.Reader
	maxBody int64
	closer  io.Closer
	// next is a header line found glued to garbage; readLine returns it
	// before reading on.
	next *string
	// resumed is set by resync, which consumed the "Content-Length:" of the
	// next header line; readLine puts it back.
	resumed bool

	mu sync.Mutex // guards w: the conn's writes and this reader's error replies interleave
	w  *bufio.Writer
}

func newStream(r io.Reader, w io.Writer, closer io.Closer, maxBody int64) *stream {
	return &stream{
		r:       bufio.NewReaderSize(r, 64<<10),
		w:       bufio.NewWriter(w),
		closer:  closer,
		maxBody: maxBody,
	}
}

// WriteObject implements jsonrpc2.ObjectStream.
func (s *stream) WriteObject(obj any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	return s.writeBody(body)
}

func (s *stream) writeBody(body []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(body))
	s.w.Write(body)
	return s.w.Flush()
}

// Close implements jsonrpc2.ObjectStream.
func (s *stream) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// ReadObject implements jsonrpc2.ObjectStream.
func (s *stream) ReadObject(v any) error {
	for {
		n, err := s.readHeader()
		var bad *badHeaderError
		switch {
		case errors.As(err, &bad):
			s.replyError(nil, codeParseError, bad.Error())
			if s.next == nil {
				if err := s.resync(); err != nil {
					return err
				}
			}
			continue
		case err != nil:
			return err
		}

		if n > s.maxBody {
			if err := s.discard(n); err != nil {
				return err
			}
			continue
		}
		// Grow the body as bytes arrive rather than trusting the declared
		// length: a header promising 60 MiB followed by silence must not
		// cost 60 MiB.
		body, err := io.ReadAll(io.LimitReader(s.r, n))
		if err != nil {
			return unexpectedEOF(err)
		}
		if int64(len(body)) < n {
			return io.ErrUnexpectedEOF
		}
		if err := json.Unmarshal(body, v); err != nil {
			if !json.Valid(body) {
				s.replyError(nil, codeParseError, "parse error: message body is not valid JSON")
			} else {
				s.replyError(peekID(body), codeInvalidRequest, "invalid request: "+strings.TrimPrefix(err.Error(), "jsonrpc2: "))
			}
			continue
		}
		return nil
	}
}

type badHeaderError struct{ reason string }

func (e *badHeaderError) Error() string { return "parse error: bad message header: " + e.reason }

// readHeader reads one header block and returns the body length.
func (s *stream) readHeader() (int64, error) {
	length := int64(-1)
	for i := 0; ; i++ {
		line, err := s.readLine()
		if err != nil {
			if i == 0 && errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			var bad *badHeaderError
			if errors.As(err, &bad) {
				return 0, err
			}
			return 0, unexpectedEOF(err)
		}
		if line == "" {
			if i == 0 {
				// Tolerate stray blank lines between messages.
				i = -1
				continue
			}
			break
		}
		if i >= maxHeaderLines {
			return 0, &badHeaderError{"too many header lines"}
		}
		if i := indexFold(line, "content-length:"); i > 0 {
			// Garbage without a newline before the next message's header:
			// answer the garbage, then read the header.
			rest := line[i:]
			s.next = &rest
			return 0, &badHeaderError{fmt.Sprintf("%q is not a header line", clip(line[:i], 40))}
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			return 0, &badHeaderError{fmt.Sprintf("%q is not a header line", clip(line, 40))}
		}
		if strings.EqualFold(name, "Content-Length") {
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n < 0 {
				return 0, &badHeaderError{fmt.Sprintf("invalid Content-Length %q", clip(strings.TrimSpace(value), 20))}
			}
			length = n
		}
	}
	if length < 0 {
		return 0, &badHeaderError{"missing Content-Length"}
	}
	return length, nil
}

// readLine reads a header line without its CR LF (or bare LF).
func (s *stream) readLine() (string, error) {
	if s.next != nil {
		line := *s.next
		s.next = nil
		return line, nil
	}
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || (err == nil && len(line) > maxHeaderLine) {
		// Drop the rest of the overlong line so the next read starts fresh.
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = s.r.ReadSlice('\n')
		}
		if err != nil {
			return "", err
		}
		return "", &badHeaderError{"header line too long"}
	}
	if err != nil {
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return "", io.ErrUnexpectedEOF
		}
		return "", err
	}
	text := strings.TrimRight(string(line), "\r\n")
	if s.resumed {
		s.resumed = false
		text = "Content-Length:" + text
	}
	return text, nil
}

// resync skips input until the next "Content-Length:" so that the message
// after a broken one is still served.
func (s *stream) resync() error {
	const marker = "content-length:"
	matched := 0
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return err
		}
		lc := c
		if 'A' <= lc && lc <= 'Z' {
			lc += 'a' - 'A'
		}
		switch {
		case lc == marker[matched]:
			matched++
		case lc == marker[0]:
			matched = 1
		default:
			matched = 0
		}
		if matched == len(marker) {
			s.resumed = true
			return nil
		}
	}
}

// discard drops an oversize body without holding it in memory, answering
// with the request's id when it can be found near the start.
func (s *stream) discard(n int64) error {
	peek := make([]byte, min(n, idPeekSize))
	if _, err := io.ReadFull(s.r, peek); err != nil {
		return unexpectedEOF(err)
	}
	if _, err := io.CopyN(io.Discard, s.r, n-int64(len(peek))); err != nil {
		return unexpectedEOF(err)
	}
	s.replyError(peekID(peek), codeInvalidRequest,
		fmt.Sprintf("message of %d bytes exceeds the %d byte limit and was discarded", n, s.maxBody))
	return nil
}

// replyError answers a message the connection never saw. id is the raw JSON
// id, or nil when it is unknown (JSON-RPC then says null).
func (s *stream) replyError(id json.RawMessage, code int64, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc2.Error  `json:"error"`
	}{"2.0", id, jsonrpc2.Error{Code: code, Message: msg}})
	// A failed write surfaces on the next read or write of the conn.
	_ = s.writeBody(body)
}

// peekID finds the top-level "id" of a possibly truncated JSON object by
// walking its tokens, so it works on the first bytes of a huge message.
// Notifications have no id and get none.
func peekID(data []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var val json.RawMessage
		if key == "id" {
			if err := dec.Decode(&val); err != nil {
				return nil
			}
			if len(val) > 0 && (val[0] == '"' || val[0] == '-' || ('0' <= val[0] && val[0] <= '9')) {
				return val
			}
			return nil
		}
		if err := skipValue(dec); err != nil {
			return nil
		}
	}
	return nil
}

// skipValue consumes one JSON value token by token, holding no more than
// one scalar at a time.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// indexFold is strings.Index ignoring ASCII case; substr is lower case.
func indexFold(s, substr string) int {
	// Byte by byte, so the index is into s itself: strings.ToLower would
	// rewrite invalid UTF-8 as U+FFFD and shift every index after it.
	for i := 0; i+len(substr) <= len(s); i++ {
		j := 0
		for j < len(substr) && lowerASCII(s[i+j]) == substr[j] {
			j++
		}
		if j == len(substr) {
			return i
		}
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
