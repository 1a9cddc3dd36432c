package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/note"
)

// The report's frontmatter keys that say its latest wake could not use the
// model's reply (issue 33: a model never blanks a report). A report the
// agent publishes again is written without them.
const (
	keyFailedRun = "failed_run"
	keyFailedWhy = "failed_why"
)

// markFailed keeps the report as it stands after a wake whose model never
// published a usable one, and says so in its frontmatter: the run and why.
// A task with no report yet gets the report margin writes without a model,
// so the person is shown the task's structure rather than nothing. A
// report changed since the wake read it is left alone: the person is at it.
func (w *waking) markFailed(ctx context.Context, why string) error {
	if !w.hasReport {
		task := w.task.Task
		if task == nil {
			task = &note.Task{Title: w.task.Title}
		}
		summary, body := taskStructure(task, w.task.Checklist, w.entries)
		content := fmt.Sprintf("> [!warning] No report from the model yet\n> The model's reply could not be used (run %d), so this report lists the task's structure only.\n\n", w.run) + body
		if err := w.writeReport(ctx, "Structure only (the model's reply could not be used): "+summary+".", content, generatedOffline); err != nil {
			return err
		}
	}
	changed := errors.New("the report changed since the wake read it")
	res, err := w.rt.v.Files.Change(w.cause(ctx), w.rt.opts.Editor, w.reportPath(), func(cur edit.Current) ([]byte, error) {
		if cur.Fingerprint() != w.reportBase {
			return nil, changed
		}
		out, err := edit.SetFrontmatter(cur.Content, keyFailedRun, w.run)
		if err != nil {
			return nil, err
		}
		return edit.SetFrontmatter(out, keyFailedWhy, note.OneLine(why))
	})
	switch {
	case errors.Is(err, changed):
		return nil
	case err != nil:
		return fmt.Errorf("marking the report after run %d: %w", w.run, err)
	}
	w.reportBase = res.Fingerprint
	return w.rt.store.setReport(ctx, w.agent.ID, string(res.Fingerprint), ParseReport(w.reportPath(), res.Content).GeneratedBy)
}
