package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/watch"
)

// Rules are how margin reads this vault (SPEC §3.1): where daily notes and
// templates live, what is a task, what is ignored. They come from the
// options and from Obsidian's settings in .obsidian/, which win where both
// say something. A setting margin cannot read is a warning, never a reason
// not to start.
type Rules struct {
	Daily           note.DailyFormat
	DailySource     string // where the daily format came from, for doctor
	TaskFolders     []string
	TemplateFolders []string
	OutputFolder    string
	IgnoreFilters   []string // Obsidian's userIgnoreFilters, as written
	Ignore          []string // config globs
	RespectGit      bool
	Warnings        []string
	// DailySettings is true when the vault's own settings place its daily
	// notes; without them margin's config does, and `margin log` says
	// where it writes.
	DailySettings bool
	// LocaleSource says where the daily format's locale came from (the
	// locale itself is Daily.Format's), for doctor.
	LocaleSource string
	// DailyUnseen says why the vault's daily notes may all be going
	// unseen: no note is a daily note under the rules, yet some are named
	// like one. "" when nothing points to that.
	DailyUnseen string
	// DailyOlder says how many daily notes are named in an older format
	// of the folder's (Daily.Older), for doctor; "" when none is.
	DailyOlder string
	// TaskTags and TaskProperty mark task notes as the TaskNotes plugin
	// does, whose settings (TaskSource) may also add a task folder.
	TaskTags     []string
	TaskProperty note.TaskProperty
	TaskSource   string
}

// readRules reads Obsidian's settings under dir/.obsidian and applies them
// over opts.
func readRules(dir string, opts Options) Rules {
	r := Rules{
		TaskFolders:  slices.Clone(opts.TaskFolders),
		OutputFolder: strings.Trim(path.Clean("/"+filepath.ToSlash(opts.OutputFolder)), "/"),
		Ignore:       opts.Ignore,
		RespectGit:   !opts.NoGitignore,
	}
	warn := func(format string, args ...any) { r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...)) }
	read := func(name string, into any) bool {
		ok, err := readSettings(dir, ".obsidian/"+name, into)
		if err != nil {
			warn("%v; its settings are not used", err)
		}
		return ok
	}

	daily := readDailySettings(dir)
	r.Warnings = append(r.Warnings, daily.Warnings...)
	if daily.Unread != nil {
		warn("%v; its settings are not used", daily.Unread)
	}
	folder, format := opts.DailyFolder, opts.DailyFormat
	switch {
	case daily.Source != "":
		// Where the settings are silent, Obsidian's defaults hold, not
		// margin's: the vault's root and YYYY-MM-DD.
		folder, r.DailySource, r.DailySettings = daily.Folder, daily.Source, true
		fm := daily.Format
		if fm == "" {
			fm = "YYYY-MM-DD"
		}
		m, err := note.ParseMoment(fm)
		if err == nil {
			r.Daily.Format = m
		} else {
			warn("daily note format %q in %s: %v; daily notes are found with vault.daily_format %q instead", fm, daily.Source, err, format)
		}
	case daily.Unread != nil:
		r.DailySource = "config: the daily-note settings could not be read"
	case daily.Stale != nil:
		r.DailySource = "config: the core Daily notes plugin is off in " + corePluginsSettings + ", so " + coreDailySettings + " is left over"
	default:
		r.DailySource = "config: the vault has no " + coreDailySettings
	}
	if r.Daily.Format.IsZero() {
		m, err := note.ParseMoment(format)
		if err != nil {
			warn("vault.daily_format %q: %v; daily notes are found with YYYY-MM-DD instead", format, err)
			m = note.MustMoment("YYYY-MM-DD")
		}
		r.Daily.Format = m
	}
	r.Daily.Folder = strings.Trim(path.Clean("/"+folder), "/")

	var templates struct{ Folder string }
	if read("templates.json", &templates) {
		r.addTemplateFolder(dir, templates.Folder, ".obsidian/templates.json")
	}
	var templater struct {
		Folder string `json:"templates_folder"`
	}
	if read("plugins/templater-obsidian/data.json", &templater) {
		r.addTemplateFolder(dir, templater.Folder, "Templater's settings")
	}

	var app struct {
		Filters []string `json:"userIgnoreFilters"`
	}
	if read("app.json", &app) {
		for _, f := range app.Filters {
			if strings.TrimSpace(f) != "" {
				r.IgnoreFilters = append(r.IgnoreFilters, f)
			}
		}
	}
	found := r.readLocale(dir, opts.Locale)
	if daily.Stale != nil {
		r.staleDaily(dir, *daily.Stale, found)
	}
	r.readTaskNotes(dir)
	return r
}

// readTaskNotes adds the TaskNotes plugin's way of marking tasks, while
// the plugin is on, to the configured one: its task folder (unless it is
// the vault root, which would make every note a task), and its task tag
// or property.
func (r *Rules) readTaskNotes(dir string) {
	tn, on, err := readTaskNotes(dir)
	if err != nil {
		r.Warnings = append(r.Warnings, err.Error()+"; its settings are not used")
	}
	if !on {
		return
	}
	r.TaskSource = taskNotesSettings
	if tn.Folder != "" && !slices.ContainsFunc(r.TaskFolders, func(f string) bool { return strings.EqualFold(trimFolder(f), tn.Folder) }) {
		r.TaskFolders = append(r.TaskFolders, tn.Folder)
	}
	if tn.Tag != "" {
		r.TaskTags = []string{tn.Tag}
	}
	r.TaskProperty = tn.Property
}

