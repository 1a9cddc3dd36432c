package task

import (
	"context"
	"strings"
	"testing"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault/vaulttest"
)

// withTemplateKeys adds frontmatter lines to a template's active file by
// hand, as a person would; the next Active picks them up as a new version.
func withTemplateKeys(t *testing.T, l *templates.Templates, dir, name, lines string) {
	t.Helper()
	if _, err := l.Active(context.Background(), name); err != nil { // seeds a built-in
		t.Fatal(err)
	}
	p := "Margin/Templates/" + name + ".md"
	src := vaulttest.Read(t, dir, p)
	edited := strings.Replace(src, "\nmargin: template\n", "\nmargin: template\n"+lines, 1)
	if edited == src {
		t.Fatalf("%s has no margin: template line:\n%s", p, src)
	}
	vaulttest.Write(t, dir, p, edited)
}

// The task template's tier and model choose the model a wake asks for;
// without them the task role's configured model (tier medium) is used.
func TestWakeUsesTemplateTierAndModel(t *testing.T) {
	tests := []struct {
		name  string
		keys  string // frontmatter lines added to the template
		model string // the model the fake server must be asked for
	}{
		{name: "as configured", model: "qwen2.5:7b"},
		{name: "model", keys: "model: some-model\n", model: "some-model"},
		{name: "tier high", keys: "tier: high\n", model: "qwen2.5:14b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChaosRig(t, hangTimeout)
			c.fake.Pull(tt.model)
			c.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{goodReport}}
			})
			if tt.keys != "" {
				withTemplateKeys(t, c.rt.templates, c.v.Dir(), templates.TaskAgent, tt.keys)
			}

			if run := c.wake(t); run.Status != string(RunCompleted) {
				t.Fatalf("wake %s (%s), want completed", run.Status, run.Detail)
			}
			reqs := c.fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			if want := `"model":"` + tt.model + `"`; !strings.Contains(string(reqs[0].Raw), want) {
				t.Errorf("the request does not carry %s: %.200s", want, reqs[0].Raw)
			}
			if r, err := c.report(t); err != nil || r.GeneratedBy != tt.model {
				t.Errorf("report generated_by %q (%v), want %q", r.GeneratedBy, err, tt.model)
			}
		})
	}
}
