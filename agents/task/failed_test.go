package task

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm/llmtest"
)

// A wake whose model publishes nothing usable (garbage, a reply cut
// mid-JSON) never blanks the report: the last good one stands, its
// frontmatter names the failed run and why, and the next good wake's
// report drops the mark.
func TestFailedWakeKeepsTheLastGoodReportAndSaysSo(t *testing.T) {
	// Each wake at its own minute, so each forced wake has its own run key.
	var minutes atomic.Int64
	c := newChaosRig(t, hangTimeout, func(o *Options) {
		o.Now = func() time.Time { return querytest.Now.Add(time.Duration(minutes.Load()) * time.Minute) }
	})
	wake := func() Run { minutes.Add(1); return c.wake(t) }
	var reply atomic.Value
	c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return reply.Load().(llmtest.Reply) })
	good := llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
	reply.Store(good)
	wake()
	first, err := c.report(t)
	if err != nil || first.FailedRun != 0 {
		t.Fatalf("first report %+v, %v", first, err)
	}
	for _, tc := range []struct {
		name   string
		reply  llmtest.Reply
		status string
	}{
		{"garbage", llmtest.Reply{Content: "Sure! Here is the report: it's all fine."}, RunIncomplete},
		{"cut mid-JSON", llmtest.Reply{Content: "Let me", Chunks: 3, CutAfter: 2, ToolCalls: []llmtest.ToolCall{goodReport}}, RunFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply.Store(tc.reply)
			run := wake()
			if run.Status != tc.status {
				t.Errorf("run %s (%s), want %s", run.Status, run.Detail, tc.status)
			}
			r, err := c.report(t)
			if err != nil {
				t.Fatal(err)
			}
			if r.Content != first.Content || r.TLDR != first.TLDR || r.GeneratedBy != first.GeneratedBy {
				t.Errorf("the last good report changed:\n%+v\nwant\n%+v", r, first)
			}
			if r.FailedRun != run.ID || !strings.Contains(r.FailedWhy, tc.status) {
				t.Errorf("report says failed run %d (%q), want run %d %s", r.FailedRun, r.FailedWhy, run.ID, tc.status)
			}
		})
	}
	reply.Store(good)
	wake()
	if r, err := c.report(t); err != nil || r.FailedRun != 0 || r.FailedWhy != "" {
		t.Errorf("a good wake's report still says a run failed: %+v, %v", r, err)
	}
}
