package task

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
)

// Two margin processes on one vault (two editors open on it): one runs the
// agents. An agent created in the other is woken by the one that runs
// them, and the other's model is never called; when the first stops, the
// other takes over and wakes the agent itself.
func TestOneProcessRunsTheAgents(t *testing.T) {
	first := querytest.SampleVault(t)
	second, err := vault.Open(context.Background(), vault.Options{Dir: first.Options().Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	opts := Options{othersPoll: 20 * time.Millisecond}
	model1, model2 := blockedModel{entered: make(chan struct{}, 1)}, blockedModel{entered: make(chan struct{}, 1)}

	ctx1, stop1 := context.WithCancel(context.Background())
	rt1, err := newRuntime(ctx1, first, model1, opts)
	if err != nil {
		t.Fatal(err)
	}
	done1 := runUntilStopped(ctx1, first, rt1)
	defer func() { stop1(); done1() }()
	waitFor(t, "the first process to take the agents lock", func() bool {
		l, err := store.TryLock(filepath.Join(first.StateDir(), AgentsLock))
		if err == nil {
			l.Unlock()
		}
		return errors.Is(err, store.ErrLocked)
	})

	ctx2, stop2 := context.WithCancel(context.Background())
	rt2, err := newRuntime(ctx2, second, model2, opts)
	if err != nil {
		t.Fatal(err)
	}
	done2 := runUntilStopped(ctx2, second, rt2)
	defer func() { stop2(); done2() }()
	waitFor(t, "the second process to follow", rt2.following.Load)

	if _, err := rt2.Create(ctx2, "Tasks/Ship invoice export.md"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-model1.entered:
	case <-time.After(30 * time.Second): // only to end a hang
		t.Fatal("the agent created in the following process was never woken by the leading one")
	}
	select {
	case <-model2.entered:
		t.Fatal("the following process woke an agent")
	default:
	}

	stop1()
	done1()
	select {
	case <-model2.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the second process never took over the agents")
	}
}

// runUntilStopped runs v and rt with ctx; the returned func waits until
// both have stopped (ctx must be cancelled first).
func runUntilStopped(ctx context.Context, v *vault.Vault, rt *Runtime) func() {
	vaultDone, rtDone := make(chan error, 1), make(chan error, 1)
	go func() { vaultDone <- v.Run(ctx) }()
	go func() { rtDone <- rt.Run(ctx) }()
	var waited bool
	return func() {
		if !waited {
			<-rtDone
			<-vaultDone
			waited = true
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // only to end a hang
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
