// Package editortest is a fake editor for end-to-end tests: it builds the
// margin binary, starts `margin serve` on a copy of a vault and speaks to it
// over stdio exactly as an editor plugin does, LSP framing included.
//
// Tests wait for states (a reply, a notification matching a predicate), never
// for time to pass.
package editortest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Timeout bounds every wait; it is generous because CI machines are shared
// and slow, and a passing test never waits for it.
const Timeout = 30 * time.Second

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds cmd/margin once per test process and returns its path. It
// builds with the marginfaults tag, so the binary has the fault methods and
// hooks of a test build (server/faults.go, vault/watch/faults.go).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "margin-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "margin")
		args := []string{"build", "-tags", "marginfaults", "-o", binPath, "./cmd/margin"}
		cmd := exec.Command("go", args...)
		cmd.Dir = moduleRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// SampleVault copies testdata/vault into a temporary directory and returns it.
func SampleVault(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(moduleRoot(), "testdata", "vault"))); err != nil {
		t.Fatalf("copying sample vault: %v", err)
	}
	return dst
}

// TaskTemplate writes the task agents' template into vault, naming model
// as theirs, and removes it when the test ends.
func TaskTemplate(t testing.TB, vault, model string) {
	t.Helper()
	p := filepath.Join(vault, "Margin", "Templates", "task-agent.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "---\nmargin: template\nname: task-agent\nmodel: " + model + "\n---\n\n## Directives\nKeep the report short.\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
}

// Editor is a running `margin serve` and the client side of its connection.
type Editor struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	Stderr *bytes.Buffer

	wmu sync.Mutex // guards writes to stdin: answers and requests come from different goroutines

	mu       sync.Mutex // guards the fields below
	nextID   int
	pending  map[string]chan Message
	received []Message // every notification and server request, in order
	changed  chan struct{}
	answers  map[string]func(params json.RawMessage) (any, *RPCError) // server → client requests, by method
	closed   bool
	exitErr  error
	exited   chan struct{}
}

// Message is one message from the server.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error reply.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("rpc error %d: %s", e.Code, e.Message) }

// Start runs `margin serve` with args and env (KEY=VALUE, added to the
// test's environment). It stops the process when the test ends.
func Start(t testing.TB, env []string, args ...string) *Editor {
	t.Helper()
	return StartWrapped(t, nil, env, args...)
}

