package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
)

// taskNoteRE finds the task a wake's prompt is about.
var taskNoteRE = regexp.MustCompile(`task note ([^\]\n]+\.md)`)

// economyModel is the scripted model of the economy figures: it reports
// at once, and counts the calls, their prompt tokens (estimated, ≈ chars/4)
// and the task of each, in order.
type economyModel struct {
	mu     sync.Mutex
	calls  int
	tokens int
	tasks  []string
}

func (m *economyModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	est := llm.EstimateTokens(req)
	task := "?"
	for _, msg := range req.Messages {
		if mm := taskNoteRE.FindStringSubmatch(msg.Content); mm != nil {
			task = mm[1]
			break
		}
	}
	m.mu.Lock()
	m.calls++
	m.tokens += est
	m.tasks = append(m.tasks, task)
	m.mu.Unlock()
	return llm.Response{Model: "bench", Usage: llm.Usage{PromptTokens: est, CompletionTokens: 60},
		Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{
			ID: "1", Name: "update_report", Args: []byte(`{"tldr":"On track; two items left.","content":"## State\n- on track\n\n## What is left to do\n- [ ] the last two items\n"}`),
		}}}}, nil
}

// spent is the calls and prompt tokens so far.
func (m *economyModel) spent() (calls, tokens int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.tokens
}

// agentEconomy measures what the task agents cost on a generated vault
// with the scripted model (SPEC §4.1 "Economy", §9): the model calls and
// prompt tokens of a first start (no call for done tasks, at most 2 per
// open one), of a one-line edit of a task, and of a no-op save (none);
// and the order of the first 20 wakes.
func (b *bench) agentEconomy(src string, n int) error {
	fmt.Fprintf(os.Stderr, "measuring the task agents' economy on %d notes\n", n)
	label := func(s string) string { return fmt.Sprintf("%s, %dk notes", s, n/1000) }
	dir, err := os.MkdirTemp("", "marginbench-economy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(dir, ".margin")); err != nil {
		return err
	}
	ctx := context.Background()
	const quiet = 300 * time.Millisecond
	model := &economyModel{}
	v, rt, stop, err := runAgents(ctx, vault.Options{Dir: dir, Debounce: 50 * time.Millisecond}, model,
		task.Options{AutoCreate: true, QuietPeriod: quiet, MaxWait: 10 * quiet})
	if err != nil {
		return err
	}
	defer stop()
	tasks, err := v.Index().Tasks(ctx)
	if err != nil {
		return err
	}
	open, done := 0, 0
	var edit string // an open task to edit
	settledTask := map[string]bool{}
	for _, t := range tasks {
		if t.Status == "done" || t.Status == "cancelled" {
			done++
			settledTask[t.Path] = true
			continue
		}
		open++
		if edit == "" {
			edit = t.Path
		}
	}

	// settled waits until every agent has completed wakes wakes in all
	// and none is queued or running.
	settled := func(wakes int) error {
		idle := 0
		for deadline := time.Now().Add(10 * time.Minute); idle < 5; time.Sleep(20 * time.Millisecond) {
			agents, err := rt.Store().Agents(ctx, "")
			if err != nil {
				return err
			}
			total := 0
			for _, a := range agents {
				total += a.Wakes
			}
			c, err := rt.Counts(ctx)
			if err != nil {
				return err
			}
			if total >= wakes && c.Queued == 0 && c.Running == 0 {
				idle++
			} else {
				idle = 0
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the agents did not settle: %d of %d wakes, %+v", total, wakes, c)
			}
		}
		return nil
	}
	start := time.Now()
	if err := settled(len(tasks)); err != nil {
		return err
	}
	took := time.Since(start)
	calls, tokens := model.spent()
	model.mu.Lock()
	doneCalls := 0
	for _, p := range model.tasks {
		if settledTask[p] {
			doneCalls++
		}
	}
	model.mu.Unlock()
	b.add(row{figure: label(fmt.Sprintf("first start: model calls, %d tasks (%d open, %d done or cancelled)", len(tasks), open, done)),
		target: "no call for done tasks, ≤ 2 per open task", measured: fmt.Sprintf("%d calls (%d for done tasks), %d prompt tokens (≈ %.2f M chars), in %s", calls, doneCalls, tokens, float64(4*tokens)/1e6, round(took)),
		baseline: "issue #20 before: 300 calls, ≈ 2.6 M prompt chars (150 tasks, 29 done)",
		ratio:    fmt.Sprintf("%.2f calls per open task", float64(calls)/float64(max(open, 1))), pass: check(doneCalls == 0 && calls <= 2*open)})

	model.mu.Lock()
	first := model.tasks[:min(20, len(model.tasks))]
	model.mu.Unlock()
	byPath := map[string]string{}
	for _, t := range tasks {
		byPath[t.Path] = fmt.Sprintf("%s due %s", t.Status, orNone(t.Due))
	}
	var order []string
	for i, p := range first {
		order = append(order, fmt.Sprintf("%d. %s (%s)", i+1, strings.TrimSuffix(filepath.Base(p), ".md"), byPath[p]))
	}
	// Two wakes run at once (one gathers while the other talks to the
	// model), so neighbours in the line may reach the model swapped.
	fmt.Fprintf(os.Stderr, "  first %d wakes that called the model, in order:\n    %s\n", len(first), strings.Join(order, "\n    "))
	b.add(row{figure: label("first start: order of the first wakes (status, due)"), target: "nearest due first, in-progress before open",
		measured: strings.Join(shortOrder(first, byPath, 6), "; ") + " …", pass: "see stderr"})

	// A one-line edit of an open task: one wake.
	before, beforeTokens := model.spent()
	agents, err := rt.Store().Agents(ctx, "")
	if err != nil {
		return err
	}
	total := 0
	for _, a := range agents {
		total += a.Wakes
	}
	p := filepath.Join(dir, edit)
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, append(data, []byte("\nOne more line about this task.\n")...), 0o644); err != nil {
		return err
	}
	if err := settled(total + 1); err != nil {
		return err
	}
	after, afterTokens := model.spent()
	b.add(row{figure: label("one-line edit of an open task: model calls"), target: "≤ 2", measured: fmt.Sprintf("%d calls, %d prompt tokens", after-before, afterTokens-beforeTokens),
		pass: check(after-before <= 2 && after > before)})

	// A no-op save: the same bytes again.
	data, err = os.ReadFile(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return err
	}
	time.Sleep(2 * (quiet + 200*time.Millisecond)) // debounce + quiet period, twice: a wake would have started
	if err := settled(0); err != nil {
		return err
	}
	final, finalTokens := model.spent()
	b.add(row{figure: label("no-op save of a task: model calls"), target: "0", measured: fmt.Sprintf("%d calls, %d prompt tokens", final-after, finalTokens-afterTokens),
		pass: check(final == after)})
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// shortOrder is the first k tasks of order with their status and due date.
func shortOrder(order []string, byPath map[string]string, k int) []string {
	var out []string
	for _, p := range order[:min(k, len(order))] {
		out = append(out, byPath[p])
	}
	return out
}
