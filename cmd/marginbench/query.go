package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
)

// queryCalls reports model calls and prompt tokens per query type (SPEC
// §9: a simple query ≤ 5 calls, none for retrieval): each scenario of seed
// 003 §17.C is asked of the query engine on a copy of the sample vault, and
// the figures count the requests a scripted fake Ollama server received and
// their prompts (characters / 4, the count the fake reports as
// prompt_eval_count). They are counts, not timings, so one run is exact.
func (b *bench) queryCalls() error {
	fmt.Fprintln(os.Stderr, "measuring model calls per query type")
	return withTB(b.measureQueries)
}

// withTB runs f once with a testing.TB: the fakes are test servers that
// report failures to one, and testing.Benchmark is the standard library's
// way to get one outside `go test`. It calls its function again with
// larger b.N; the figures are taken once.
func withTB(f func(tb testing.TB) error) error {
	var err error
	done := false
	testing.Benchmark(func(tb *testing.B) {
		if !done {
			done = true
			err = f(tb)
		}
	})
	return err
}

func (b *bench) measureQueries(tb testing.TB) error {
	for _, sc := range querytest.Scenarios() {
		fake := llmtest.NewOllama(tb, "qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b")
		fake.Handle(querytest.NewModel(sc.Replies).Reply)
		client, err := llm.New(fake.Config())
		if err != nil {
			return err
		}
		ctx := context.Background()
		v, err := vault.Open(ctx, vault.Options{Dir: editortest.SampleVault(tb)})
		if err != nil {
			return err
		}
		defer v.Close()
		if _, err := v.Scan(ctx, nil); err != nil {
			return err
		}
		st, err := query.OpenStore(ctx, v.DB())
		if err != nil {
			return err
		}
		e := query.New(workspace.QueryVault(v), st, client, query.Options{Now: func() time.Time { return querytest.Now }})
		r, err := e.Ask(ctx, sc.Input, nil)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		reqs := fake.Requests()
		tokens := 0
		for _, req := range reqs {
			chars := 0
			for _, m := range req.Messages {
				chars += len(m.Content)
			}
			tokens += (chars + 3) / 4
		}
		target, pass := "—", ""
		if sc.Name == "simple" {
			target, pass = "≤ 5 calls", check(len(reqs) <= 5)
		}
		b.add(row{
			figure:   fmt.Sprintf("model calls per query: %s (%s)", sc.Name, r.Status),
			target:   target,
			measured: fmt.Sprintf("%d calls, %d prompt tokens, 0 for retrieval", len(reqs), tokens),
			pass:     pass,
		})
	}
	return nil
}
