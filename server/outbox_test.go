package server

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestOutboxKeepsOrder(t *testing.T) {
	var got bytes.Buffer
	o := newOutbox(&got)
	var want strings.Builder
	for i := range 1000 {
		msg := strings.Repeat(string(rune('a'+i%26)), i%50+1)
		want.WriteString(msg)
		if _, err := o.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	o.Close(10 * time.Second)
	if got.String() != want.String() {
		t.Errorf("the client received %d bytes out of order or incomplete, want %d", got.Len(), want.Len())
	}
}

// TestOutboxNeverWaitsForTheClient writes to a client that reads nothing.
func TestOutboxNeverWaitsForTheClient(t *testing.T) {
	r, w := io.Pipe()
	defer r.Close()
	o := newOutbox(w)
	msg := make([]byte, 64<<10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for o.queuedBytes() <= backlogLimit {
			if _, err := o.Write(msg); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes blocked on a client that does not read")
	}
	if !o.Backlogged() {
		t.Error("not backlogged with more than backlogLimit bytes queued")
	}
	start := time.Now()
	o.Close(100 * time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close waited %v for a client that does not read, want about its grace", d)
	}
	if _, err := o.Write(msg); err == nil {
		t.Error("a write after Close succeeded")
	}
}

func (o *outbox) queuedBytes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued
}
