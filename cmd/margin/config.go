package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

// Config is margin's whole configuration, read once at startup. config.yaml
// at the repository root documents every key with the defaults below; a test
// keeps the two in step.
type Config struct {
	Vault   VaultConfig   `mapstructure:"vault"`
	Watch   WatchConfig   `mapstructure:"watch"`
	Agents  AgentsConfig  `mapstructure:"agents"`
	LLM     llm.Config    `mapstructure:"llm"`
	Query   QueryConfig   `mapstructure:"query"`
	Context ContextConfig `mapstructure:"context"`
	History HistoryConfig `mapstructure:"history"`
	Server  ServerConfig  `mapstructure:"server"`
	Log     LogConfig     `mapstructure:"log"`
}

type VaultConfig struct {
	Path         string   `mapstructure:"path"`
	DailyFolder  string   `mapstructure:"daily_folder"`
	DailyFormat  string   `mapstructure:"daily_format"`
	Locale       string   `mapstructure:"locale"`
	TaskFolders  []string `mapstructure:"task_folders"`
	Ignore       []string `mapstructure:"ignore"`
	RespectGit   bool     `mapstructure:"respect_gitignore"`
	OutputFolder string   `mapstructure:"output_folder"`
	StateDir     string   `mapstructure:"state_dir"`
	MaxFileSize  int64    `mapstructure:"max_file_size"`
}

type WatchConfig struct {
	Debounce time.Duration `mapstructure:"debounce"`
}

type AgentsConfig struct {
	AutoCreate    bool            `mapstructure:"auto_create"`
	QuietPeriod   time.Duration   `mapstructure:"quiet_period"`
	MaxWait       time.Duration   `mapstructure:"max_wait"`
	MaxTurns      int             `mapstructure:"max_turns"`
	Concurrency   int             `mapstructure:"concurrency"`
	ContextTokens int             `mapstructure:"context_tokens"`
	Backoff       BackoffConfig   `mapstructure:"backoff"`
	DormantAfter  int             `mapstructure:"dormant_after"`
	ChangeSet     ChangeSetConfig `mapstructure:"changeset"`
	WakeDeadline  time.Duration   `mapstructure:"wake_deadline"`
	// DailyTokenBudget caps the model tokens of wakes per day; 0: none.
	DailyTokenBudget int `mapstructure:"daily_token_budget"`
	// DailyEmbedTokenBudget caps the tokens embedded per day; 0: none.
	DailyEmbedTokenBudget int `mapstructure:"daily_embed_token_budget"`
}

type BackoffConfig struct {
	Initial time.Duration `mapstructure:"initial"`
	Max     time.Duration `mapstructure:"max"`
}

type ChangeSetConfig struct {
	MaxItems    int           `mapstructure:"max_items"`
	ExpireAfter time.Duration `mapstructure:"expire_after"`
}

type QueryConfig struct {
	MaxEntries    int           `mapstructure:"max_entries"`
	ResponseStyle string        `mapstructure:"response_style"`
	SessionTTL    time.Duration `mapstructure:"session_ttl"`
	Deadline      time.Duration `mapstructure:"deadline"`
}

type ContextConfig struct {
	MaxTokens int `mapstructure:"max_tokens"`
}

type HistoryConfig struct {
	Keep time.Duration `mapstructure:"keep"`
}

type ServerConfig struct {
	MaxMessageSize int64 `mapstructure:"max_message_size"`
	MemoryLimit    int64 `mapstructure:"memory_limit"`
}

type LogConfig struct {
	Level string `mapstructure:"level"`
}

func defaultConfig() Config {
	return Config{
		Vault: VaultConfig{
			DailyFolder:  "Daily",
			DailyFormat:  "YYYY-MM-DD",
			TaskFolders:  []string{"Tasks"},
			Ignore:       []string{},
			RespectGit:   true,
			OutputFolder: "Margin",
			StateDir:     ".margin",
			MaxFileSize:  5 << 20,
		},
		Watch: WatchConfig{Debounce: 150 * time.Millisecond},
		Agents: AgentsConfig{
			AutoCreate:    true,
			QuietPeriod:   2 * time.Second,
			MaxWait:       30 * time.Second,
			MaxTurns:      5,
			Concurrency:   1,
			ContextTokens: 8192,
			Backoff:       BackoffConfig{Initial: 30 * time.Second, Max: time.Hour},
			DormantAfter:  5,
			ChangeSet:     ChangeSetConfig{MaxItems: 10, ExpireAfter: 7 * 24 * time.Hour},
			WakeDeadline:  5 * time.Minute,
		},
		LLM:     llmDefaults(),
		Query:   QueryConfig{MaxEntries: 200, ResponseStyle: "concise", SessionTTL: 24 * time.Hour, Deadline: 2 * time.Minute},
		Context: ContextConfig{MaxTokens: 2000},
		History: HistoryConfig{Keep: 90 * 24 * time.Hour},
		Server:  ServerConfig{MaxMessageSize: 64 << 20, MemoryLimit: 96 << 20},
		Log:     LogConfig{Level: "info"},
	}
}

