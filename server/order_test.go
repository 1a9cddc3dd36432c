package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/server/editortest"
)

// inProcess serves s over pipes and returns a function sending a framed
// request (with params, when given) and a channel of replies keyed by id.
func inProcess(t *testing.T, s *Server) (send func(id int, method string, params ...any), replies <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Serve(ctx, inR, outW)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
		<-done
	})
	ch := make(chan int, 16)
	go func() {
		r := bufio.NewReader(outR)
		for {
			body, err := editortest.ReadFrame(r)
			if err != nil {
				return
			}
			var m struct{ ID *int }
			json.Unmarshal(body, &m)
			if m.ID != nil {
				ch <- *m.ID
			}
		}
	}()
	var mu sync.Mutex
	return func(id int, method string, params ...any) {
		mu.Lock()
		defer mu.Unlock()
		req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
		if len(params) > 0 {
			req["params"] = params[0]
		}
		body, err := json.Marshal(req)
		if err != nil {
			t.Error(err)
			return
		}
		inW.Write(editortest.Frame(body))
	}, ch
}

// TestReadsWaitForEarlierWritesOnly shows the ordering contract: a read
// waits for the state changes that arrived before it, not for later ones,
// and reads do not wait for each other.
func TestReadsWaitForEarlierWritesOnly(t *testing.T) {
	release := make(chan struct{})
	methods["test/slowWrite"] = writer(func(s *Server, ctx context.Context, _ *empty) (any, error) {
		<-release
		return "written", nil
	})
	methods["test/read"] = reader(func(s *Server, ctx context.Context, _ *empty) (any, error) { return "read", nil })
	t.Cleanup(func() {
		delete(methods, "test/slowWrite")
		delete(methods, "test/read")
	})

	s := New(Options{})
	s.state = stateRunning // no vault needed for these methods
	send, replies := inProcess(t, s)

	send(1, "test/read")
	if id := <-replies; id != 1 {
		t.Fatalf("first reply is %d, want the read with no write before it", id)
	}
	send(2, "test/slowWrite")
	send(3, "test/read")
	select {
	case id := <-replies:
		t.Fatalf("reply %d arrived while the earlier write was still running", id)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	got := []int{<-replies, <-replies}
	if got[0] != 2 || got[1] != 3 {
		t.Errorf("replies after release = %v, want the write then the read", got)
	}
}

// TestCancelRequestSentAsRequestIsAnswered: $/cancelRequest is a
// notification, but a client that sends it with an id waits for an
// answer; found by FuzzDispatch.
func TestCancelRequestSentAsRequestIsAnswered(t *testing.T) {
	send, replies := inProcess(t, New(Options{}))
	send(7, "$/cancelRequest")
	send(8, "no/such/method")
	for _, want := range []int{7, 8} {
		select {
		case id := <-replies:
			if id != want {
				t.Fatalf("reply to %d, want %d", id, want)
			}
		case <-time.After(editortest.Timeout):
			t.Fatalf("no reply to %d", want)
		}
	}
}