// StartWrapped is Start with `margin serve` run by a wrapper command (such
// as unshare, to give margin a namespace of its own): the wrapper's words
// come first, then the binary's path and its arguments.
func StartWrapped(t testing.TB, wrapper, env []string, args ...string) *Editor {
	t.Helper()
	argv := append(append(append([]string{}, wrapper...), Binary(t), "serve"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	// GOTRACEBACK=all: see the SIGQUIT below.
	cmd.Env = append(append(os.Environ(), "GOTRACEBACK=all"), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	e := &Editor{
		t:       t,
		cmd:     cmd,
		stdin:   stdin,
		Stderr:  &bytes.Buffer{},
		pending: make(map[string]chan Message),
		changed: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	cmd.Stderr = &lockedWriter{w: e.Stderr, mu: &e.mu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go e.read(stdout)
	t.Cleanup(func() {
		if t.Failed() {
			// Where margin's goroutines are says what a failed test
			// waited for: the runtime prints them all on SIGQUIT.
			select {
			case <-e.exited:
			default:
				cmd.Process.Signal(syscall.SIGQUIT)
			}
		}
		e.stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-e.exited
		}
		if t.Failed() {
			t.Logf("margin stderr:\n%s", e.StderrText())
		}
	})
	return e
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// StderrText is what the server logged so far.
func (e *Editor) StderrText() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.Stderr.String()
}

func (e *Editor) read(stdout io.Reader) {
	r := bufio.NewReader(stdout)
	for {
		body, err := ReadFrame(r)
		if err != nil {
			break
		}
		var m Message
		if err := json.Unmarshal(body, &m); err != nil {
			e.t.Errorf("server wrote a message that is not JSON: %q", body)
			continue
		}
		e.mu.Lock()
		if m.Method == "" && len(m.ID) > 0 {
			if ch, ok := e.pending[string(m.ID)]; ok {
				delete(e.pending, string(m.ID))
				ch <- m
			} else {
				// A reply to a message the editor sent raw (SendRaw).
				e.received = append(e.received, m)
			}
		} else {
			e.received = append(e.received, m)
			if answer := e.answers[m.Method]; answer != nil && len(m.ID) > 0 {
				// Answered off the read loop, as an editor does: the
				// answer may take a while and must not hold up reading.
				go e.answer(m, answer)
			}
		}
		close(e.changed)
		e.changed = make(chan struct{})
		e.mu.Unlock()
	}
	err := e.cmd.Wait()
	e.mu.Lock()
	e.closed = true
	e.exitErr = err
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	close(e.exited)
}

// OnRequest makes the editor answer the server's requests of method (such
// as workspace/applyEdit) with what answer returns: a result, or an error
// reply. Requests without an answer are only recorded, as before.
func (e *Editor) OnRequest(method string, answer func(params json.RawMessage) (result any, err *RPCError)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.answers == nil {
		e.answers = make(map[string]func(json.RawMessage) (any, *RPCError))
	}
	e.answers[method] = answer
}

func (e *Editor) answer(m Message, answer func(json.RawMessage) (any, *RPCError)) {
	result, rpcErr := answer(m.Params)
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	if rpcErr != nil {
		reply["error"] = rpcErr
	} else {
		reply["result"] = result
	}
	body, err := json.Marshal(reply)
	if err != nil {
		e.t.Errorf("encoding the answer to %s: %v", m.Method, err)
		return
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	// An error means the server has exited: there is no one to answer.
	e.stdin.Write(Frame(body))
}

// ReadFrame reads one LSP-framed message body.
func ReadFrame(r *bufio.Reader) ([]byte, error) {
	length := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		if strings.EqualFold(name, "Content-Length") {
			length, err = strconv.Atoi(strings.TrimSpace(value))
			if err != nil {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
		}
	}
	if length < 0 {
		return nil, fmt.Errorf("missing Content-Length")
	}
	body := make([]byte, length)
	_, err := io.ReadFull(r, body)
	return body, err
}

// Frame wraps a body in LSP framing.
func Frame(body []byte) []byte {
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...)
}

// SendRaw writes bytes to the server's stdin as they are.
func (e *Editor) SendRaw(b []byte) {
	e.t.Helper()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if _, err := e.stdin.Write(b); err != nil {
		e.t.Fatalf("writing to margin: %v", err)
	}
}

// Notify sends a notification.
func (e *Editor) Notify(method string, params any) {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		e.t.Fatal(err)
	}
	e.SendRaw(Frame(body))
}

// Send sends a request and returns its id without waiting for the reply.
func (e *Editor) Send(method string, params any) (id int, reply <-chan Message) {
	e.t.Helper()
	e.mu.Lock()
	e.nextID++
	id = e.nextID
	ch := make(chan Message, 1)
	e.pending[strconv.Itoa(id)] = ch
	e.mu.Unlock()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		e.t.Fatal(err)
	}
	e.SendRaw(Frame(body))
	return id, ch
}

// Call sends a request and waits for its reply. It returns the error reply,
// if any; a missing reply fails the test.
func (e *Editor) Call(method string, params any, result any) *RPCError {
	e.t.Helper()
	_, ch := e.Send(method, params)
	return e.Await(ch, result)
}

// Await waits for a reply from Send.
func (e *Editor) Await(ch <-chan Message, result any) *RPCError {
	e.t.Helper()
	select {
	case m := <-ch:
		if m.Error != nil {
			return m.Error
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				e.t.Fatalf("decoding result %s: %v", m.Result, err)
			}
		}
		return nil
	case <-time.After(Timeout):
		e.t.Fatalf("no reply within %s\nstderr:\n%s", Timeout, e.StderrText())
		return nil
	}
}

// MustCall is Call that fails the test on an error reply.
func (e *Editor) MustCall(method string, params any, result any) {
	e.t.Helper()
	if err := e.Call(method, params, result); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
}

// Initialize performs the LSP handshake with the vault as rootUri.
func (e *Editor) Initialize(vault string) json.RawMessage {
	e.t.Helper()
	return e.InitializeWith(vault, map[string]any{})
}

// InitializeWith is Initialize for a client with these capabilities (such
// as general.positionEncodings or workspace.codeLens.refreshSupport).
func (e *Editor) InitializeWith(vault string, capabilities map[string]any) json.RawMessage {
	e.t.Helper()
	var res json.RawMessage
	e.MustCall("initialize", map[string]any{"processId": os.Getpid(), "rootUri": "file://" + vault, "capabilities": capabilities}, &res)
	e.Notify("initialized", map[string]any{})
	return res
}

// WaitFor waits until the server has sent a message (notification, server
// request or unmatched reply) for which match returns true, and returns it.
func (e *Editor) WaitFor(what string, match func(Message) bool) Message {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	seen := 0
	for {
		e.mu.Lock()
		for ; seen < len(e.received); seen++ {
			if match(e.received[seen]) {
				m := e.received[seen]
				e.mu.Unlock()
				return m
			}
		}
		closed, changed := e.closed, e.changed
		e.mu.Unlock()
		if closed {
			e.t.Fatalf("margin exited while waiting for %s\nstderr:\n%s", what, e.StderrText())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e.t.Fatalf("waited %s for %s\nstderr:\n%s", Timeout, what, e.StderrText())
		}
	}
}

// Received returns the notifications and server requests so far.
func (e *Editor) Received() []Message {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Message(nil), e.received...)
}

// Exit waits for the process to end and returns its exit code.
func (e *Editor) Exit() int {
	e.t.Helper()
	select {
	case <-e.exited:
	case <-time.After(Timeout):
		e.t.Fatalf("margin did not exit within %s", Timeout)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.exitErr == nil {
		return 0
	}
	if ee, ok := e.exitErr.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	e.t.Fatalf("waiting for margin: %v", e.exitErr)
	return -1
}

// Process is the running margin process (for signals in crash tests).
func (e *Editor) Process() *os.Process { return e.cmd.Process }
