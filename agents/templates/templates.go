// Package templates owns the agents' template library (SPEC §3.3, §4.4):
// the versions of each template as markdown files under
// <output>/Templates, the built-in templates and their seeding, a
// person's hand edits of an active template file (picked up as a new
// version by the library's own vault subscription), and the rules an
// evolved version must keep. It knows nothing of the agents that run from
// the templates.
package templates

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// Errors of the template library. ErrTemplateNotFound matches
// vault.ErrNotFound, so callers map both the same way.
var (
	ErrTemplateNotFound = fmt.Errorf("template %w", vault.ErrNotFound)
	ErrBadTemplateName  = errors.New("invalid template name")
	ErrBadDirectives    = errors.New("invalid directives")
	ErrEmptyGeneral     = fmt.Errorf("%w: the general directive is empty", ErrBadDirectives)
	ErrEmptyReport      = fmt.Errorf("%w: the report directive is empty", ErrBadDirectives)
	// ErrTemplateMoved refuses evolving a template from a version that is
	// no longer active.
	ErrTemplateMoved = errors.New("the template changed since the proposal")
	// ErrEvolutionDepth refuses evolving an improver beyond MaxImproverDepth.
	ErrEvolutionDepth = errors.New("evolution depth limit")
)

// templateNameRE keeps a name one file name inside the Templates folder.
var templateNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$`)

var versionFileRE = regexp.MustCompile(`^v([1-9][0-9]*)\.md$`)

// Templates is the vault's template library (SPEC §3.3, §4.4): every
// version of every template under <output>/Templates, as markdown files.
// `<name>/v<N>.md` holds each version; `<name>.md` is a copy of the active
// one that a person may edit, and their edit becomes the next version.
//
// Its methods serialise on one lock: a wake, a hand edit and an RPC
// must not both make version N+1 (the file writes are compare-and-swap,
// so another margin process racing this one gets a conflict, not a loss).
type Templates struct {
	files  Files
	events Events
	folder string
	now    func() time.Time
	log    *slog.Logger
	notify Notifier
	role   string // the llm role of task agents' calls

	mu       sync.Mutex
	problems map[string]edit.Fingerprint // name → broken active file already reported

	edits *vault.Paths // saved active files waiting for Run
}

// Notifier sends a notification to the client (the server implements it).
type Notifier interface {
	Notify(method string, params any)
}

// Options configure a template library. Zero values take defaults.
type Options struct {
	// Role is the llm role of task agents' calls ("task" by default).
	Role string
	// Notifier hears about hand edits that do not parse.
	Notifier Notifier
	Logger   *slog.Logger
	// Now is the clock; time.Now by default.
	Now func() time.Time
}

type notifyNothing struct{}

func (notifyNothing) Notify(string, any) {}

// New opens the template library of v. Watch and Run pick up a
// person's edits of the active files.
func New(v Vault, opts Options) *Templates {
	if opts.Role == "" {
		opts.Role = "task"
	}
	if opts.Notifier == nil {
		opts.Notifier = notifyNothing{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Templates{
		files: v.Files, events: v.Events, folder: path.Join(v.OutputFolder, "Templates"),
		now: opts.Now, log: opts.Logger, notify: opts.Notifier, role: opts.Role, problems: map[string]edit.Fingerprint{},
		edits: vault.NewPaths(),
	}
}

func (l *Templates) activePath(name string) string { return path.Join(l.folder, name+".md") }
func (l *Templates) versionPath(name string, v int) string {
	return path.Join(l.folder, name, "v"+strconv.Itoa(v)+".md")
}

func checkName(name string) error {
	if !templateNameRE.MatchString(name) {
		return fmt.Errorf("%w %q: letters, digits, space, _, . and - only, at most 64", ErrBadTemplateName, name)
	}
	return nil
}

// TemplateProblem is what margin/templateProblem tells the client: the
// active file of a template does not parse, so the version before it
// stays active (Active is 0 when there is none, and the template's
// agents fail their wakes until the file is fixed).
type TemplateProblem struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Problem string `json:"problem"`
	Active  int    `json:"active"` // the version that stays active
}

// templateState is a template as the files show it.
type templateState struct {
	versions []Template // ascending
	cur      Template   // the active version
	file     edit.Snapshot
	hasFile  bool
}

// readVersions reads every version file of name. A version file that does
// not parse is logged and left out: the others still work.
func (l *Templates) readVersions(name string) ([]Template, error) {
	dir := path.Join(l.folder, name)
	entries, err := l.files.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the versions of %s: %w", name, err)
	}
	var out []Template
	for _, e := range entries {
		m := versionFileRE.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			continue
		}
		p := path.Join(dir, e.Name())
		snap, err := l.files.Read(p)
		if err != nil {
			return nil, err
		}
		t, err := Parse(p, snap.Content)
		if err != nil {
			l.log.Warn("a template version does not parse; it is left out", "path", p, "err", err)
			continue
		}
		t.Name = name
		t.Version, _ = strconv.Atoi(m[1]) // the file name is the version's identity
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Template) int { return a.Version - b.Version })
	return out, nil
}

// activeOf is the active version: the newest marked active, else the newest.
func activeOf(vs []Template) Template {
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Status == StatusActive {
			return vs[i]
		}
	}
	return vs[len(vs)-1]
}

// sync brings a template's files in line and returns its state: a missing
// built-in is seeded, a template without version files has its active
// file recorded as its first version, a hand edit of the active file
// becomes a new user-authored version, and a broken one is reported while
// the version before it stays active. Call with l.mu held.
func (l *Templates) sync(name string) (templateState, error) {
	if err := checkName(name); err != nil {
		return templateState{}, err
	}
	var st templateState
	var err error
	if st.versions, err = l.readVersions(name); err != nil {
		return st, err
	}
	active := l.activePath(name)
	st.file, err = l.files.Read(active)
	switch {
	case err == nil:
		st.hasFile = true
	case !errors.Is(err, fs.ErrNotExist):
		return st, fmt.Errorf("reading template %s: %w", name, err)
	}

	if len(st.versions) == 0 {
		if !st.hasFile {
			bi, ok := builtins[name]
			if !ok {
				return st, fmt.Errorf("%w: %s (no %s)", ErrTemplateNotFound, name, active)
			}
			t := Template{Name: name, Kind: bi.kind, Version: 1, Status: StatusActive, AuthoredBy: BySeed,
				Created: l.now(), General: bi.general, Report: bi.report}
			if _, err := l.activate(t, nil, ""); err != nil {
				return st, err
			}
			return l.sync(name) // read back what was written
		}
		// A template written before margin kept versions: the file as
		// it is becomes the version it names.
		t, err := Parse(active, st.file.Content)
		if err != nil {
			l.reportProblem(name, st, err) // no earlier version to fall back on
			return st, err
		}
		vp := l.versionPath(name, t.Version)
		kept := edit.WithCause(context.Background(), edit.Cause{Actor: "templates (first version)", Template: t.Label()})
		if _, err := l.files.WriteContext(kept, vp, "", st.file.Content); err != nil {
			return st, fmt.Errorf("recording %s as its first version: %w", active, err)
		}
		l.log.Info("template recorded as its first version", "template", name, "version", t.Version)
		return l.sync(name)
	}

	st.cur = activeOf(st.versions)
	if !st.hasFile {
		// Deleted by hand: the active version comes back.
		src, err := l.files.Read(st.cur.Path)
		if err != nil {
			return st, err
		}
		back := edit.WithCause(context.Background(), edit.Cause{Actor: "templates (restored)", Template: st.cur.Label()})
		if st.file.Fingerprint, err = l.files.WriteContext(back, active, "", src.Content); err != nil {
			return st, fmt.Errorf("restoring %s: %w", active, err)
		}
		st.file.Content, st.hasFile = src.Content, true
		return st, nil
	}
	edited, err := Parse(active, st.file.Content)
	if err != nil {
		l.reportProblem(name, st, err)
		return st, nil
	}
	delete(l.problems, name)
	if edited.sameDirectives(st.cur) {
		return st, nil
	}
	next := edited
	next.Name, next.Kind, next.Version = name, st.cur.Kind, st.versions[len(st.versions)-1].Version+1
	next.Status, next.AuthoredBy, next.Created, next.Depth = StatusActive, ByUser, l.now(), 0
	if _, err := l.activate(next, &st.cur, st.file.Fingerprint); err != nil {
		return st, err
	}
	l.log.Info("template edit recorded as a new version", "template", name, "version", next.Version)
	return l.sync(name)
}

// reportProblem tells the log and the client, once per broken content,
// that a hand edit does not parse and which version stays active.
func (l *Templates) reportProblem(name string, st templateState, err error) {
	if l.problems[name] == st.file.Fingerprint {
		return
	}
	l.problems[name] = st.file.Fingerprint
	l.log.Warn("the template edit does not parse; the previous version stays active", "template", name, "active", st.cur.Version, "err", err)
	l.notify.Notify("margin/templateProblem", TemplateProblem{Name: name, Path: l.activePath(name), Problem: err.Error(), Active: st.cur.Version})
}

// activate writes next as a new version file and makes it active: prev's
// file is archived and the active file becomes a copy of next. The active
// file is written compare-and-swap against base (what the caller read);
// when a person saved it again meanwhile, their edit stays and becomes
// the version after this one on the next sync.
func (l *Templates) activate(next Template, prev *Template, base edit.Fingerprint) (Template, error) {
	next.Path = l.versionPath(next.Name, next.Version)
	content := Render(next)
	// margin's history names the version and who wrote it.
	ctx := edit.WithCause(context.Background(), edit.Cause{Actor: "templates (" + next.AuthoredBy + ")", Template: next.Label()})
	if _, err := l.files.WriteContext(ctx, next.Path, "", content); err != nil {
		return next, fmt.Errorf("writing version %d of %s: %w", next.Version, next.Name, err)
	}
	if prev != nil {
		if err := l.setStatus(ctx, *prev, StatusArchived); err != nil {
			return next, err
		}
	}
	if err := l.writeActive(ctx, next.Name, base, content); err != nil {
		return next, err
	}
	return next, nil
}

// setStatus changes only the status key of a version file, for the cause
// ctx names.
func (l *Templates) setStatus(ctx context.Context, t Template, status string) error {
	snap, err := l.files.Read(t.Path)
	if err != nil {
		return err
	}
	out, err := edit.SetFrontmatter(snap.Content, "status", status)
	if err != nil {
		return fmt.Errorf("marking %s %s: %w", t.Path, status, err)
	}
	if _, err := l.files.WriteContext(ctx, t.Path, snap.Fingerprint, out); err != nil {
		return fmt.Errorf("marking %s %s: %w", t.Path, status, err)
	}
	return nil
}

func (l *Templates) writeActive(ctx context.Context, name string, base edit.Fingerprint, content []byte) error {
	_, err := l.files.WriteContext(ctx, l.activePath(name), base, content)
	if errors.Is(err, edit.ErrConflict) {
		l.log.Warn("the active template file changed while margin wrote a new version; the edit is kept and becomes the next version", "template", name)
		return nil
	}
	return err
}

// Active returns the active version of a template, picking up a hand
// edit of its file first. A built-in template is seeded when missing.
func (l *Templates) Active(ctx context.Context, name string) (Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	return st.cur, err
}

// Problem is why the active file of a template does not parse, "" when it does.
func (l *Templates) Problem(ctx context.Context, name string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	if err != nil || !st.hasFile {
		return "", err
	}
	if _, perr := Parse(l.activePath(name), st.file.Content); perr != nil {
		return perr.Error(), nil
	}
	return "", nil
}

// Get returns one version of a template; version 0 is the active one.
func (l *Templates) Get(ctx context.Context, name string, version int) (Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	if err != nil || version == 0 {
		return st.cur, err
	}
	for _, t := range st.versions {
		if t.Version == version {
			return t, nil
		}
	}
	return Template{}, fmt.Errorf("%w: %s has no version %d", ErrTemplateNotFound, name, version)
}

// Versions returns every version of a template, oldest first.
func (l *Templates) Versions(ctx context.Context, name string) ([]Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	return st.versions, err
}

// List returns the active version of every template: the built-ins and
// every `<name>.md` or `<name>/` in the Templates folder.
func (l *Templates) List(ctx context.Context) ([]Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	names, err := l.names()
	if err != nil {
		return nil, err
	}
	out := make([]Template, 0, len(names))
	for _, n := range names {
		st, err := l.sync(n)
		if err != nil {
			l.log.Warn("template left out of the list", "template", n, "err", err)
			continue
		}
		out = append(out, st.cur)
	}
	return out, nil
}

// TemplateModel is a model a template names, with the llm role whose
// calls use it: the model applies on that role's provider.
type TemplateModel struct {
	Role, Model string
}

// Models lists the models the active templates name in their `model`
// key, for a check that they are pulled. It only reads: unlike List it
// records no versions, so `margin doctor` can call it. A template whose
// active file does not parse names none.
func (l *Templates) Models() ([]TemplateModel, error) {
	names, err := l.names()
	if err != nil {
		return nil, err
	}
	var models []TemplateModel
	for _, n := range names {
		snap, err := l.files.Read(l.activePath(n))
		if err != nil {
			continue // not written yet (a built-in), or unreadable: List reports that
		}
		t, err := Parse(l.activePath(n), snap.Content)
		if err != nil || t.Model == "" {
			continue
		}
		m := TemplateModel{Role: l.role, Model: t.Model}
		if t.Kind == KindImprover {
			m.Role = EvolutionRole
		}
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	return models, nil
}

// names lists the templates: built-ins first seen or not, then the vault's.
func (l *Templates) names() ([]string, error) {
	set := map[string]bool{}
	for n := range builtins {
		set[n] = true
	}
	entries, err := l.files.ReadDir(l.folder)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing templates: %w", err)
	}
	for _, e := range entries {
		n := strings.TrimSuffix(e.Name(), ".md")
		if (e.IsDir() || n != e.Name()) && checkName(n) == nil {
			set[n] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range set {
			if !yield(n) {
				return
			}
		}
	}), nil
}

// save makes general and report the next active version of a template,
// authored by who. A broken hand edit of the active file is not
// overwritten: it is refused until the person fixes or reverts it.
func (l *Templates) save(name, general, report, who string, depth int) (Template, error) {
	general, report = strings.TrimSpace(general), strings.TrimSpace(report)
	switch {
	case general == "":
		return Template{}, ErrEmptyGeneral
	case report == "":
		return Template{}, ErrEmptyReport
	}
	if err := checkDirectives(general, report); err != nil {
		return Template{}, err
	}
	st, err := l.sync(name)
	if err != nil {
		return Template{}, err
	}
	if _, perr := Parse(l.activePath(name), st.file.Content); perr != nil {
		return Template{}, fmt.Errorf("%s has an edit that does not parse (%v); fix or revert it first: %w", l.activePath(name), perr, edit.ErrConflict)
	}
	next := st.cur
	next.General, next.Report, next.Legacy = general, report, ""
	if next.sameDirectives(st.cur) {
		return Template{}, fmt.Errorf("%w: version %d already says exactly this", ErrBadDirectives, st.cur.Version)
	}
	next.Version = st.versions[len(st.versions)-1].Version + 1
	next.Status, next.AuthoredBy, next.Created, next.Depth = StatusActive, who, l.now(), depth
	return l.activate(next, &st.cur, st.file.Fingerprint)
}

// Save makes a person's general and report directives the next active version.
func (l *Templates) Save(ctx context.Context, name, general, report string) (Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.save(name, general, report, ByUser, 0)
}

// Rollback makes an earlier version active again, archiving the current
// one. The version keeps its number, so a run key that saw it before
// sees it again.
func (l *Templates) Rollback(ctx context.Context, name string, version int) (Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	if err != nil {
		return Template{}, err
	}
	if _, perr := Parse(l.activePath(name), st.file.Content); perr != nil {
		return Template{}, fmt.Errorf("%s has an edit that does not parse (%v); fix or revert it first: %w", l.activePath(name), perr, edit.ErrConflict)
	}
	i := slices.IndexFunc(st.versions, func(t Template) bool { return t.Version == version })
	switch {
	case i < 0:
		return Template{}, fmt.Errorf("%w: %s has no version %d", ErrTemplateNotFound, name, version)
	case version == st.cur.Version:
		return st.cur, nil
	}
	target := st.versions[i]
	ctx = edit.WithCause(ctx, edit.Cause{Actor: "templates (rollback)", Template: target.Label()})
	if err := l.setStatus(ctx, target, StatusActive); err != nil {
		return Template{}, err
	}
	if err := l.setStatus(ctx, st.cur, StatusArchived); err != nil {
		return Template{}, err
	}
	src, err := l.files.Read(target.Path)
	if err != nil {
		return Template{}, err
	}
	if err := l.writeActive(ctx, name, st.file.Fingerprint, src.Content); err != nil {
		return Template{}, err
	}
	l.log.Info("template rolled back", "template", name, "from", st.cur.Version, "to", version)
	target.Status = StatusActive
	return target, nil
}

// Seed is the seeding pass (seed 000 §5): every template whose active
// version is legacy (one ## Directives section) gets purpose-built general
// and report directives as a new version, authored by the seed. The
// legacy version stays in the history, archived.
func (l *Templates) Seed(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	names, err := l.names()
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if _, builtin := builtins[n]; builtin {
			if _, err := l.files.Stat(l.activePath(n)); errors.Is(err, fs.ErrNotExist) {
				continue // seeded when first needed, not into every vault
			}
		}
		st, err := l.sync(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !st.cur.IsLegacy() {
			continue
		}
		report := DefaultReport
		if st.cur.Kind == KindImprover {
			report = ImproverReport
		}
		if _, err := l.save(n, seededGeneral(st.cur.Kind, st.cur.Legacy), report, BySeed, 0); err != nil {
			errs = append(errs, fmt.Errorf("seeding %s: %w", n, err))
			continue
		}
		l.log.Info("legacy template seeded with general and report directives", "template", n)
	}
	return errors.Join(errs...)
}

// isActiveTemplateFile reports whether p is the active file of a
// template (a person's edit of it is picked up as a new version) and names it.
func (l *Templates) isActiveTemplateFile(p string) (string, bool) {
	dir, file := path.Split(p)
	name, ok := strings.CutSuffix(file, ".md")
	return name, ok && strings.TrimSuffix(dir, "/") == l.folder && checkName(name) == nil
}

// Watch subscribes the library to the vault's changes: a person's save
// (or deletion) of an active template file is queued for Run, which
// records it as a new version, or reports the problem while the previous
// version stays active. Call it before the vault runs. Changes before the
// first scan is done are not queued: Active reads the files as they are.
func (l *Templates) Watch() {
	l.events.Subscribe(func(changes []vault.Change) {
		select {
		case <-l.events.Ready():
		default:
			return
		}
		for _, c := range changes {
			if _, ok := l.isActiveTemplateFile(c.Path); ok && !c.Own {
				l.edits.Add(c.Path)
			}
		}
	})
}

// Run picks up the edits Watch queues until ctx is done, on its own
// goroutine: a slow file system delays no wake.
func (l *Templates) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.edits.Ready():
			for _, p := range l.edits.Take() {
				l.onEdit(ctx, p)
			}
		}
	}
}

// onEdit picks up a saved edit of a template's active file.
func (l *Templates) onEdit(ctx context.Context, p string) {
	name, _ := l.isActiveTemplateFile(p)
	if _, err := l.Active(ctx, name); err != nil {
		l.log.Error("picking up a template edit", "path", p, "err", err)
	}
}

// Evolve writes an approved evolution proposal (general and report
// directives) as the next version, if the version it was made against,
// base, is still the active one.
func (l *Templates) Evolve(name string, base int, general, report string) (Template, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, err := l.sync(name)
	if err != nil {
		return Template{}, err
	}
	if st.cur.Version != base {
		return Template{}, fmt.Errorf("%w: the proposal was made for version %d and version %d is active now; start a new session: %w", ErrTemplateMoved, base, st.cur.Version, edit.ErrStale)
	}
	if err := CheckDepth(st.cur); err != nil {
		return Template{}, err
	}
	depth := 0
	if st.cur.Kind == KindImprover {
		depth = st.cur.Depth + 1
	}
	return l.save(name, general, report, ByEvolution, depth)
}

// MaxImproverDepth caps the recursion of the template improver (SPEC
// §4.4): it may rewrite its own template at most twice in a row before a
// person edits, saves or rolls it back. An improver that keeps improving
// itself drifts with nobody checking the direction.
const MaxImproverDepth = 2

// CheckDepth refuses evolving an improver that evolved itself
// MaxImproverDepth times in a row.
func CheckDepth(t Template) error {
	if t.Kind == KindImprover && t.Depth >= MaxImproverDepth {
		return fmt.Errorf("%w: %s is the result of %d evolutions of the improver by itself in a row, and margin stops that recursion at depth %d; edit it by hand (templates/save) or roll it back before evolving it again",
			ErrEvolutionDepth, t.Label(), t.Depth, MaxImproverDepth)
	}
	return nil
}

// EvolutionRole is the llm role the evolution agent runs as.
const EvolutionRole = "evolution"
