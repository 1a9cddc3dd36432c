package server

import (
	"context"
	"sync"
	"time"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/protocol"
)

// modelWatch keeps the model's status from a probe at start and from the
// outcome of every model call since, so vault/status never waits on the
// network.
// The model is the task agents' role's until they make a call, then the
// one their last call asked for (a template may name its own). It
// implements llm.Recorder.
type modelWatch struct {
	mu     sync.Mutex // guards status and role
	status protocol.ModelStatus
	role   string // the task agents' llm role
}

// probeTimeout bounds the start-up probe: a model server that takes longer
// to list its models is as good as unreachable for an editor waiting on it.
const probeTimeout = 5 * time.Second

// probe resolves the task agents' role, role, and asks its provider for
// its models, with also (the models task templates name).
func (w *modelWatch) probe(ctx context.Context, client *llm.Client, role string, also []string) {
	provider, model, err := client.Resolve(role)
	w.mu.Lock()
	w.role = role
	w.status.Provider, w.status.Model = provider, model
	if err != nil {
		w.status.Error = err.Error()
	}
	w.mu.Unlock()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	h := client.Probe(ctx, provider, also...)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.Checked = time.Now()
	w.status.Reachable = h.Err == nil && h.Reachable
	w.status.Error = ""
	switch {
	case h.Err != nil:
		w.status.Error = h.Err.Error()
	case len(h.Missing) > 0:
		w.status.Error = "models not pulled: " + h.Fix
	}
}

// Record implements llm.Recorder: a call that reached the server proves it
// reachable, one that could not connect proves the opposite.
func (w *modelWatch) Record(_ context.Context, r llm.Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.Provider != w.status.Provider {
		return
	}
	if r.Role == w.role && r.Model != "" {
		w.status.Model = r.Model
	}
	switch llm.Class(r.Outcome) {
	case llm.ErrUnreachable, llm.ErrTimeout:
		w.status.Reachable, w.status.Error = false, r.Err
	case "ok":
		w.status.Reachable, w.status.Error = true, ""
	default:
		w.status.Reachable = true
	}
	w.status.Checked = r.Time
}

func (w *modelWatch) get() protocol.ModelStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}