// addTemplateFolder adds the templates folder a plugin's settings name.
// An empty one is none: Obsidian's Templates plugin then has no folder set,
// and reading Templater's as the vault root would make every note a
// template, hidden from tasks and agents. A folder
// that is not there is kept (it may be made later) but reported, since
// settings that point nowhere are usually left over from a rename.
func (r *Rules) addTemplateFolder(dir, folder, source string) {
	f := strings.Trim(path.Clean("/"+strings.TrimSpace(filepath.ToSlash(folder))), "/")
	if f == "" || slices.Contains(r.TemplateFolders, f) {
		return
	}
	r.TemplateFolders = append(r.TemplateFolders, f)
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil || !fi.IsDir() {
		r.Warnings = append(r.Warnings, fmt.Sprintf("templates folder %q in %s is not a folder of the vault; set it to the folder that holds the templates", f, source))
	}
}

// noteOptions are the rules as the parser takes them.
func (r Rules) noteOptions() note.Options {
	o := r.TaskOptions()
	o.Daily, o.TemplateFolders, o.OutputFolder = r.Daily, r.TemplateFolders, r.OutputFolder
	return o
}

// TaskOptions are the rules that make a note a task, for a caller that
// parses a task note by itself.
func (r Rules) TaskOptions() note.Options {
	return note.Options{TaskFolders: r.TaskFolders, TaskTags: r.TaskTags, TaskProperty: r.TaskProperty}
}

// Fingerprint identifies the rules that decide each note's kind and
// whether it is indexed at all, and the parser's reading of a note
// (Version: 2 since broken headers are read in part; 3 since margin's
// outputs carry a filter token). The index keeps the
// one it was built with: a different one makes the next scan read every
// note again.
func (r Rules) Fingerprint() string {
	folders := func(ff []string) []string {
		out := make([]string, len(ff))
		for i, f := range ff {
			out[i] = strings.ToLower(strings.Trim(path.Clean("/"+f), "/"))
		}
		slices.Sort(out)
		return out
	}
	var older []string
	for _, m := range r.Daily.Older {
		older = append(older, m.String())
	}
	var property *note.TaskProperty
	if r.TaskProperty != (note.TaskProperty{}) {
		property = &r.TaskProperty
	}
	data, _ := json.Marshal(struct {
		Version                          int
		DailyFolder, DailyFormat, Locale string
		Tasks, Templates, Filters        []string
		Output                           string
		Ignore                           []string
		RespectGit                       bool
		// Left out when unset, so a vault without them keeps its index.
		TaskTags     []string           `json:",omitempty"`
		TaskProperty *note.TaskProperty `json:",omitempty"`
		OlderDaily   []string           `json:",omitempty"`
	}{
		3, strings.ToLower(r.Daily.Folder), r.Daily.Format.String(), r.Daily.Format.Locale().Name,
		folders(r.TaskFolders), folders(r.TemplateFolders), r.IgnoreFilters,
		// No globs are no globs however they came: config.yaml's ignore
		// is [] where vault.Open's zero Options give nil, and each made
		// the other's next scan read all 100k notes of a benchmark again.
		// [] is what the indexes margin's commands built hold.
		strings.ToLower(r.OutputFolder), append([]string{}, r.Ignore...), r.RespectGit,
		folders(r.TaskTags), property, older,
	})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// Rules are the rules this vault was opened with.
func (v *Vault) Rules() Rules { return v.rules }

// ignoreRules are what the scan and the watcher leave out (SPEC §3.1).
// excluded is what is not part of the vault at all: hidden files and
// folders, the state dir, config globs, Obsidian's excluded files and what
// git ignores. ignore adds the files of the vault that are not notes
// (not markdown, editors' scratch files), which the watcher leaves out
// too. A filter margin cannot read is a warning in rules.
func ignoreRules(dir, stateDir string, rules *Rules) (excluded, ignore func(rel string, isDir bool) bool, err error) {
	base, err := watch.Excluded(stateDir, rules.Ignore)
	if err != nil {
		return nil, nil, err
	}
	names, err := watch.DefaultIgnore(stateDir, nil)
	if err != nil {
		return nil, nil, err
	}
	obsidian, bad := watch.ObsidianFilters(rules.IgnoreFilters)
	for _, f := range bad {
		rules.Warnings = append(rules.Warnings, fmt.Sprintf("excluded-files filter %q in .obsidian/app.json is not a regular expression margin reads; it is not applied", f))
	}
	var git func(string, bool) bool
	if rules.RespectGit {
		git, _ = watch.GitIgnore(dir)
	}
	excluded = func(rel string, isDir bool) bool {
		return base(rel, isDir) || obsidian(rel, isDir) || git != nil && git(rel, isDir)
	}
	ignore = func(rel string, isDir bool) bool {
		return names(rel, isDir) || excluded(rel, isDir)
	}
	return excluded, ignore, nil
}
