package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/store"
	"github.com/margin-md/margin/vault/watch"
)

// finding is one check of margin doctor.
type finding struct {
	check  string
	ok     bool
	warn   bool // not ok, but margin works: does not fail doctor
	detail string
	fix    string // the exact thing to do when !ok
}

func newDoctorCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the vault, watch limits, state database and model server, and say how to fix problems",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, logger, err := g.load(cmd)
			if err != nil {
				return err
			}
			dir, err := cfg.vaultDir()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			findings, templateModels := checkVault(ctx, cfg, dir, logger)
			findings = append(findings, checkWatchLimit(cfg, dir))
			findings = append(findings, checkModels(ctx, cfg, templateModels)...)
			if printFindings(cmd.OutOrStdout(), findings) {
				return nil
			}
			return &exitError{code: exitDoctor}
		},
	}
}

// printFindings prints each check and reports whether all passed.
func printFindings(w io.Writer, findings []finding) bool {
	all := true
	for _, f := range findings {
		mark := "ok  "
		switch {
		case f.warn:
			mark = "warn"
		case !f.ok:
			mark, all = "FAIL", false
		}
		fmt.Fprintf(w, "%s  %-14s %s\n", mark, f.check, f.detail)
		if (!f.ok || f.warn) && f.fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", f.fix)
		}
	}
	return all
}

// checkVault opens, indexes and checks the vault. It also returns the
// models its templates name, which checkModels looks for.
func checkVault(ctx context.Context, cfg Config, dir string, logger *slog.Logger) ([]finding, []templates.TemplateModel) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return []finding{{check: "vault", detail: fmt.Sprintf("%s is not a readable directory", dir),
			fix: "pass --vault DIR or set vault.path (MARGIN_VAULT_PATH) to your notes folder"}}, nil
	}
	opts := cfg.vaultOptions()
	opts.Dir, opts.Logger = dir, logger
	start := time.Now()
	stateDir := filepath.Join(dir, cfg.Vault.StateDir)
	stateDB, indexDB := filepath.Join(stateDir, "state.db"), filepath.Join(stateDir, "index.db")
	// Not scanned as it opens: doctor checks the state database first, and
	// a failed scan is a finding.
	client, _ := llm.New(cfg.LLM) // checkModels reports a bad llm section
	ws, err := workspace.Open(ctx, workspace.Options{Vault: opts, Parts: workspace.Templates | workspace.Embeddings, LLM: client, Embed: cfg.embedOptions(), Logger: logger})
	if err != nil {
		return []finding{{check: "state db", detail: err.Error(),
			fix: fmt.Sprintf("check that %s is writable; if state.db is damaged, move it aside: margin starts a new one, and agents start over", stateDir)}}, nil
	}
	defer ws.Close()
	v := ws.Vault
	out := []finding{{check: "state db", ok: true, detail: stateDB}}
	if err := store.Check(ctx, v.DB()); err != nil {
		out[0] = finding{check: "state db", detail: "state database " + err.Error(),
			fix: "move " + stateDB + " aside: margin starts a new one, and agents start over (their reports and journals in the vault stay)"}
	}
	damaged := func(err error) finding {
		return finding{check: "index", detail: err.Error(), fix: "remove " + indexDB + "; margin rebuilds it from the vault"}
	}
	res, err := v.Scan(ctx, nil)
	if err != nil {
		return append(out, damaged(err)), nil
	}
	if err := v.Index().Check(ctx); err != nil {
		out = append(out, damaged(err))
	} else {
		out = append(out, finding{check: "index", ok: true, detail: indexDB})
	}
	models, err := ws.Templates.Models()
	if err != nil {
		out = append(out, finding{check: "templates", detail: err.Error()})
	}
	st, err := v.Status(ctx)
	if err != nil {
		return append(out, finding{check: "vault", detail: err.Error()}), models
	}
	f := finding{check: "vault", ok: st.Notes > 0,
		detail: fmt.Sprintf("%s: notes %s, %d of margin's outputs, %d skipped, %d failed, indexed in %s",
			dir, noteCounts(st), st.Outputs, st.Skipped, st.Failed, time.Since(start).Round(time.Millisecond))}
	if st.Notes == 0 {
		f.fix = "no markdown notes found: is --vault the right folder?"
	}
	out = append(out, f, rulesFinding(v.Rules()), agentsFinding(ctx, v), budgetFinding(ctx, cfg, v.DB()))
	out = append(out, embeddingFindings(ctx, cfg, ws)...)
	for _, w := range st.Warnings {
		out = append(out, finding{check: "settings", warn: true, detail: w})
	}
	if st.Notes > 0 && st.Tasks == 0 {
		out = append(out, noTasksFinding(st, v.Rules()))
	}
	if st.Failed > 0 {
		failed, err := v.Index().Coverage(ctx, index.StateFailed)
		if err != nil {
			return append(out, finding{check: "notes", detail: err.Error()}), models
		}
		// A few name the problem; status lists them all.
		var names []string
		for _, f := range failed[:min(len(failed), failedShown)] {
			names = append(names, f.Path+" ("+f.Reason+")")
		}
		if more := len(failed) - failedShown; more > 0 {
			names = append(names, fmt.Sprintf("and %d more (margin status lists them)", more))
		}
		out = append(out, finding{check: "notes", detail: fmt.Sprintf("%d of %d files are indexed only in part: %s", st.Failed, res.Files, strings.Join(names, "; ")),
			fix: "fix each file's frontmatter (it must be valid YAML between --- lines); margin re-reads it on save"})
	}
	return out, models
}

// failedShown is how many of the files indexed only in part doctor names.
const failedShown = 5