// llmDefaults is llm.DefaultConfig as config.yaml writes it: the Ollama
// address is left empty so OLLAMA_HOST can fill it, and provider kinds
// follow from their names.
func llmDefaults() llm.Config {
	c := llm.DefaultConfig()
	for name, p := range c.Providers {
		p.Kind = ""
		if name == llm.KindOllama {
			p.APIBase = ""
		}
		c.Providers[name] = p
	}
	return c
}

// loadConfig reads defaults, then the config file, then MARGIN_* variables,
// then flags, and validates the result. file may be empty.
func loadConfig(file string, flags *pflag.FlagSet) (Config, error) {
	v := viper.New()
	setDefaults(v, "", reflect.ValueOf(defaultConfig()))

	if file == "" {
		if dir, err := os.UserConfigDir(); err == nil {
			if p := filepath.Join(dir, "margin", "config.yaml"); fileExists(p) {
				file = p
			}
		}
	}
	if file != "" {
		v.SetConfigFile(file)
		if err := v.ReadInConfig(); err != nil {
			return Config{}, fmt.Errorf("reading config %s: %w", file, err)
		}
	}

	v.SetEnvPrefix("MARGIN")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()

	if flags != nil {
		if f := flags.Lookup("vault"); f != nil {
			if err := v.BindPFlag("vault.path", f); err != nil {
				return Config{}, err
			}
		}
	}

	var cfg Config
	if err := v.Unmarshal(&cfg, decoderOptions); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	// OLLAMA_HOST is Ollama's own variable; honour it unless margin's
	// config names the server.
	if p, ok := cfg.LLM.Providers[llm.KindOllama]; ok && p.APIBase == "" {
		if host := os.Getenv("OLLAMA_HOST"); host != "" {
			p.APIBase = host
			cfg.LLM.Providers[llm.KindOllama] = p
		}
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// decoderOptions make unknown keys an error (a typo must not be silently
// ignored), parse durations and lists, and expand ${VAR}.
func decoderOptions(dc *mapstructure.DecoderConfig) {
	dc.ErrorUnused = true
	dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
		expandEnvHook(),
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
	)
}

// setDefaults registers every leaf of the default config with viper, so
// MARGIN_* variables reach every key (viper only sees variables for keys it
// knows).
func setDefaults(v *viper.Viper, prefix string, rv reflect.Value) {
	if rv.Kind() == reflect.Struct && rv.Type() != reflect.TypeFor[time.Duration]() {
		for i := 0; i < rv.NumField(); i++ {
			tag := rv.Type().Field(i).Tag.Get("mapstructure")
			name, _, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" {
				continue
			}
			setDefaults(v, joinKey(prefix, name), rv.Field(i))
		}
		return
	}
	if rv.Kind() == reflect.Map {
		for _, k := range rv.MapKeys() {
			setDefaults(v, joinKey(prefix, fmt.Sprint(k.Interface())), rv.MapIndex(k))
		}
		return
	}
	v.SetDefault(prefix, rv.Interface())
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// expandEnvHook expands ${VAR} in strings, so secrets stay in the environment.
func expandEnvHook() mapstructure.DecodeHookFuncKind {
	return func(from, to reflect.Kind, data any) (any, error) {
		if from != reflect.String || to != reflect.String {
			return data, nil
		}
		return os.Expand(data.(string), func(name string) string { return os.Getenv(name) }), nil
	}
}

func (c Config) validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Vault.MaxFileSize <= 0 {
		bad("vault.max_file_size", "must be positive, got %d", c.Vault.MaxFileSize)
	}
	if c.Vault.DailyFormat == "" {
		bad("vault.daily_format", "must not be empty")
	}
	if _, ok := note.LookupLocale(c.Vault.Locale); !ok {
		bad("vault.locale", "must be empty (inferred) or one of %s, got %q", strings.Join(note.LocaleNames(), ", "), c.Vault.Locale)
	}
	if c.Vault.OutputFolder == "" || filepath.IsAbs(c.Vault.OutputFolder) || strings.HasPrefix(filepath.Clean(c.Vault.OutputFolder), "..") {
		bad("vault.output_folder", "must be a folder inside the vault, got %q", c.Vault.OutputFolder)
	}
	if c.Vault.StateDir == "" || filepath.IsAbs(c.Vault.StateDir) || strings.HasPrefix(filepath.Clean(c.Vault.StateDir), "..") {
		bad("vault.state_dir", "must be a folder inside the vault, got %q", c.Vault.StateDir)
	}
	if c.Watch.Debounce < 0 || c.Watch.Debounce > time.Minute {
		bad("watch.debounce", "must be between 0 and 1m, got %s", c.Watch.Debounce)
	}
	positive := map[string]int{
		"agents.max_turns":           c.Agents.MaxTurns,
		"agents.concurrency":         c.Agents.Concurrency,
		"agents.context_tokens":      c.Agents.ContextTokens,
		"agents.dormant_after":       c.Agents.DormantAfter,
		"agents.changeset.max_items": c.Agents.ChangeSet.MaxItems,
		"query.max_entries":          c.Query.MaxEntries,
		"context.max_tokens":         c.Context.MaxTokens,
	}
	for _, key := range sortedKeys(positive) {
		if positive[key] <= 0 {
			bad(key, "must be positive, got %d", positive[key])
		}
	}
	if c.Agents.QuietPeriod < 0 || c.Agents.MaxWait < c.Agents.QuietPeriod {
		bad("agents.max_wait", "must be at least agents.quiet_period (%s), got %s", c.Agents.QuietPeriod, c.Agents.MaxWait)
	}
	if c.Agents.Backoff.Initial <= 0 || c.Agents.Backoff.Max < c.Agents.Backoff.Initial {
		bad("agents.backoff", "initial must be positive and max at least initial, got %s and %s", c.Agents.Backoff.Initial, c.Agents.Backoff.Max)
	}
	if c.Agents.ChangeSet.ExpireAfter <= 0 {
		bad("agents.changeset.expire_after", "must be positive, got %s", c.Agents.ChangeSet.ExpireAfter)
	}
	if s := c.Query.ResponseStyle; s != "concise" && s != "detailed" {
		bad("query.response_style", "must be concise or detailed, got %q", s)
	}
	if c.Query.SessionTTL <= 0 {
		bad("query.session_ttl", "must be positive, got %s", c.Query.SessionTTL)
	}
	if c.Query.Deadline <= 0 {
		bad("query.deadline", "must be positive, got %s", c.Query.Deadline)
	}
	if c.Agents.DailyTokenBudget < 0 {
		bad("agents.daily_token_budget", "must be 0 (no limit) or positive, got %d", c.Agents.DailyTokenBudget)
	}
	if c.Agents.DailyEmbedTokenBudget < 0 {
		bad("agents.daily_embed_token_budget", "must be 0 (no limit) or positive, got %d", c.Agents.DailyEmbedTokenBudget)
	}
	if c.Agents.WakeDeadline <= 0 {
		bad("agents.wake_deadline", "must be positive, got %s", c.Agents.WakeDeadline)
	}
	if c.History.Keep <= 0 {
		bad("history.keep", "must be positive, got %s", c.History.Keep)
	}
	if c.Server.MaxMessageSize < 1<<10 {
		bad("server.max_message_size", "must be at least 1024 bytes, got %d", c.Server.MaxMessageSize)
	}
	if c.Server.MemoryLimit != 0 && c.Server.MemoryLimit < minMemoryLimit {
		bad("server.memory_limit", "must be 0 (none) or at least %d bytes, got %d", minMemoryLimit, c.Server.MemoryLimit)
	}
	if _, err := parseLevel(c.Log.Level); err != nil {
		bad("log.level", "%v", err)
	}
	if err := c.LLM.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// vaultOptions turns the config into the vault's typed options.
func (c Config) vaultOptions() vault.Options {
	return vault.Options{
		Dir:          c.Vault.Path,
		DailyFolder:  c.Vault.DailyFolder,
		DailyFormat:  c.Vault.DailyFormat,
		Locale:       c.Vault.Locale,
		TaskFolders:  c.Vault.TaskFolders,
		Ignore:       c.Vault.Ignore,
		NoGitignore:  !c.Vault.RespectGit,
		OutputFolder: c.Vault.OutputFolder,
		StateDir:     c.Vault.StateDir,
		MaxFileSize:  c.Vault.MaxFileSize,
		Debounce:     c.Watch.Debounce,
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
