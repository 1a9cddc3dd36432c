// Package review owns the scheduled review agents (issue #38): review
// definitions the person writes as `<output>/Reviews/<name>.md` (a
// schedule and a scope in the frontmatter, a directive in the body), the
// runs that turn what changed in scope since the last run into one note
// `<output>/Reviews/<name>/<YYYY-MM-DD>.md`, with a TLDR and a
// `[[path#heading]]` citation for every claim, and the tables that record
// each run and what it saw (review_runs, review_marks, review_directives).
//
// It reads the vault only through the index and writes only its own notes
// through vault/edit; anything a review would change in a person's note
// goes to a change set through Proposer. What it needs of the rest of margin
// — the index, the files, the template library its directives are
// versioned in, the agents' daily token budget, the model, the change sets —
// it declares here as small interfaces, which the composition root
// (server/workspace) hands in.
package review

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// Index is what a review reads of the vault's index (*index.Index
// implements it).
type Index interface {
	Stat(ctx context.Context) (map[string]index.FileStat, error)
	Note(ctx context.Context, path string) (index.NoteMeta, error)
	Text(ctx context.Context, path string) (index.NoteText, error)
	Tasks(ctx context.Context) ([]index.TaskMeta, error)
}

// Files is how a review reads its definitions and writes its notes
// (*edit.Root implements it): atomic, compare-and-swap writes.
type Files interface {
	Read(name string) (edit.Snapshot, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	WriteContext(ctx context.Context, name string, base edit.Fingerprint, content []byte) (edit.Fingerprint, error)
}

// Directives is the template library a review's directive is versioned in
// (*templates.Templates implements it), like a task agent's.
type Directives interface {
	Active(ctx context.Context, name string) (templates.Template, error)
	Adopt(ctx context.Context, name, kind, general, report string) (templates.Template, error)
}

// Budget is the agents' daily token budget, which reviews spend from
// too (*task.Runtime implements it).
type Budget interface {
	BudgetSpent(now time.Time) bool
	SpendTokens(now time.Time, tokens int)
}

// Proposer puts a change to a task note into a change set
// (*changes.Changes implements it).
type Proposer interface {
	ProposeTaskChange(ctx context.Context, client, task, field, value, reason string) (changes.ChangeSet, error)
}

// Clock is the time reviews run on: the scheduler reads it and waits on it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the machine's timers with now as the time (time.Now
// when nil: margin's --now flag sets another).
func SystemClock(now func() time.Time) Clock {
	if now == nil {
		now = time.Now
	}
	return systemClock{now}
}

type systemClock struct{ now func() time.Time }

func (c systemClock) Now() time.Time                       { return c.now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Options configure the reviews. Index, Files and Directives are required.
type Options struct {
	Index      Index
	Files      Files
	Directives Directives
	// Model writes the reviews; nil: every review is built offline.
	Model llm.Model
	// Role is the llm role of the reviews' calls (the task agents').
	Role string
	// Budget, when set, is the daily token budget reviews spend from.
	Budget Budget
	// LockFile, in the state dir, is held by the one margin process that
	// runs the reviews on schedule (two editors on one vault must not run
	// each review twice); "" runs them without a lock (tests).
	LockFile string
	// Proposer, when set, receives the changes a review proposes;
	// without it they are left out of the note.
	Proposer Proposer
	// OutputFolder is margin's output folder in the vault ("Margin").
	OutputFolder string
	// ContextTokens bounds the prompt's user message (8192 by default).
	ContextTokens int
	Clock         Clock
	Logger        *slog.Logger
}

// Reviews runs the vault's review definitions.
type Reviews struct {
	opts  Options
	store *Store
	log   *slog.Logger

	runMu sync.Mutex // one run at a time: the scheduler's and one by hand share marks
}

// New opens the reviews' tables in store.
func New(st *Store, opts Options) *Reviews {
	if opts.Clock == nil {
		opts.Clock = SystemClock(nil)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.OutputFolder == "" {
		opts.OutputFolder = "Margin"
	}
	if opts.ContextTokens <= 0 {
		opts.ContextTokens = 8192
	}
	if opts.Role == "" {
		opts.Role = "task"
	}
	return &Reviews{opts: opts, store: st, log: opts.Logger}
}

// Store is the reviews' record of runs.
func (r *Reviews) Store() *Store { return r.store }

func (r *Reviews) now() time.Time { return r.opts.Clock.Now() }

// Folder is where the definitions are, and each review's notes under them.
func (r *Reviews) Folder() string { return path.Join(r.opts.OutputFolder, "Reviews") }

// Errors of the reviews.
var (
	ErrNoReview       = fmt.Errorf("review %w", vault.ErrNotFound)
	ErrBadDefinition  = errors.New("invalid review definition")
	ErrBadReviewName  = errors.New("invalid review name")
	ErrBadDate        = errors.New("invalid date")
	errNoReviewNoteOn = fmt.Errorf("review note %w", vault.ErrNotFound)
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$`)

// Scope says which notes a review reads: those under one of Folders, or
// tagged with one of Tags, or, with Tasks, every task note. An empty scope
// is the whole vault. margin's own output folder is never in it.
type Scope struct {
	Folders []string `yaml:"folders"`
	Tags    []string `yaml:"tags"`
	Tasks   bool     `yaml:"tasks"`
}

func (s Scope) empty() bool { return len(s.Folders) == 0 && len(s.Tags) == 0 && !s.Tasks }

// includes reports whether the note at p, with tags, is in scope.
func (s Scope) includes(p string, tags []string, isTask bool) bool {
	return s.empty() || s.inFolder(p) || s.tagged(tags) || (s.Tasks && isTask)
}

func (s Scope) inFolder(p string) bool {
	for _, f := range s.Folders {
		f = strings.Trim(f, "/")
		if f == "" || strings.HasPrefix(p, f+"/") {
			return true
		}
	}
	return false
}

func (s Scope) tagged(tags []string) bool {
	for _, t := range tags {
		if slices.ContainsFunc(s.Tags, func(w string) bool { return strings.EqualFold(strings.TrimPrefix(w, "#"), strings.TrimPrefix(t, "#")) }) {
			return true
		}
	}
	return false
}

// Definition is one review as its file defines it.
type Definition struct {
	Name      string
	Path      string
	Schedule  Schedule
	Scope     Scope
	Directive string // the body: the review's general directive
}

// TemplateName is the template the review's directive is versioned as.
func (d Definition) TemplateName() string { return "review-" + d.Name }

type definitionHeader struct {
	Schedule string `yaml:"schedule"`
	Scope    Scope  `yaml:"scope"`
}

// ParseDefinition reads a definition file.
func ParseDefinition(p string, content []byte) (Definition, error) {
	name := strings.TrimSuffix(path.Base(p), ".md")
	var h definitionHeader
	body, err := note.DecodeFrontmatter(content, &h)
	if err != nil {
		return Definition{}, fmt.Errorf("%w %s: %v", ErrBadDefinition, p, err)
	}
	if h.Schedule == "" {
		return Definition{}, fmt.Errorf("%w %s: no schedule (for example `schedule: daily 07:00`)", ErrBadDefinition, p)
	}
	s, err := ParseSchedule(h.Schedule)
	if err != nil {
		return Definition{}, fmt.Errorf("%w %s: %v", ErrBadDefinition, p, err)
	}
	directive := strings.TrimSpace(string(content[body:]))
	if first, rest, _ := strings.Cut(directive, "\n"); strings.HasPrefix(first, "# ") {
		directive = strings.TrimSpace(rest) // the title is not the directive
	}
	if directive == "" {
		return Definition{}, fmt.Errorf("%w %s: the body is empty; write what the review should look at", ErrBadDefinition, p)
	}
	return Definition{Name: name, Path: p, Schedule: s, Scope: h.Scope, Directive: directive}, nil
}

// Definition reads the definition of the review name.
func (r *Reviews) Definition(name string) (Definition, error) {
	if !nameRE.MatchString(name) {
		return Definition{}, fmt.Errorf("%w %q", ErrBadReviewName, name)
	}
	p := path.Join(r.Folder(), name+".md")
	snap, err := r.opts.Files.Read(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Definition{}, fmt.Errorf("%w: no %s", ErrNoReview, p)
	}
	if err != nil {
		return Definition{}, err
	}
	return ParseDefinition(p, snap.Content)
}

// Definitions reads every definition; one that does not parse is logged
// and left out, so the others still run.
func (r *Reviews) Definitions() ([]Definition, error) {
	entries, err := r.opts.Files.ReadDir(r.Folder())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing review definitions: %w", err)
	}
	var out []Definition
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || !nameRE.MatchString(name) {
			continue
		}
		d, err := r.Definition(name)
		if err != nil {
			r.log.Warn("a review definition does not parse; it does not run", "review", name, "err", err)
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// NotePath is where the run of a review on date writes its note; a second
// run that day (by hand) gets the time it ran too, so no note is overwritten.
func (r *Reviews) NotePath(name, date, hhmmss string) string {
	if hhmmss != "" {
		date += "-" + hhmmss
	}
	return path.Join(r.Folder(), name, date+".md")
}

// Note is a run's note as it is in the vault now.
type Note struct {
	Run     Run
	Content string
}

// Latest is the note of the review's latest finished run, or of its run
// on date (YYYY-MM-DD) when date is set.
func (r *Reviews) Latest(ctx context.Context, name, date string) (Note, error) {
	run, snap, err := r.latest(ctx, name, date)
	return Note{Run: run, Content: string(snap.Content)}, err
}

func (r *Reviews) latest(ctx context.Context, name, date string) (Run, edit.Snapshot, error) {
	if !nameRE.MatchString(name) {
		return Run{}, edit.Snapshot{}, fmt.Errorf("%w %q", ErrBadReviewName, name)
	}
	var run Run
	var ok bool
	var err error
	if date == "" {
		run, ok, err = r.store.Last(ctx, name)
	} else {
		if _, perr := time.Parse(time.DateOnly, date); perr != nil {
			return Run{}, edit.Snapshot{}, fmt.Errorf("%w: date %q is not YYYY-MM-DD", ErrBadDate, date)
		}
		run, ok, err = r.store.OnDate(ctx, name, date)
	}
	switch {
	case err != nil:
		return Run{}, edit.Snapshot{}, err
	case !ok:
		if _, err := r.Definition(name); err != nil {
			return Run{}, edit.Snapshot{}, err // no such review: say so rather than "not run yet"
		}
	}
	switch {
	case !ok && date != "":
		return Run{}, edit.Snapshot{}, fmt.Errorf("%w: %s has no run on %s", errNoReviewNoteOn, name, date)
	case !ok:
		return Run{}, edit.Snapshot{}, fmt.Errorf("%w: %s has not run yet", errNoReviewNoteOn, name)
	}
	snap, err := r.opts.Files.Read(run.Note)
	if errors.Is(err, fs.ErrNotExist) {
		return run, edit.Snapshot{}, fmt.Errorf("%w: %s (deleted since run %d wrote it)", errNoReviewNoteOn, run.Note, run.ID)
	}
	return run, snap, err
}
