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
			if err := s.refuseOversize(n); err != nil {
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
		if problem := checkVersion(body); problem != "" {
			s.replyError(peekID(body), codeInvalidRequest, "invalid request: "+problem)
			continue
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
// after a broken one is still served. It scans what is buffered a chunk at a
// time, holding no more than the reader's buffer.
func (s *stream) resync() error {
	const marker = "content-length:"
	need := 1
	for {
		if _, err := s.r.Peek(need); err != nil {
			return err
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		if i := indexMarker(buf, marker); i >= 0 {
			s.r.Discard(i + len(marker))
			s.resumed = true
			return nil
		}
		// Keep a tail shorter than the marker: it may go on in the next chunk.
		keep := min(len(buf), len(marker)-1)
		s.r.Discard(len(buf) - keep)
		need = keep + 1
	}
}

// refuseOversize answers a message over the size cap at once and skips to
// the next header without holding the body. It does not read the announced
// length: a header may promise 2 GB and send a short body followed by the
// next message, which must still be answered. The id is taken from what has
// already arrived of the body, so a client waiting on it gets its answer.
//
// A body that does arrive in full is skipped by resync as it scans for the
// next header. Valid JSON can hold "Content-Length:" only inside a string,
// where no line break may follow, so such a body costs at most a -32700
// reply for the false header before the stream is back in step.
func (s *stream) refuseOversize(n int64) error {
	if _, err := s.r.Peek(1); err != nil {
		return unexpectedEOF(err)
	}
	peek, _ := s.r.Peek(int(min(n, int64(s.r.Buffered()), idPeekSize)))
	s.replyError(peekID(peek), codeInvalidRequest,
		fmt.Sprintf("message of %d bytes exceeds the %d byte limit and was discarded", n, s.maxBody))
	return s.resync()
}

// checkVersion says what is wrong with a message object's "jsonrpc"
// member, which JSON-RPC 2.0 requires to be exactly "2.0"; "" when it is.
// A batch (an array) is left to the connection, which checks each member's
// shape.
func checkVersion(body []byte) string {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		return ""
	}
	var m struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "" // not an object after all: the decoder says why
	}
	switch {
	case m.JSONRPC == nil:
		return `"jsonrpc" is missing; want "2.0"`
	case string(*m.JSONRPC) != `"2.0"`:
		return fmt.Sprintf(`"jsonrpc" is %s; want "2.0"`, clip(string(*m.JSONRPC), 20))
	}
	return ""
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

// indexMarker is indexFold over bytes, for resync's scan of bodies that may
// be gigabytes: it jumps between the marker's first letters with
// bytes.IndexByte rather than comparing at every byte. The next place of
// each letter is kept until passed, so each is searched for once a chunk.
func indexMarker(b []byte, marker string) int {
	next := func(c byte, from int) int {
		if i := bytes.IndexByte(b[from:], c); i >= 0 {
			return from + i
		}
		return len(b)
	}
	lo, up := next(marker[0], 0), next(marker[0]-('a'-'A'), 0)
	for {
		at := min(lo, up)
		if len(b)-at < len(marker) {
			return -1
		}
		if indexFold(string(b[at:at+len(marker)]), marker) == 0 {
			return at
		}
		if at == lo {
			lo = next(marker[0], at+1)
		} else {
			up = next(marker[0]-('a'-'A'), at+1)
		}
	}
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
