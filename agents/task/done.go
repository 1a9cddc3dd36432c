package task

import (
	"context"
	"fmt"

	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

// settled reports whether the wake's task is done or cancelled: its wake
// costs no model call (SPEC §4.1 "Economy").
func (w *waking) settled() bool {
	return w.task.Task != nil && freeStatus(w.task.Task.Status)
}

// writeSettled is the wake of a done or cancelled task. A report a model
// wrote stands; otherwise the structural report is written, and refreshed
// each time the task changes. The run completes, so a no-op save skips
// its run key; but what the agent saw is left as its last model wake had
// it (runEnd.modelFree): when the task is reopened, the model is shown
// everything that changed since it last looked.
func (w *waking) writeSettled(ctx context.Context) (runEnd, error) {
	status := w.task.Task.Status
	end := runEnd{status: RunCompleted, modelFree: true, detail: "the task is " + status + ": no model call"}
	if w.hasReport && w.report.GeneratedBy != generatedOffline && w.report.GeneratedBy != generatedMargin {
		end.detail += "; the model's last report stands"
		return end, nil
	}
	tldr, content := settledReport(w.task.Task, w.task.Checklist, w.entries)
	if err := w.writeReport(ctx, tldr, content, generatedOffline); err != nil {
		return runEnd{status: RunFailed, detail: err.Error()}, nil
	}
	end.detail += "; structural report written"
	return end, nil
}

// settledReport is the report on a done or cancelled task that no model
// reported on: its structure, and how to bring the agent back.
func settledReport(t *note.Task, checklist []note.ChecklistItem, entries []index.EntryMeta) (tldr, content string) {
	summary, body := taskStructure(t, checklist, entries)
	return fmt.Sprintf("Task %s: %s.", t.Status, summary),
		fmt.Sprintf("> [!note] Task %s\n> margin wakes no model for a %s task; this report lists its structure and follows the task's changes. "+
			"Set its status back to open or in-progress and its agent wakes with the model again.\n\n", t.Status, t.Status) + body
}
