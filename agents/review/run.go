package review

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
	"github.com/margin-md/margin/vault/store"
)

// GeneratedOffline is generated_by of a review built from the vault's
// structure alone.
const GeneratedOffline = "offline"

// reportDirective is the report half of every review's template: the
// form of the note, which the person's directive (the general half) does
// not need to repeat.
const reportDirective = `Write the review as a TLDR of one or two sentences and a few sections, each a short list of claims.
Every claim cites the notes it rests on with their links exactly as given, for example [[Projects/Alpha#Plan]]; a claim you cannot cite, leave out.
Propose a change to a task note only when the notes clearly call for it, with the reason.`

// RunNow runs the review name by hand, now, whatever its schedule. A run
// of it that a crash cut is finished or redone instead, unless another
// margin process holds the reviews' lock (it may be doing that run).
func (r *Reviews) RunNow(ctx context.Context, name string) (Run, error) {
	def, err := r.Definition(name)
	if err != nil {
		return Run{}, err
	}
	if cut, err := r.cutRun(ctx, name); err != nil || cut.ID != 0 {
		return cut, err
	}
	return r.runDue(ctx, def, time.Time{})
}

// cutRun finishes or redoes the run of name a crash cut, when there is one
// and no other process runs the reviews; the zero Run when there is none.
func (r *Reviews) cutRun(ctx context.Context, name string) (Run, error) {
	if r.opts.LockFile != "" {
		l, err := store.TryLock(r.opts.LockFile)
		if errors.Is(err, store.ErrLocked) {
			return Run{}, nil
		}
		if err != nil {
			return Run{}, fmt.Errorf("taking the reviews' lock: %w", err)
		}
		defer l.Unlock()
	}
	runs, err := r.store.Unfinished(ctx)
	if err != nil {
		return Run{}, err
	}
	for _, run := range runs {
		if run.Name == name {
			return r.resume(ctx, run)
		}
	}
	return Run{}, nil
}

// runDue runs def for its scheduled time due (zero: by hand).
func (r *Reviews) runDue(ctx context.Context, def Definition, due time.Time) (Run, error) {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	// A directive the template library refuses fails here, before the
	// run is recorded: there is no run to finish until the person fixes it.
	_, replaced, err := r.directive(ctx, def)
	if err != nil {
		return Run{}, err
	}
	now := r.now()
	at := now
	if !due.IsZero() {
		at = due
	}
	run := Run{Name: def.Name, Due: due, Date: at.Format(time.DateOnly), To: now, Started: now}
	last, ok, err := r.store.Last(ctx, def.Name)
	if err != nil {
		return Run{}, err
	}
	if ok {
		run.From = last.To
	}
	run.Note = r.NotePath(def.Name, run.Date, "")
	if _, taken, err := r.store.OnDate(ctx, def.Name, run.Date); err != nil {
		return Run{}, err
	} else if taken {
		run.Note = r.NotePath(def.Name, run.Date, now.Format("150405"))
	}
	if run.ID, err = r.store.begin(ctx, run); err != nil {
		return Run{}, err
	}
	return r.execute(ctx, def, run, replaced)
}

// execute does the run its row records, up to marking it done. A run cut
// by a crash or ctx is left 'running', for Resume. replaced is what
// runDue's look at the directive said of it (see directive).
func (r *Reviews) execute(ctx context.Context, def Definition, run Run, replaced string) (Run, error) {
	tmpl, again, err := r.directive(ctx, def)
	if err != nil {
		return run, err
	}
	replaced = cmp.Or(again, replaced)
	run.Template = tmpl.Label()
	// Entries of a note the last run did not read are new when dated in
	// this run's period (for a first run, one schedule period): not every
	// entry of the vault.
	lookback := run.From.Format(time.DateOnly)
	if prev, ok := def.Schedule.Prev(run.To.Add(-time.Minute)); ok && run.From.IsZero() {
		lookback = prev.Format(time.DateOnly)
	}
	f, err := r.gather(ctx, def, run.To, lookback)
	if err != nil {
		return run, err
	}
	w := written{def: def, run: run, facts: f, ev: evidence{}, replaced: replaced}
	w.offerFacts()
	switch {
	case f.nothingNew():
		w.note = "Nothing new in scope since the last review: no model call."
	case r.opts.Model == nil:
		w.away = "no model is configured"
	case r.opts.Budget != nil && r.opts.Budget.BudgetSpent(r.now()):
		w.away = "the daily token budget (agents.daily_token_budget) is spent"
	default:
		if err := r.write(ledger.WithScope(ctx, "review:"+strconv.FormatInt(run.ID, 10)), tmpl, &w); err != nil {
			return run, err
		}
	}
	if ctx.Err() != nil {
		return run, ctx.Err()
	}
	w.run.GeneratedBy = GeneratedOffline
	if w.model != "" {
		w.run.GeneratedBy = w.model
	}
	if w.away != "" {
		w.run.Detail = "offline: " + w.away
	}
	content := w.render()
	if err := r.writeNote(ctx, w.run, content); err != nil {
		return w.run, err
	}
	w.run.Finished = r.now()
	if err := r.store.finish(ctx, w.run, &f.marks); err != nil {
		return w.run, err
	}
	w.run.Status = StatusDone
	r.log.Info("review written", "review", def.Name, "note", w.run.Note, "generated_by", w.run.GeneratedBy, "prompt_tokens", w.run.PromptTokens)
	return w.run, nil
}

