package query_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
)

// attempts records every model call attempt the client makes.
type attempts struct {
	mu      sync.Mutex
	records []llm.Record
}

func (a *attempts) Record(_ context.Context, r llm.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records = append(a.records, r)
}

func (a *attempts) retries() (calls, retries int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.records {
		if r.Attempt > 0 {
			retries++
		}
	}
	return len(a.records), retries
}

// TestRefusedConnectionDegradesAtOnce: with the default retry
// configuration (llm_retry 3, backoff from 0.5 s), ask and log against a
// port where nothing listens degrade without a retry, so without a
// backoff (they took 3.5 s when a refused connection was retried). The
// time is logged, not asserted: the machine is shared.
func TestRefusedConnectionDegradesAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	v := querytest.SampleVault(t)
	cfg := llm.DefaultConfig()
	p := cfg.Providers[llm.KindOllama]
	p.APIBase = closed
	cfg.Providers[llm.KindOllama] = p
	rec := &attempts{}
	client, err := llm.New(cfg, llm.WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t, v, client, querytest.Now)

	start := time.Now()
	r, err := e.Ask(context.Background(), "bench press heavy", nil)
	t.Logf("ask degraded after %s", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != query.StatusDegraded || !strings.Contains(r.Answer, "no model was reachable") {
		t.Errorf("ask: status %s answer %q, want degraded", r.Status, r.Answer)
	}
	if calls, retries := rec.retries(); calls == 0 || retries != 0 {
		t.Errorf("ask: %d attempts, %d of them retries: want no retry of a refused connection", calls, retries)
	}

	start = time.Now()
	lr, err := e.Log(context.Background(), "Bench 3x5 @ 200", time.Date(2026, 11, 22, 18, 0, 0, 0, time.Local), nil)
	t.Logf("log stored unparsed after %s", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Status != query.StatusLogged || lr.Logged == nil || !strings.Contains(lr.Logged.Note, "unparsed") {
		t.Errorf("log: %+v, want logged unparsed", lr)
	}
	if calls, retries := rec.retries(); retries != 0 {
		t.Errorf("ask and log: %d attempts, %d of them retries: want no retry of a refused connection", calls, retries)
	}
}