// checkWatchLimit compares the inotify watch limit with the folders margin
// must watch: past the limit, changes in some folders go unseen.
func checkWatchLimit(cfg Config, dir string) finding {
	data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return finding{check: "watch limit", ok: true, detail: "not Linux inotify; nothing to check"}
	}
	limit, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	ignore, err := watch.DefaultIgnore(cfg.Vault.StateDir, cfg.Vault.Ignore)
	if err != nil {
		return finding{check: "watch limit", detail: err.Error(), fix: "fix vault.ignore in the config"}
	}
	dirs := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." && ignore(filepath.ToSlash(rel), true) {
			return filepath.SkipDir
		}
		dirs++
		return nil
	})
	f := finding{check: "watch limit", ok: true, detail: fmt.Sprintf("%s to watch, limit %d (fs.inotify.max_user_watches, shared by all programs)", plural(dirs, "folder"), limit)}
	// Other programs (editors, sync clients) use watches too: ask for room.
	if dirs*2 > limit {
		f.ok = false
		f.fix = fmt.Sprintf("sudo sysctl fs.inotify.max_user_watches=%d && echo fs.inotify.max_user_watches=%d | sudo tee /etc/sysctl.d/90-margin.conf", max(524288, dirs*4), max(524288, dirs*4))
	}
	return f
}

// checkModels probes each provider margin may call. templateModels are
// looked for on the default provider, the one a template's model applies to.
func checkModels(ctx context.Context, cfg Config, templateModels []templates.TemplateModel) []finding {
	client, err := llm.New(cfg.LLM)
	if err != nil {
		return []finding{{check: "models", detail: err.Error(), fix: "fix the llm section of the config"}}
	}
	providers := []string{cfg.LLM.DefaultProvider}
	if cfg.LLM.FallbackProvider != "" {
		providers = append(providers, cfg.LLM.FallbackProvider)
	}
	// A template's model is asked of its role's own provider; the
	// fallback serves its own tier's model.
	also := map[string][]string{}
	for _, m := range templateModels {
		p, _, err := client.Resolve(m.Role)
		if err != nil {
			continue // the role's configuration is checked by llm.New
		}
		also[p] = append(also[p], m.Model)
		if !slices.Contains(providers, p) {
			providers = append(providers, p)
		}
	}
	var out []finding
	for _, p := range providers {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h := client.Probe(ctx, p, also[p]...)
		cancel()
		f := finding{check: "model " + p, ok: h.Err == nil && h.Reachable && len(h.Missing) == 0, fix: h.Fix}
		switch {
		case h.Err != nil:
			f.detail = h.Err.Error() + " (margin works offline meanwhile: search, lists and offline reports)"
		case len(h.Missing) > 0:
			f.detail = fmt.Sprintf("reachable (version %s), missing models: %s", h.Version, strings.Join(h.Missing, ", "))
		default:
			f.detail = fmt.Sprintf("reachable (version %s), %s", h.Version, plural(len(h.Models), "model"))
		}
		out = append(out, f)
	}
	return out
}

// rulesFinding says how margin reads the vault, so a person can see why a
// note is or is not a daily note, a task or a template. Daily notes that
// all go unseen make it a warning: margin works, but not on them.
func rulesFinding(r vault.Rules) finding {
	folder := r.Daily.Folder
	if folder == "" {
		folder = "the vault root"
	}
	detail := fmt.Sprintf("daily notes %s in %s (from %s), named in %s (%s)",
		r.Daily.Format, folder, r.DailySource, r.Daily.Format.Locale().Name, r.LocaleSource)
	if r.DailyOlder != "" {
		detail += ", and " + r.DailyOlder
	}
	detail += "; tasks in " + listOr(r.TaskFolders, "no folder")
	var marks []string
	for _, t := range r.TaskTags {
		marks = append(marks, "tagged #"+t)
	}
	if p := r.TaskProperty; p.Name != "" {
		marks = append(marks, fmt.Sprintf("with %s: %s", p.Name, p.Value))
	}
	if len(marks) > 0 {
		detail += " or " + strings.Join(marks, " or ")
	}
	if r.TaskSource != "" {
		detail += " (with " + r.TaskSource + ")"
	}
	if len(r.TemplateFolders) > 0 {
		detail += "; templates in " + strings.Join(r.TemplateFolders, ", ")
	}
	if len(r.IgnoreFilters) > 0 {
		detail += "; Obsidian's excluded files: " + strings.Join(r.IgnoreFilters, ", ")
	}
	f := finding{check: "rules", ok: true, detail: detail}
	if r.DailyUnseen != "" {
		f.warn, f.detail = true, detail+"; no daily note found: "+r.DailyUnseen
		f.fix = "set the daily folder and format in the settings of the plugin that makes the daily notes, or vault.daily_folder, vault.daily_format and vault.locale; the settings warnings below name the notes"
	}
	return f
}

// noTasksFinding explains a vault where margin found no task note: the
// agents have nothing to follow until one is marked.
func noTasksFinding(st vault.Status, r vault.Rules) finding {
	detail := fmt.Sprintf("no task notes, so no agents: a task note has `type: task` in its frontmatter, a `task` tag, or lives in a task folder (vault.task_folders: %s)", listOr(r.TaskFolders, "none"))
	if st.ChecklistItems > 0 {
		detail += fmt.Sprintf("; the vault has %s, which margin reads inside task notes but does not make tasks of", plural(st.ChecklistItems, "checklist item"))
	}
	return finding{check: "tasks", warn: true, detail: detail,
		fix: "add `type: task` to the frontmatter of the notes that are tasks, or set vault.task_folders to the folders that hold them"}
}

func listOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ", ")
}