// directive is the template version the run uses: the definition's body,
// adopted as a new version when the person changed it since it was last
// adopted, else the template's active version (which evolution or a hand
// edit of the template may have moved on). replaced says so when the
// person's edit of the definition replaces an evolved version.
func (r *Reviews) directive(ctx context.Context, def Definition) (t templates.Template, replaced string, err error) {
	adopted, err := r.store.adopted(ctx, def.Name)
	if err != nil {
		return templates.Template{}, "", err
	}
	active, err := r.opts.Directives.Active(ctx, def.TemplateName())
	switch {
	case err != nil && !errors.Is(err, vault.ErrNotFound):
		return templates.Template{}, "", err
	case err == nil && adopted == def.Directive:
		return active, "", nil
	}
	t, err = r.opts.Directives.Adopt(ctx, def.TemplateName(), templates.KindReview, def.Directive, reportDirective)
	if err != nil {
		return t, "", fmt.Errorf("versioning the directive of review %s: %w", def.Name, err)
	}
	if active.AuthoredBy == templates.ByEvolution && t.Version != active.Version {
		// The person's edit wins, as any edit of theirs does; the
		// evolved version they approved is one rollback away.
		replaced = fmt.Sprintf("Your edit of %s replaces the evolved directive %s with %s.", def.Path, active.Label(), t.Label())
	}
	return t, replaced, r.store.adopt(ctx, def.Name, def.Directive)
}

// writeNote writes the run's note atomically. A note already carrying
// this run's id is the run's own, written before a crash: it stands.
func (r *Reviews) writeNote(ctx context.Context, run Run, content []byte) error {
	var base edit.Fingerprint
	snap, err := r.opts.Files.Read(run.Note)
	switch {
	case err == nil:
		base = snap.Fingerprint
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("reading %s: %w", run.Note, err)
	}
	ctx = edit.WithCause(ctx, edit.Cause{Actor: "review " + run.Name})
	if _, err := r.opts.Files.WriteContext(ctx, run.Note, base, content); err != nil {
		return fmt.Errorf("writing review %s: %w", run.Note, err)
	}
	return nil
}

// noteRun is the run id a review note's frontmatter names, 0 for none.
func noteRun(content []byte) int64 {
	var h struct {
		Run int64 `yaml:"run"`
	}
	if _, err := note.DecodeFrontmatter(content, &h); err != nil {
		return 0
	}
	return h.Run
}

// Resume finishes the runs a crash or a shutdown cut, each once: a run
// whose note is written is marked done as it is (its marks are not
// recorded, so the next run sees its changes again rather than miss
// them); any other is redone under the same row, for the same period.
func (r *Reviews) Resume(ctx context.Context) error {
	runs, err := r.store.Unfinished(ctx)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if _, err := r.resume(ctx, run); err != nil {
			r.log.Warn("an interrupted review run could not be finished", "review", run.Name, "run", run.ID, "err", err)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

func (r *Reviews) resume(ctx context.Context, run Run) (Run, error) {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	if snap, err := r.opts.Files.Read(run.Note); err == nil && noteRun(snap.Content) == run.ID {
		var h struct {
			GeneratedBy string `yaml:"generated_by"`
			Template    string `yaml:"template"`
		}
		_, _ = note.DecodeFrontmatter(snap.Content, &h) // noteRun read it
		run.GeneratedBy, run.Template, run.Finished, run.Detail = h.GeneratedBy, h.Template, r.now(), "finished after a restart"
		r.log.Info("an interrupted review run had written its note; marked done", "review", run.Name, "run", run.ID)
		run.Status = StatusDone
		return run, r.store.finish(ctx, run, nil)
	}
	def, err := r.Definition(run.Name)
	if err != nil {
		return run, err
	}
	r.log.Info("redoing an interrupted review run", "review", run.Name, "run", run.ID)
	return r.execute(ctx, def, run, "")
}
