package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
)

func TestEvolveCommand(t *testing.T) {
	vault := editortest.SampleVault(t)
	fake := llmtest.NewOllama(t, "qwen2.5:14b")
	var n int
	fake.Handle(func(r llmtest.OllamaRequest) llmtest.Reply {
		n++
		return llmtest.Reply{Content: "Sharper rules.", ToolCalls: []llmtest.ToolCall{{Name: "propose_directives", Args: map[string]any{
			"general_directive": "Rule " + strings.Repeat("I", n) + ".",
			"report_directive":  "Done and Next.",
			"rationale":         "Proposals kept being rejected.",
		}}}}
	})
	env := []string{"OLLAMA_HOST=" + fake.URL}

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"approve", []string{"evolve", "task-agent", "--approve"}, 0, "approved: task-agent@2 is active"},
		{"a message, then reject", []string{"evolve", "task-agent", "--message", "Shorter please", "--reject", "not shorter"}, 0, "rejected; task-agent stays as it is"},
		{"neither leaves it open", []string{"evolve", "task-agent"}, 0, "+Rule IIII."},
		{"the improver, once", []string{"evolve", "template-improver", "--approve"}, 0, "template-improver@2 is active"},
		{"the improver, twice", []string{"evolve", "template-improver", "--approve"}, 0, "template-improver@3 is active"},
		{"the improver, a third time in a row", []string{"evolve", "template-improver", "--approve"}, 1, ""},
		{"unknown template", []string{"evolve", "no-such", "--approve"}, 1, ""},
		{"approve and reject", []string{"evolve", "task-agent", "--approve", "--reject", "x"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runMargin(t, env, append(tc.args, "--vault", vault)...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantOut) {
				t.Errorf("margin %v: exit %d (want %d)\n%s\n%s", tc.args, code, tc.wantCode, out, stderr)
			}
			if tc.name == "neither leaves it open" && !strings.Contains(out+stderr, "stays open") {
				t.Errorf("not told the session stays open:\n%s\n%s", out, stderr)
			}
			if tc.wantCode == 1 && tc.args[1] == "template-improver" && !strings.Contains(stderr, "depth 2") {
				t.Errorf("the depth limit is not explained: %s", stderr)
			}
		})
	}

	active, err := os.ReadFile(filepath.Join(vault, "Margin/Templates/task-agent.md"))
	if err != nil || !strings.Contains(string(active), "version: 2\nstatus: active\nauthored_by: evolution") || !strings.Contains(string(active), "Rule I.") {
		t.Errorf("active template:\n%s", active)
	}
	sessions, _ := filepath.Glob(filepath.Join(vault, "Margin/Evolution/*.md"))
	var approved, rejected, open int
	for _, s := range sessions {
		b, _ := os.ReadFile(s)
		switch {
		case strings.Contains(string(b), "status: approved"):
			approved++
		case strings.Contains(string(b), "status: rejected") && strings.Contains(string(b), "not shorter") && strings.Contains(string(b), "**You:** Shorter please"):
			rejected++
		case strings.Contains(string(b), "status: open"):
			open++
		}
	}
	if approved != 3 || rejected != 1 || open != 1 {
		t.Errorf("session files: %d approved, %d rejected, %d open; want 3, 1, 1", approved, rejected, open)
	}

	// --json gives the metrics of the active version and the one before
	// it, next to the all-versions totals.
	out, stderr, code := runMargin(t, env, "evolve", "task-agent", "--json", "--vault", vault)
	var turn struct {
		Metrics struct {
			Wakes    *int
			Versions []struct {
				Version int
				Active  bool
				Wakes   *int
			}
		}
	}
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&turn); code != 0 || err != nil {
		t.Fatalf("margin evolve --json: exit %d, %v\n%s\n%s", code, err, out, stderr)
	}
	if vs := turn.Metrics.Versions; turn.Metrics.Wakes == nil || len(vs) != 2 || vs[0].Version != 2 || !vs[0].Active || vs[0].Wakes == nil ||
		vs[1].Version != 1 || vs[1].Active || vs[1].Wakes == nil {
		t.Errorf("metrics of margin evolve --json = %+v, want the totals, v2 (active) and v1\n%s", turn.Metrics, out)
	}
}
