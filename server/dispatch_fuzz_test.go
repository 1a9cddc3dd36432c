package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/server/editortest"
)

// FuzzDispatch drives the real server (stream, connection, Handle, the
// method table and its handlers) over in-memory pipes with fuzzed input:
// an optional initialize (without a vault or a model: under the fuzzer's
// coverage instrumentation opening a vault costs a few hundred ms an
// input, so TestDispatchOnAVault runs the seeds on one instead), then
// parts separated by 0x1e, each sent as is when it carries its own header
// and framed otherwise. It asserts that no panic escapes, that every input
// is done within a deadline, that everything the server writes is a
// well-formed JSON-RPC 2.0 message, that every request with a plain id is
// answered under that id, and that memory stays bounded whatever
// Content-Length a header declares.
func FuzzDispatch(f *testing.F) {
	for _, seed := range dispatchSeeds() {
		f.Add(true, []byte(seed.data))
	}
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":1,"method":"vault/status"}`))
	f.Add(true, []byte("Content-Length: 99999999999\r\n\r\n{\"id\":7}"))
	f.Add(true, []byte("Content-Length: 33554432\r\n\r\n{\"id\":8,\"method\":\"vault/status\"}"))
	f.Add(true, []byte("Content-Length: 5000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"vault/search\",\"params\":{\"query\":\""+strings.Repeat("a", 4990)+"\"}}"))
	f.Add(true, []byte("Content-Type: x\r\nContent-Length: 3\r\n\r\n[1]\x1e{\"id\":2,\"method\":\"shutdown\"}\x1e{\"id\":3,\"method\":\"vault/status\"}\x1e{\"method\":\"exit\"}"))
	f.Fuzz(func(t *testing.T, initialize bool, data []byte) {
		runDispatch(t, initialize, "", data)
	})
}

// TestDispatchOnAVault runs the fuzz seeds meant for a vault on a copy of
// a small one, so the handlers behind the "no vault" check meet them too.
func TestDispatchOnAVault(t *testing.T) {
	for i, seed := range dispatchSeeds() {
		if !seed.vault {
			continue
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "vault")
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "fuzzvault"))); err != nil {
				t.Fatal(err)
			}
			runDispatch(t, true, root, []byte(seed.data))
		})
	}
}

// fuzzMaxBody is the size cap in the fuzz runs: small, so oversize
// messages are cheap to make and the memory bound is tight.
const fuzzMaxBody = 4 << 10

// fuzzDeadline only detects a hang; a normal input takes milliseconds.
const fuzzDeadline = 20 * time.Second

