// Command margin is a local server that gives a markdown vault a team of AI
// agents. `margin serve` speaks JSON-RPC over stdio to an editor plugin; the
// other commands run the same operations in-process for people and scripts.
//
// This is the only package that reads flags, config files and the
// environment; everything below takes typed options.
//
// Exit codes:
//
//	0  success
//	1  the operation failed (the message says why)
//	2  bad usage or configuration (the message names the flag or key)
//	3  margin doctor found a problem (each one is printed with its fix)
//
// `margin serve` exits as LSP asks: 0 after shutdown and exit, 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/changes"
)

// version is set by the build (-ldflags "-X main.version=...").
var version = "dev"

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitDoctor  = 3
)

// exitError carries an exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{exitUsage, err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitDoctor {
			fmt.Fprintln(os.Stderr, "margin:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "margin:", err)
	return exitFailure
}

// globals are the flags every command shares.
type globals struct {
	vault  string
	config string
}

func newRootCommand() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "margin",
		Short:         "AI agents for a plain-text markdown vault",
		Long:          "margin watches an Obsidian-style vault and gives every task note an agent that keeps a report,\na journal and proposed changes in the vault, and answers questions about your notes.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(err) })
	root.PersistentFlags().StringVar(&g.vault, "vault", "", "vault directory (default: vault.path from config, else the nearest folder upward holding .obsidian/ or .margin/)")
	root.PersistentFlags().StringVar(&g.config, "config", "", "config file (default: $XDG_CONFIG_HOME/margin/config.yaml when present)")

	root.AddCommand(
		newServeCommand(g),
		newStatusCommand(g),
		newSearchCommand(g),
		newRelatedCommand(g),
		newEmbedCommand(g),
		newDoctorCommand(g),
		newAgentsCommand(g),
		newReportCommand(g),
		newChangesCommand(g),
		newDecideCommand(g, changes.Confirmed),
		newDecideCommand(g, changes.Rejected),
		newUndoCommand(g),
		newHistoryCommand(g),
		newAskCommand(g),
		newLogCommand(g),
		newImportCommand(g),
		newEvolveCommand(g),
		newReviewCommand(g),
		newMCPCommand(g),
	)
	return root
}

// load reads the configuration for a command and its logger.
func (g *globals) load(cmd *cobra.Command) (Config, *slog.Logger, error) {
	cfg, err := loadConfig(g.config, cmd.Flags())
	if err != nil {
		return Config{}, nil, usageError(err)
	}
	level, _ := parseLevel(cfg.Log.Level)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return cfg, logger, nil
}

// vaultDir is the vault for in-process commands: flag or config, else the
// nearest folder from the current directory upward that Obsidian or margin
// has marked as a vault. Guessing further would index whatever folder the
// command runs in (a source tree, a home directory).
func (c Config) vaultDir() (string, error) {
	if c.Vault.Path != "" {
		return expandHome(c.Vault.Path), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		for _, mark := range []string{".obsidian", c.Vault.StateDir} {
			if fi, err := os.Stat(filepath.Join(dir, mark)); err == nil && fi.IsDir() {
				return dir, nil
			}
		}
		if filepath.Dir(dir) == dir {
			return "", usageError(errors.New("not a vault: pass --vault DIR"))
		}
	}
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return home + "/" + rest
		}
	}
	return p
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("unknown level %q (want debug, info, warn or error)", s)
	}
	return l, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isTerminal reports whether f is a terminal, where progress is worth drawing.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
