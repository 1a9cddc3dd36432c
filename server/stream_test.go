package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// message is what ReadObject decodes into in these tests; the conn uses its
// own anyMessage, which likewise rejects objects that are neither a request
// nor a response.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (m *message) UnmarshalJSON(b []byte) error {
	type plain message
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.Method == "" {
		return errors.New("jsonrpc2: unable to determine message type (request or response)")
	}
	*m = message(p)
	return nil
}

// readAll reads every object from input, returning the methods read and the
// error replies the stream wrote.
func readAll(t *testing.T, input string, maxBody int64) (methods []string, replies []map[string]any) {
	t.Helper()
	var out bytes.Buffer
	s := newStream(strings.NewReader(input), &out, nil, maxBody)
	for {
		var m message
		err := s.ReadObject(&m)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadObject: %v", err)
			}
			break
		}
		methods = append(methods, m.Method)
	}
	r := bytes.NewReader(out.Bytes())
	for r.Len() > 0 {
		var length int
		if _, err := fmt.Fscanf(r, "Content-Length: %d\r\n\r\n", &length); err != nil {
			t.Fatalf("stream wrote a bad frame: %v (%q)", err, out.String())
		}
		body := make([]byte, length)
		io.ReadFull(r, body)
		var reply map[string]any
		if err := json.Unmarshal(body, &reply); err != nil {
			t.Fatalf("stream wrote bad JSON %q", body)
		}
		replies = append(replies, reply)
	}
	return methods, replies
}

func TestStreamSurvivesBadInput(t *testing.T) {
	ok := frame(`{"jsonrpc":"2.0","id":1,"method":"ok"}`)
	for _, tc := range []struct {
		name      string
		input     string
		wantCodes []float64
		wantIDs   []any
	}{
		{"good message", ok, nil, nil},
		{"body not JSON", frame(`{"id":1,`) + ok, []float64{-32700}, []any{nil}},
		{"JSON but not a message", frame(`{"id":7,"hello":"world"}`) + ok, []float64{-32600}, []any{7.0}},
		{"bad content length", "Content-Length: x\r\n\r\n{}" + ok, []float64{-32700}, []any{nil}},
		{"missing content length", "Content-Type: a\r\n\r\n{}" + ok, []float64{-32700}, []any{nil}},
		{"garbage line", "{\"jsonrpc\":\"2.0\"}\r\n\r\n" + ok, []float64{-32700}, []any{nil}},
		{"garbage without newline before next header", "xyz" + ok, []float64{-32700}, []any{nil}},
		{"lower-case header and bare LF", strings.ReplaceAll(strings.Replace(ok, "Content-Length", "content-length", 1), "\r\n", "\n"), nil, nil},
		{"overlong header line", strings.Repeat("A", 100<<10) + "\r\n\r\n" + ok, []float64{-32700}, []any{nil}},
		{"oversize body", frame(`{"jsonrpc":"2.0","id":"big","method":"x","params":"`+strings.Repeat("z", 5000)+`"}`) + ok, []float64{-32600}, []any{"big"}},
		{"blank lines between messages", "\r\n\r\n" + ok, nil, nil},
		// A header promising far more than comes must not swallow the
		// next message: it is answered at once and the stream resyncs.
		{"announced length far over what comes", "Content-Length: 2000000000\r\n\r\n" + `{"jsonrpc":"2.0","id":6,"method":"x"}` + ok, []float64{-32600}, []any{6.0}},
		{"jsonrpc 1.0", frame(`{"jsonrpc":"1.0","id":8,"method":"x"}`) + ok, []float64{-32600}, []any{8.0}},
		{"jsonrpc missing", frame(`{"id":"m","method":"x"}`) + ok, []float64{-32600}, []any{"m"}},
		{"jsonrpc not a string", frame(`{"jsonrpc":2,"id":9,"method":"x"}`) + ok, []float64{-32600}, []any{9.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			methods, replies := readAll(t, tc.input, 1024)
			if len(methods) != 1 || methods[0] != "ok" {
				t.Errorf("methods read = %v, want the good message after the bad one", methods)
			}
			if len(replies) != len(tc.wantCodes) {
				t.Fatalf("replies = %v, want codes %v", replies, tc.wantCodes)
			}
			for i, r := range replies {
				e := r["error"].(map[string]any)
				if e["code"] != tc.wantCodes[i] || r["id"] != tc.wantIDs[i] {
					t.Errorf("reply %d = %v, want code %v id %v", i, r, tc.wantCodes[i], tc.wantIDs[i])
				}
			}
		})
	}
}

