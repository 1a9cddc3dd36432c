package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// isolate keeps the developer's own config and environment out of a test.
func isolate(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("OLLAMA_HOST", "")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "MARGIN_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// TestConfigYAMLIsTheDefault keeps the documented config.yaml and the
// built-in defaults the same: loading the file on its own must give exactly
// defaultConfig().
func TestConfigYAMLIsTheDefault(t *testing.T) {
	isolate(t)
	v := viper.New()
	v.SetConfigFile("../../config.yaml")
	if err := v.ReadInConfig(); err != nil {
		t.Fatal(err)
	}
	var fromFile Config
	if err := v.Unmarshal(&fromFile, decoderOptions); err != nil {
		t.Fatal(err)
	}
	if want := defaultConfig(); !reflect.DeepEqual(fromFile, want) {
		t.Errorf("config.yaml differs from defaultConfig():\n file: %+v\n code: %+v", fromFile, want)
	}
}

func TestLoadConfigDefaultsAndOverrides(t *testing.T) {
	isolate(t)
	cfg, err := loadConfig("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, defaultConfig()) {
		t.Errorf("no file, no env: got %+v, want the defaults", cfg)
	}

	file := filepath.Join(t.TempDir(), "margin.yaml")
	os.WriteFile(file, []byte("watch:\n  debounce: 300ms\nagents:\n  max_turns: 7\nllm:\n  providers:\n    anthropic:\n      api_key: ${TEST_MARGIN_KEY}\n"), 0o644)
	t.Setenv("TEST_MARGIN_KEY", "sk-secret")
	t.Setenv("MARGIN_AGENTS_MAX_TURNS", "9")
	t.Setenv("MARGIN_VAULT_DAILY_FOLDER", "Journal")
	t.Setenv("MARGIN_AGENTS_DAILY_TOKEN_BUDGET", "50000")
	t.Setenv("MARGIN_SERVER_MEMORY_LIMIT", "0")

	flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.String("vault", "", "")
	flags.Parse([]string{"--vault", "/tmp/notes"})

	cfg, err = loadConfig(file, flags)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key       string
		got, want any
	}{
		{"watch.debounce from file", cfg.Watch.Debounce, 300 * time.Millisecond},
		{"agents.max_turns: env beats file", cfg.Agents.MaxTurns, 9},
		{"vault.daily_folder from env", cfg.Vault.DailyFolder, "Journal"},
		{"vault.path from flag", cfg.Vault.Path, "/tmp/notes"},
		{"${VAR} expanded", cfg.LLM.Providers["anthropic"].APIKey, "sk-secret"},
		{"untouched default", cfg.Agents.QuietPeriod, 2 * time.Second},
		{"agents.daily_token_budget reaches the agents", cfg.agentsOptions().DailyTokenBudget, 50000},
		{"server.memory_limit turned off from env", cfg.Server.MemoryLimit, int64(0)},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.key, c.got, c.want)
		}
	}
}

func TestOllamaHostHonouredWhenConfigIsSilent(t *testing.T) {
	isolate(t)
	t.Setenv("OLLAMA_HOST", "127.0.0.1:9999")
	cfg, err := loadConfig("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LLM.Providers["ollama"].APIBase; got != "127.0.0.1:9999" {
		t.Errorf("ollama api_base = %q, want OLLAMA_HOST", got)
	}

	file := filepath.Join(t.TempDir(), "margin.yaml")
	os.WriteFile(file, []byte("llm:\n  providers:\n    ollama:\n      api_base: http://gpu-box:11434\n"), 0o644)
	cfg, err = loadConfig(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LLM.Providers["ollama"].APIBase; got != "http://gpu-box:11434" {
		t.Errorf("ollama api_base = %q, want the configured one over OLLAMA_HOST", got)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, key string
	}{
		{"negative turns", "agents:\n  max_turns: -1\n", "agents.max_turns"},
		{"bad duration", "watch:\n  debounce: soon\n", "debounce"},
		{"unknown key", "vault:\n  daily_folderz: X\n", "daily_folderz"},
		{"output outside vault", "vault:\n  output_folder: ../elsewhere\n", "vault.output_folder"},
		{"bad style", "query:\n  response_style: verbose\n", "query.response_style"},
		{"bad level", "log:\n  level: loud\n", "log.level"},
		{"max wait below quiet period", "agents:\n  quiet_period: 10s\n  max_wait: 1s\n", "agents.max_wait"},
		{"unknown provider", "llm:\n  default_provider: nowhere\n", "llm.default_provider"},
		{"tiny message cap", "server:\n  max_message_size: 10\n", "server.max_message_size"},
		{"memory limit below any heap", "server:\n  memory_limit: 1048576\n", "server.memory_limit"},
		{"no query deadline", "query:\n  deadline: 0s\n", "query.deadline"},
		{"negative wake deadline", "agents:\n  wake_deadline: -1m\n", "agents.wake_deadline"},
		{"negative token budget", "agents:\n  daily_token_budget: -5\n", "agents.daily_token_budget"},
		{"unknown locale", "vault:\n  locale: tlh\n", "vault.locale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			file := filepath.Join(t.TempDir(), "margin.yaml")
			os.WriteFile(file, []byte(tc.yaml), 0o644)
			_, err := loadConfig(file, nil)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error = %v, want one naming %s", err, tc.key)
			}
		})
	}
}

// Every `margin …` command config.yaml and the README point a person to
// exists: config.yaml once sent people to `margin agents create`.
func TestDocsNameOnlyRealCommands(t *testing.T) {
	mention := regexp.MustCompile("`margin ((?:[a-z]+)(?: [a-z]+)*)")
	root := newRootCommand()
	for _, file := range []string{"../../config.yaml", "../../README.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mention.FindAllStringSubmatch(string(b), -1) {
			words := strings.Fields(m[1])
			cmd, rest, err := root.Find(words)
			if err != nil || len(rest) > 0 || cmd == root {
				t.Errorf("%s names `margin %s`, which is not a command (found %q, left %q)", file, m[1], cmd.CommandPath(), rest)
			}
		}
	}
}
