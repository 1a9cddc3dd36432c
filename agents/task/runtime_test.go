package task

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/store"
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
	rt, err := newRuntime(ctx, v, model, Options{AutoCreate: true, Concurrency: 1})
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
	runAgents(t, ctx, cancel, v, rt)

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

// lazyModel never calls update_report, so every wake ends incomplete (a
// failure, retried after a backoff). Its first call waits for release.
type lazyModel struct {
	entered, release chan struct{}
	calls            chan time.Time
}

func (m lazyModel) Chat(ctx context.Context, _ llm.Request) (llm.Response, error) {
	m.calls <- time.Now()
	select {
	case m.entered <- struct{}{}:
		<-m.release
	default:
	}
	return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "Looks fine to me."}}, nil
}

// The runtime hands a failed wake's retry to the scheduler: a wake asked
// for while a wake fails reaches the model only after the backoff. The
// scheduler's tests pin the exact times, whether or not the request was
// due before the failure (TestSchedulerRequestDuringAFailedWakeWaitsForTheBackoff);
// this one checks runWake's retry time gets there. Timers never fire
// early, so the gap is at least the backoff, however the request and the
// failure interleave.
func TestRequestDuringAFailedWakeWaitsForTheBackoff(t *testing.T) {
	v := querytest.SampleVault(t)
	model := lazyModel{entered: make(chan struct{}, 1), release: make(chan struct{}), calls: make(chan time.Time, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	const backoff = 400 * time.Millisecond
	rt, err := newRuntime(ctx, v, model, Options{BackoffInitial: backoff, BackoffMax: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)
	const task = "Tasks/Ship invoice export.md"
	if _, err := rt.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second) // only to end a hang
	select {
	case <-model.entered:
	case <-deadline:
		t.Fatal("the first wake never reached the model")
	}
	<-model.calls
	// Asked again while the first wake waits in the model.
	if _, err := rt.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	failed := time.Now() // the wake fails after this, so its retry is due a backoff later
	close(model.release)
	select {
	case second := <-model.calls:
		if gap := second.Sub(failed); gap < backoff {
			t.Errorf("the next wake called the model %s after the failure, want the backoff of %s", gap, backoff)
		}
	case <-deadline:
		t.Fatal("no wake after the failed one")
	}
}

// A decision's wake is queued when Wake returns: a client that waits for
// vault/status to show no queued or running wake (the soak test's settle)
// must not see the agents idle while the wake is still on its way.
func TestWakeIsQueuedWhenItReturns(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := newRuntime(ctx, v, blockedModel{entered: make(chan struct{}, 1)}, Options{QuietPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)
	a, err := rt.store.createAgent(ctx, "Tasks/Ship invoice export.md", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		rt.Wake(ctx, a.ID, "decision on a change set")
		if ws := rt.WakeState(a.ID); !ws.Queued {
			t.Fatalf("right after Wake the agent's state is %+v, want queued", ws)
		}
		rt.sched.cancel(a.ID)
	}
}

// Vault changes not yet routed to the agents count in vault/status: a
// client that waits for the agents to be idle waits for them too.
func TestUnroutedChangesCount(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := newRuntime(ctx, v, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	vaultDone := make(chan error, 1)
	go func() { vaultDone <- v.Run(ctx) }() // and not rt.Run: nothing routes the batch
	t.Cleanup(func() {
		cancel()
		<-vaultDone
	})
	if err := v.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	rt.onBatch([]vault.Change{{Path: "Tasks/Ship invoice export.md"}})
	c, err := rt.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Routing != 1 || c.Queued != 0 {
		t.Errorf("counts %+v, want one batch routing and no wake queued yet", c)
	}
}

// runAgents runs v and rt with ctx until the test ends, then cancels ctx
// and waits for both.
func runAgents(t *testing.T, ctx context.Context, cancel context.CancelFunc, v *vault.Vault, rt *Runtime) {
	t.Helper()
	vaultDone, rtDone := make(chan error, 1), make(chan error, 1)
	go func() { vaultDone <- v.Run(ctx) }()
	go func() { rtDone <- rt.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-rtDone
		<-vaultDone
	})
}

// An agent resumed by another process (`margin agents resume` beside a
// running `margin serve`) wakes: the runtime sees the state database
// change and the agent no longer dormant.
func TestAgentResumedByAnotherProcessWakes(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	model := blockedModel{entered: make(chan struct{}, 1)}
	rt, err := newRuntime(ctx, v, model, Options{othersPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rt.store.createAgent(ctx, "Tasks/Ship invoice export.md", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.store.setLifecycle(ctx, a.ID, Dormant, "5 failed wakes in a row"); err != nil {
		t.Fatal(err)
	}
	runAgents(t, ctx, cancel, v, rt)

	other, err := vault.Open(ctx, vault.Options{Dir: v.Options().Dir})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	st, err := OpenStore(ctx, other.DB())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resume(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-model.entered:
	case <-time.After(30 * time.Second): // only to end a hang
		t.Fatal("the agent resumed by another process never woke")
	}
}

// A wake that fails after the person paused or destroyed its agent leaves
// the agent as they left it: paused stays paused (not "failed wakes"), and
// destroyed does not come back as dormant.
func TestFailedWakeKeepsAPauseOrDestroy(t *testing.T) {
	v := querytest.SampleVault(t)
	ctx := context.Background()
	rt, err := newRuntime(ctx, v, nil, Options{DormantAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		task, reason string
		lifecycle    Lifecycle
	}{
		{"Tasks/Ship invoice export.md", reasonPaused, Dormant},
		{"Tasks/Renew passport.md", "", Destroyed},
	} {
		a, err := rt.store.createAgent(ctx, tt.task, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.store.setLifecycle(ctx, a.ID, tt.lifecycle, tt.reason); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.countFailure(ctx, a, "ended without update_report"); err != nil {
			t.Fatal(err)
		}
		got, err := rt.store.Agent(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Lifecycle != tt.lifecycle || got.DormantReason != tt.reason {
			t.Errorf("%s: after the failed wake %s %q, want %s %q", tt.task, got.Lifecycle, got.DormantReason, tt.lifecycle, tt.reason)
		}
	}
}

// newRuntime opens the agents of v as the composition root does: their
// stores in its state database, and the parts of v they are handed.
func newRuntime(ctx context.Context, v *vault.Vault, model llm.Model, opts Options) (*Runtime, error) {
	return newRuntimeWith(ctx, v, nil, model, opts)
}

// newRuntimeWith is newRuntime with the notes related by meaning that the
// composition root hands in when the vault has vectors.
func newRuntimeWith(ctx context.Context, v *vault.Vault, related Related, model llm.Model, opts Options) (*Runtime, error) {
	st, err := OpenStore(ctx, v.DB())
	if err != nil {
		return nil, err
	}
	cs, err := changes.OpenStore(ctx, v.DB())
	if err != nil {
		return nil, err
	}
	o := v.Options()
	tv := Vault{
		Files: v.Root(), Index: v.Index(), Events: v, Rules: v.Rules(), OutputFolder: o.OutputFolder, MaxFileSize: o.MaxFileSize,
		Related: related,
		Lock:    func() (*store.Lock, error) { return store.TryLock(filepath.Join(v.StateDir(), AgentsLock)) },
	}
	return New(ctx, tv, Stores{Agents: st, Changes: cs}, model, opts)
}
