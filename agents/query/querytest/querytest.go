// Package querytest scripts a fake model for the query flow: it tells which
// agent is asking from the request's system prompt and answers with that
// role's next scripted reply, so a test (or the benchmark) states what each
// agent says without caring about call order. It also holds the scenarios of
// seed 003 §17.C written against the sample vault (testdata/vault), shared by
// the unit tests, the end-to-end tests and cmd/marginbench.
//
// It is test support: nothing in the margin binary may import it.
package querytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
)

// roleMarkers are the opening words of each agent's system prompt.
var roleMarkers = []struct{ marker, role string }{
	{"You are the router", "router"},
	{"You are the query strategist", "planner"},
	{"You are the analyst", "analyzer"},
	{"You write the answer", "synthesizer"},
	{"You are the quality check", "evaluator"},
	{"You ask the user for information", "clarifier"},
	{"You extract structured data", "parser"},
	{"You maintain the user's global context", "observer"},
}

// RoleOf names the agent that sent req, or "" for none of them.
func RoleOf(req llmtest.OllamaRequest) string {
	return RoleOfSystem(System(req))
}

// RoleOfSystem names the agent whose system prompt this is.
func RoleOfSystem(system string) string {
	for _, m := range roleMarkers {
		if strings.Contains(system, m.marker) {
			return m.role
		}
	}
	return ""
}

// System is the request's system prompt.
func System(req llmtest.OllamaRequest) string {
	for _, m := range req.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// User is the request's first user message: what the agent was given.
func User(req llmtest.OllamaRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// Replies maps a role to its replies in order; the last one repeats. A
// reply is a value marshalled as the JSON answer, a string sent verbatim
// (for malformed output), or a func(llmtest.OllamaRequest) any.
type Replies map[string][]any

// Model answers chat requests by role.
type Model struct {
	mu      sync.Mutex // guards the fields below
	replies Replies
	calls   map[string]int
}

// NewModel returns a model scripted with replies.
func NewModel(replies Replies) *Model {
	return &Model{replies: replies, calls: map[string]int{}}
}

// Set replaces the script, for a test that moves to its next scenario.
func (m *Model) Set(replies Replies) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.replies, m.calls = replies, map[string]int{}
}

// Reply is an llmtest handler: Ollama.Handle(model.Reply).
func (m *Model) Reply(req llmtest.OllamaRequest) llmtest.Reply {
	role := RoleOf(req)
	m.mu.Lock()
	list := m.replies[role]
	i := m.calls[role]
	m.calls[role]++
	m.mu.Unlock()
	if len(list) == 0 {
		return llmtest.Reply{Status: 500, Error: fmt.Sprintf("querytest: no reply scripted for role %q", role)}
	}
	v := list[min(i, len(list)-1)]
	if f, ok := v.(func(llmtest.OllamaRequest) any); ok {
		v = f(req)
	}
	if s, ok := v.(string); ok {
		return llmtest.Reply{Content: s}
	}
	return llmtest.Reply{JSON: v}
}

// Calls counts the requests each role made.
func (m *Model) Calls() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.calls))
	for k, v := range m.calls {
		out[k] = v
	}
	return out
}

// Now is "now" in the sample vault's world: Sunday 2026-11-22, 09:00.
var Now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.Local)

// NowFlag is Now as margin's hidden --now flag takes it.
const NowFlag = "2026-11-22T09:00"

// SampleVault copies testdata/vault into a temporary directory and indexes
// it; it is closed when the test ends.
func SampleVault(t testing.TB) *vault.Vault {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "vault")
	dir := filepath.Join(t.TempDir(), "vault")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return IndexedVault(t, dir)
}

// IndexedVault opens the vault at dir and indexes it; it is closed when
// the test ends.
func IndexedVault(t testing.TB, dir string) *vault.Vault {
	t.Helper()
	v, err := vault.Open(context.Background(), vault.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if _, err := v.Scan(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return v
}