func runDispatch(t *testing.T, initialize bool, root string, data []byte) {
	var input [][]byte
	if initialize {
		p := map[string]any{"processId": nil}
		if root != "" {
			p["rootUri"] = (&url.URL{Scheme: "file", Path: filepath.ToSlash(root)}).String()
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "fuzz-init", "method": "initialize", "params": p})
		input = append(input, editortest.Frame(body))
	}
	want := map[string]bool{} // ids that must be answered
	if initialize {
		want[`"fuzz-init"`] = true
	}
	raw, exited := false, false
	for _, part := range bytes.Split(data, []byte{0x1e}) {
		if hasHeader(part) {
			raw = true
			input = append(input, part)
			continue
		}
		input = append(input, editortest.Frame(part))
		id, method, ok := plainRequest(part)
		switch {
		case exited:
		case method == "exit":
			exited = true
		case ok:
			want[id] = true
		}
	}
	// A raw part may declare a length beyond the input and swallow what
	// follows, so only fully framed input promises an answer to each
	// request; and nothing is owed after exit.
	check := !raw && !exited
	if !check {
		want = map[string]bool{}
	}

	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	s := New(Options{MaxMessageSize: fuzzMaxBody})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan struct{})
	go func() {
		defer close(served)
		s.Serve(context.Background(), inR, outW)
		outW.Close()
	}()

	var mu sync.Mutex
	answered := map[string]bool{}
	allAnswered := make(chan struct{})
	var problems []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		r := bufio.NewReader(outR)
		for {
			body, err := editortest.ReadFrame(r)
			if err != nil {
				if err != io.EOF && err != io.ErrClosedPipe {
					mu.Lock()
					problems = append(problems, "the server wrote a bad frame: "+err.Error())
					mu.Unlock()
				}
				io.Copy(io.Discard, outR)
				return
			}
			id, isRequest, problem := checkMessage(body)
			mu.Lock()
			if problem != "" {
				problems = append(problems, problem)
			}
			if id != "" && !isRequest {
				answered[id] = true
				if len(want) > 0 && allIn(want, answered) {
					select {
					case <-allAnswered:
					default:
						close(allAnswered)
					}
				}
			}
			mu.Unlock()
			if isRequest && id != "" {
				// The server asks the client (workspace/applyEdit): refuse,
				// as an editor that cannot would.
				inW.Write(editortest.Frame([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"not supported"}}`)))
			}
		}
	}()

	deadline := time.NewTimer(fuzzDeadline)
	defer deadline.Stop()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for _, b := range input {
			if _, err := inW.Write(b); err != nil {
				return
			}
		}
	}()
	select {
	case <-wrote:
	case <-served:
	case <-deadline.C:
		t.Fatalf("the server stopped reading its input for %s", fuzzDeadline)
	}
	if check && len(want) > 0 {
		select {
		case <-allAnswered:
		case <-served:
		case <-deadline.C:
			mu.Lock()
			t.Fatalf("requests not answered within %s: want %v, got %v", fuzzDeadline, keys(want), keys(answered))
		}
	}
	inW.Close()
	select {
	case <-served:
	case <-deadline.C:
		t.Fatalf("Serve did not return within %s of the input's end", fuzzDeadline)
	}
	<-read

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	// What one input may allocate: its own bytes many times over plus a
	// vault (under 1 MiB for the seeds), never a declared Content-Length.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > uint64(8<<20+100*len(data)) {
		t.Errorf("one input allocated %d MiB", grown>>20)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if check && !allIn(want, answered) {
		t.Errorf("requests without an answer: want %v, got %v", keys(want), keys(answered))
	}
}

// hasHeader reports whether a part carries its own header block.
func hasHeader(part []byte) bool {
	lower := bytes.ToLower(part)
	return bytes.HasPrefix(lower, []byte("content-")) || bytes.Contains(part, []byte("\r\n\r\n"))
}

// plainRequest reads a framed part the way the connection will and says
// whether it is a request that must be answered under id (the id's JSON
// as the server echoes it).
func plainRequest(body []byte) (id, method string, ok bool) {
	var m struct {
		ID     json.RawMessage  `json:"id"`
		Method string           `json:"method"`
		Result *json.RawMessage `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if !json.Valid(body) || json.Unmarshal(body, &m) != nil {
		return "", "", false
	}
	// Keys match case-insensitively and repeat: only a body whose id the
	// stream and the connection read the same way is checked.
	if bytes.Count(bytes.ToLower(body), []byte(`"id"`)) != 1 || !bytes.Contains(body, []byte(`"id"`)) {
		return "", m.Method, false
	}
	if m.Method == "" || m.Result != nil || m.Error != nil || m.Method == "exit" {
		return "", m.Method, false
	}
	return canonicalID(m.ID), m.Method, canonicalID(m.ID) != ""
}

// canonicalID is an id as a reply carries it: a string re-encoded, a
// non-negative integer as is; "" for any other id.
func canonicalID(raw json.RawMessage) string {
	if string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var n uint64
	if json.Unmarshal(raw, &n) == nil && string(raw) == fmt.Sprint(n) {
		return string(raw)
	}
	return ""
}

// checkMessage checks one message the server wrote: JSON-RPC 2.0, and a
// response with exactly one of result and error, an error with a code and
// a message. It returns the id (canonical) and whether it is a request.
func checkMessage(body []byte) (id string, isRequest bool, problem string) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "", false, fmt.Sprintf("the server wrote a body that is not a JSON object: %v: %.200q", err, body)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return "", false, fmt.Sprintf("message without jsonrpc 2.0: %.200q", body)
	}
	rawID, hasID := m["id"]
	if hasID {
		id = canonicalID(rawID)
		if id == "" && string(rawID) != "null" {
			// An id the client sent that is neither a string nor an
			// integer is echoed as sent.
			id = string(rawID)
		}
	}
	if _, ok := m["method"]; ok {
		return id, hasID, ""
	}
	result, hasResult := m["result"]
	rawErr, hasErr := m["error"]
	switch {
	case !hasID:
		return "", false, fmt.Sprintf("response without an id: %.200q", body)
	case hasResult == hasErr:
		return id, false, fmt.Sprintf("response needs exactly one of result and error: %.200q", body)
	case hasResult && len(result) == 0:
		return id, false, fmt.Sprintf("empty result: %.200q", body)
	case hasErr:
		var e struct {
			Code    *int64  `json:"code"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(rawErr, &e) != nil || e.Code == nil || e.Message == nil || *e.Message == "" {
			return id, false, fmt.Sprintf("error without code or message: %.200q", body)
		}
	}
	return id, false, ""
}

func allIn(want, got map[string]bool) bool {
	for id := range want {
		if !got[id] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// dispatchSeeds are requests to every method the server registers, with
// good params and with bad ones, plus the lifecycle around them.
func dispatchSeeds() []dispatchSeed {
	doc := "file:///vault/Tasks/Write%20the%20report.md"
	good := map[string]string{
		"initialized":              `{}`,
		"shutdown":                 `null`,
		"textDocument/didOpen":     `{"textDocument":{"uri":"` + doc + `","languageId":"markdown","version":1,"text":"---\ntype: task\n---\n# T\n- [ ] a\n"}}`,
		"textDocument/didChange":   `{"textDocument":{"uri":"` + doc + `","version":2},"contentChanges":[{"text":"# changed\n"}]}`,
		"textDocument/didSave":     `{"textDocument":{"uri":"` + doc + `"},"text":"# saved\n"}`,
		"textDocument/didClose":    `{"textDocument":{"uri":"` + doc + `"}}`,
		"textDocument/codeLens":    `{"textDocument":{"uri":"` + doc + `"}}`,
		"vault/status":             `{}`,
		"vault/coverage":           `{"state":"failed"}`,
		"vault/search":             `{"query":"report","mode":"any","from":"2026-01-01","to":"2026-12-31","glob":"Daily/*.md","tags":["work"],"limit":3}`,
		"vault/rescan":             `{}`,
		"agents/list":              `{"lifecycle":"active"}`,
		"agents/get":               `{"task":"Tasks/Write the report.md"}`,
		"agents/create":            `{"task":"Tasks/Write the report.md"}`,
		"agents/control":           `{"id":"a0","action":"pause"}`,
		"agents/activity":          `{"id":"a0","limit":2}`,
		"reports/get":              `{"task":"Tasks/Write the report.md"}`,
		"changes/list":             `{"task":"Tasks/Write the report.md","status":"open"}`,
		"changes/decide":           `{"id":"0000","decisions":[{"item":"c1","verdict":"confirmed"},{"item":"c2","verdict":"rejected","reason":"no"}]}`,
		"changes/confirmAll":       `{"id":"0000"}`,
		"decisions/list":           `{"task":"Tasks/Write the report.md","limit":5}`,
		"workspace/executeCommand": `{"command":"margin.wake","arguments":[{"task":"Tasks/Write the report.md"}]}`,
		"query/ask":                `{"text":"what about the report?","workDoneToken":"t1"}`,
		"query/reply":              `{"sessionId":"s0","answers":{"q1":"yes"},"decline":false}`,
		"log/append":               `{"text":"Wrote two pages","time":"2026-11-22T10:00:00Z"}`,
		"context/get":              `{}`,
		"$/cancelRequest":          `{"id":1}`,
	}
	bad := []string{`"a string"`, `[1,2]`, `{"query":5,"text":["x"],"task":{"a":1},"id":true,"limit":"many","textDocument":7}`,
		`{"task":"../../etc/passwd","text":"x","uri":"file:///etc/passwd","glob":"../**"}`}
	var seeds []dispatchSeed
	id := 1
	names := make([]string, 0, len(good))
	for method := range good {
		names = append(names, method)
	}
	slices.Sort(names)
	for _, method := range names {
		params := good[method]
		// On a vault: as a request, a notification, with a string id.
		seeds = append(seeds, dispatchSeed{true, strings.Join([]string{
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params),
			fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":%s}`, method, params),
			fmt.Sprintf(`{"jsonrpc":"2.0","id":"s-%d","method":%q,"params":%s}`, id, method, params),
		}, "\x1e")})
		// Without one: good params and every bad kind.
		var parts []string
		for _, p := range append([]string{params}, bad...) {
			id++
			parts = append(parts, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, p))
		}
		seeds = append(seeds, dispatchSeed{false, strings.Join(parts, "\x1e")})
		id++
	}
	// A session: open a note, ask about it, shut down, exit.
	seeds = append(seeds, dispatchSeed{true, strings.Join([]string{
		`{"jsonrpc":"2.0","method":"initialized","params":{}}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","method":"textDocument/didOpen","params":%s}`, good["textDocument/didOpen"]),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"textDocument/codeLens","params":%s}`, good["textDocument/codeLens"]),
		`{"jsonrpc":"2.0","id":2,"method":"agents/create","params":{"task":"Tasks/Write the report.md"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"log/append","params":{"text":"Report done"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"shutdown"}`,
		`{"jsonrpc":"2.0","id":5,"method":"vault/status"}`,
		`{"jsonrpc":"2.0","method":"exit"}`,
	}, "\x1e")})
	seeds = append(seeds, dispatchSeed{false, strings.Join([]string{`{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`, `not json`, `{"id":1}`, `[]`,
		`{"jsonrpc":"2.0","id":-1,"method":"vault/status"}`, `{"jsonrpc":"2.0","id":1.5,"method":"vault/status"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"vault/status"}`, `{"jsonrpc":"2.0","id":"\u0041","method":"vault/status"}`}, "\x1e")})
	return seeds
}

// dispatchSeed is a seed input, run on a small vault or on none.
type dispatchSeed struct {
	vault bool
	data  string
}
