package agents

import (
	"context"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
)

// blockedModel answers no call: each waits until its wake is stopped.
type blockedModel struct{ entered chan struct{} }

func (m blockedModel) Chat(ctx context.Context, _ llm.Request) (llm.Response, error) {
	select {
	case m.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return llm.Response{}, ctx.Err()
}

// Startup wakes every agent of the vault. Only wakeSlots of them may run at
// once, the rest wait queued: a wake per agent at once had every task's
// bookkeeping in SQLite together, and vault/status queued behind it.
func TestStartupWakesBounded(t *testing.T) {
	v := querytest.SampleVault(t)
	model := blockedModel{entered: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := New(ctx, v, model, Options{AutoCreate: true, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := v.Index().Tasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slots := rt.opts.wakeSlots()
	if len(tasks) <= slots {
		t.Fatalf("the sample vault has %d tasks, need more than %d", len(tasks), slots)
	}
	vaultDone, rtDone := make(chan error, 1), make(chan error, 1)
	go func() { vaultDone <- v.Run(ctx) }()
	go func() { rtDone <- rt.Run(ctx) }()
	defer func() {
		cancel()
		<-rtDone
		<-vaultDone
	}()

	deadline := time.After(30 * time.Second) // only to end a hang
	select {
	case <-model.entered:
	case <-deadline:
		t.Fatal("no wake reached the model")
	}
	// The wake in the model and the one waiting for it hold both slots
	// and never finish, so the counts settle there.
	for {
		c, err := rt.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Running > slots {
			t.Fatalf("%d wakes running at once, want at most %d (%+v)", c.Running, slots, c)
		}
		if c.Running == slots && c.Queued > 0 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("counts never settled at %d running: %+v", slots, c)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