// hugeBody streams a message body of n bytes without ever holding it.
type hugeBody struct {
	header []byte
	left   int64
}

func (h *hugeBody) Read(p []byte) (int, error) {
	if len(h.header) > 0 {
		n := copy(p, h.header)
		h.header = h.header[n:]
		return n, nil
	}
	if h.left == 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), h.left))
	for i := range p[:n] {
		p[i] = 'x'
	}
	h.left -= int64(n)
	return n, nil
}

// readOneObject reads one object from s and says how many bytes that
// allocated.
func readOneObject(s *stream) (allocated uint64, err error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var m message
	err = s.ReadObject(&m)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

func TestOversizeMessageIsNotHeldInMemory(t *testing.T) {
	const size = 512 << 20
	prefix := `{"jsonrpc":"2.0","id":3,"method":"x","params":"`
	r := &hugeBody{header: []byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", size, prefix)), left: size - int64(len(prefix))}
	var out bytes.Buffer
	grew, err := readOneObject(newStream(r, &out, nil, 1<<20))
	if !errors.Is(err, io.EOF) {
		t.Fatalf("ReadObject = %v, want EOF after the discarded message", err)
	}
	if grew > 8<<20 {
		t.Errorf("discarding a %d MiB message allocated %d MiB", size>>20, grew>>20)
	}
	if !strings.Contains(out.String(), `"id":3`) || !strings.Contains(out.String(), "exceeds") {
		t.Errorf("reply = %q, want an error for id 3", out.String())
	}
}

func TestDeclaredLengthIsNotAllocatedUpFront(t *testing.T) {
	const declared = 60 << 20 // under the cap, so margin means to read it
	input := fmt.Sprintf("Content-Length: %d\r\n\r\n{\"jsonrpc\":\"2.0\"", declared)
	grew, err := readOneObject(newStream(strings.NewReader(input), io.Discard, nil, 64<<20))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ReadObject = %v, want unexpected EOF for a body cut short", err)
	}
	if grew > 1<<20 {
		t.Errorf("a body that never came allocated %d MiB for its declared %d MiB", grew>>20, declared>>20)
	}
}

func TestPeekID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"id":5,"method":"x"}`, "5"},
		{`{"method":"x","params":{"id":9},"id":"s"}`, `"s"`},
		{`{"jsonrpc":"2.0","params":[1,2,{"a":"b"}],"id":-1}`, "-1"},
		{`{"method":"x"}`, ""},
		{`{"id":{"nested":1}}`, ""},
		{`{"id":null}`, ""},
		{`[1,2]`, ""},
		{`{"params":"truncat`, ""},
	} {
		if got := string(peekID([]byte(tc.in))); got != tc.want {
			t.Errorf("peekID(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzStream(f *testing.F) {
	f.Add([]byte(frame(`{"jsonrpc":"2.0","id":1,"method":"ok"}`)))
	f.Add([]byte("Content-Length: 5\r\n\r\n{}{}{"))
	f.Add([]byte("Content-Length: -1\r\n\r\n"))
	f.Add([]byte("content-length:3\n\n[1]Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte(frame(`{"id":"x","params":"` + strings.Repeat("y", 300) + `"}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		s := newStream(bytes.NewReader(data), &out, nil, 256)
		// Every ReadObject consumes input, so this ends: bound it anyway.
		for i := 0; i <= len(data)+1; i++ {
			var m message
			if err := s.ReadObject(&m); err != nil {
				return
			}
		}
		t.Fatalf("ReadObject returned more objects than there are bytes")
	})
}

func TestIndexMarker(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{"content-length:", 0},
		{"xxCONTENT-LENGTH:", 2},
		{"cccCcontent-Length:", 4},
		{"content-lengthcontent-length", -1},
		{"content-length", -1},
	} {
		if got := indexMarker([]byte(tc.in), "content-length:"); got != tc.want {
			t.Errorf("indexMarker(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
