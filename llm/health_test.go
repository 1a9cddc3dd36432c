package llm_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
)

func TestProbeOllama(t *testing.T) {
	tests := []struct {
		name        string
		pulled      []string
		also        []string // asked for besides the configuration, as by a template
		wantMissing []string
		wantFix     string
	}{
		{"all pulled", []string{"qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b", "nomic-embed-text:latest"}, nil, nil, ""},
		{"two missing", []string{"qwen2.5:7b"}, nil, []string{"qwen2.5:14b", "qwen2.5:3b"}, "ollama pull qwen2.5:14b && ollama pull qwen2.5:3b"},
		{"a template's model missing", []string{"qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b"}, []string{"qwen3:32b", "qwen2.5:7b"},
			[]string{"qwen3:32b"}, "ollama pull qwen3:32b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, tt.pulled...)
			c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
			h := c.Probe(t.Context(), "ollama", tt.also...)
			if !h.Reachable || h.Version != llmtest.OllamaVersion || len(h.Models) != len(tt.pulled) {
				t.Fatalf("health = %+v", h)
			}
			if !slices.Equal(h.Missing, tt.wantMissing) || h.Fix != tt.wantFix {
				t.Fatalf("missing %v, fix %q; want %v, %q", h.Missing, h.Fix, tt.wantMissing, tt.wantFix)
			}
			if (h.Err != nil) != (tt.wantFix != "") || tt.wantFix != "" && !errors.Is(h.Err, llm.ErrModelMissing) {
				t.Fatalf("err = %v", h.Err)
			}
		})
	}
}

func TestProbeOllamaUnreachable(t *testing.T) {
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": closedURL(t)}))
	h := c.Probe(t.Context(), "ollama")
	if h.Reachable || !errors.Is(h.Err, llm.ErrUnreachable) || !strings.Contains(h.Fix, "is `ollama serve` running at http://127.0.0.1:") {
		t.Fatalf("health = %+v", h)
	}
}

func TestProbeOllamaWrongServer(t *testing.T) {
	// An OpenAI-compatible server at the Ollama address answers 404.
	other := llmtest.NewOpenAI(t, openaiModel)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": strings.TrimSuffix(other.URL, "/v1")}))
	h := c.Probe(t.Context(), "ollama")
	if !errors.Is(h.Err, llm.ErrUnreachable) || !strings.Contains(h.Fix, "no ollama API at") {
		t.Fatalf("health = %+v", h)
	}
}

func TestProbeHostedProviders(t *testing.T) {
	oa := llmtest.NewOpenAI(t, "gpt-4o", openaiModel)
	an := llmtest.NewAnthropic(t, claudeModel)
	c := newClient(t, testConfig("openai", "anthropic", map[string]string{"openai": oa.URL, "anthropic": an.URL}))
	for name, want := range map[string][]string{"openai": {"gpt-4o", openaiModel}, "anthropic": {claudeModel}} {
		h := c.Probe(t.Context(), name)
		if !h.Reachable || h.Err != nil || !slices.Equal(h.Models, want) {
			t.Errorf("%s: health = %+v", name, h)
		}
	}
	if h := c.Probe(t.Context(), "gemini"); h.Err == nil {
		t.Error("probing an unconfigured provider succeeded")
	}
}

// Ready is the probe of a caller waiting for the model: it says the model
// is away while nothing listens or the model is not pulled, and ready once
// the server is back with the model, without a chat request.
func TestReadyFollowsTheServer(t *testing.T) {
	fake := llmtest.NewOllama(t)
	c := newClient(t, testConfig("ollama", "", map[string]string{"ollama": fake.URL}))
	req := userAsks("hi")
	if err := c.Ready(t.Context(), req); !llm.Away(err) || !errors.Is(err, llm.ErrModelMissing) || !strings.Contains(llm.Fix(err), "ollama pull "+ollamaModel) {
		t.Fatalf("model not pulled: Ready = %v, want away because the model is missing", err)
	}
	fake.Pull(ollamaModel)
	fake.Stop()
	if err := c.Ready(t.Context(), req); !llm.Away(err) || !errors.Is(err, llm.ErrUnreachable) {
		t.Fatalf("server stopped: Ready = %v, want away because unreachable", err)
	}
	fake.Start()
	if err := c.Ready(t.Context(), req); err != nil {
		t.Fatalf("server back: Ready = %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d chat requests, want none: the probe is not a model call", n)
	}
	if err := c.Ready(t.Context(), llm.Request{Role: "nobody"}); err == nil || llm.Away(err) {
		t.Errorf("unknown role: Ready = %v, want a configuration error, not away", err)
	}
}

// Away tells a model that is away (nothing listens, not pulled) from one
// that answered badly.
func TestAway(t *testing.T) {
	unreachable := &llm.CallError{Class: llm.ErrUnreachable, Provider: "ollama"}
	missing := &llm.CallError{Class: llm.ErrModelMissing, Provider: "ollama"}
	server := &llm.CallError{Class: llm.ErrServer, Provider: "openai"}
	timeout := &llm.CallError{Class: llm.ErrTimeout, Provider: "ollama"}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"unreachable", &llm.UnavailableError{Role: role, Reasons: []error{unreachable}}, true},
		{"not pulled", &llm.UnavailableError{Role: role, Reasons: []error{missing}}, true},
		{"both providers away", &llm.UnavailableError{Role: role, Reasons: []error{unreachable, missing}}, true},
		{"the fallback failed on its side", &llm.UnavailableError{Role: role, Reasons: []error{unreachable, server}}, false},
		{"timeout", &llm.UnavailableError{Role: role, Reasons: []error{timeout}}, false},
		{"a bare call error", unreachable, false},
		{"parse", &llm.ParseError{Role: role, Err: errors.New("bad")}, false},
		{"nil", nil, false},
	} {
		if got := llm.Away(tt.err); got != tt.want {
			t.Errorf("%s: Away = %v, want %v", tt.name, got, tt.want)
		}
	}
}
