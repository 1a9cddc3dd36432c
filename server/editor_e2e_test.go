package server_test

import (
	"strings"
	"testing"

	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/server/editortest"
	"github.com/margin-md/margin/server/protocol"
)

// set_task_language on a task note open in the editor edits neither the
// buffer nor the file: margin keeps the language (SPEC §4.1), shown in
// the agent's record and its report.
func TestSetTaskLanguageLeavesAnOpenNoteAlone(t *testing.T) {
	fake := llmtest.NewOllama(t, taskModel)
	firstWakeProposes(fake, "QA left.", llmtest.ToolCall{Name: "set_task_language", Args: map[string]any{"language": "en"}})
	dir := editortest.SampleVault(t)
	e := editortest.Start(t, agentEnv(fake.URL))
	e.Initialize(dir)
	edits := editorAnswering(e, true)
	disk := readFile(t, dir, shipTask)
	openNote(e, dir, shipTask, 7, disk+"\nUnsaved: ask Dana about 🚀 launch.\n")
	a := createAgent(t, e, shipTask)
	waitWakes(t, e, a.ID, 1)

	if readFile(t, dir, shipTask) != disk {
		t.Error("the task note was written on disk")
	}
	if reqs := edits(); len(reqs) != 0 {
		t.Errorf("applyEdit requests %+v, want none", reqs)
	}
	var act protocol.Activity
	e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
	var result string
	for _, m := range act.Messages {
		if m.Role == "tool" && m.ToolName == "set_task_language" {
			result = m.Content
		}
	}
	if !strings.Contains(result, "language set to en") || !strings.Contains(result, "the task note is not changed") {
		t.Errorf("the model was told %q", result)
	}
	var rep protocol.Report
	e.MustCall("reports/get", map[string]any{"id": a.ID}, &rep)
	if rep.Language != "en" {
		t.Errorf("report language %q, want en", rep.Language)
	}
}

func TestLogAppendOnAnOpenNoteGoesThroughTheEditor(t *testing.T) {
	const daily = "Daily/2026-11-21.md"
	for _, tc := range []struct {
		name    string
		applied bool
	}{
		{"editor applies", true},
		{"editor refuses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := editortest.SampleVault(t)
			e := startQuery(t, dir, nil)
			edits := editorAnswering(e, tc.applied)
			disk := readFile(t, dir, daily)
			buffer := disk + "\n## 21:00\nUnsaved: 東京 trip 🚄 booked.\n"
			openNote(e, dir, daily, 5, buffer)

			var l struct{ Path, Heading string }
			err := e.Call("log/append", map[string]any{"text": "Walked 5k in the rain.", "time": "2026-11-21T21:10"}, &l)
			if readFile(t, dir, daily) != disk {
				t.Error("the open daily note was written on disk")
			}
			reqs := edits()
			if len(reqs) != 1 || reqs[0].Edit.DocumentChanges[0].TextDocument.Version != 5 || reqs[0].Edit.DocumentChanges[0].TextDocument.URI != uriOf(dir, daily) {
				t.Fatalf("applyEdit requests = %+v, want one edit of the daily note at version 5", reqs)
			}
			if want := buffer + "\n## 21:10\nWalked 5k in the rain.\n"; applyLineEdits(t, buffer, reqs[0]) != want {
				t.Errorf("the editor's edit gives\n%s\nwant\n%s", applyLineEdits(t, buffer, reqs[0]), want)
			}
			if tc.applied {
				if err != nil || l.Path != daily || l.Heading != "21:10" {
					t.Errorf("log/append = %+v, %v", l, err)
				}
				return
			}
			if err == nil || err.Code != -33001 || !strings.Contains(err.Message, "refused") || !strings.Contains(err.Message, "nothing was written") {
				t.Errorf("log/append refused by the editor: %v, want -33001 saying nothing was written", err)
			}
		})
	}
}

func TestReportAndJournalOpenInTheEditorAreWrittenThroughIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied bool
	}{
		{"editor applies", true},
		{"editor refuses", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := llmtest.NewOllama(t, taskModel)
			reportingModel(fake)
			dir := editortest.SampleVault(t)
			e := editortest.Start(t, agentEnv(fake.URL))
			e.Initialize(dir)
			edits := editorAnswering(e, tc.applied)
			a := createAgent(t, e, shipTask)
			waitWakes(t, e, a.ID, 1)

			disk := readFile(t, dir, shipReport)
			buffer := disk + "\nUnsaved: Dana says 🚀 Friday.\n"
			openNote(e, dir, shipReport, 3, buffer)
			journal := readFile(t, dir, shipJourn)
			openNote(e, dir, shipJourn, 8, journal)
			e.MustCall("agents/control", map[string]any{"id": a.ID, "action": "wake"}, nil)
			// A refused report is a wake that did not publish: it ends
			// failed, to be retried.
			var act protocol.Activity
			poll(t, "the requested wake to end", func() bool {
				e.MustCall("agents/activity", map[string]any{"id": a.ID}, &act)
				return len(act.Runs) > 0 && act.Runs[0].Reason == "requested" && !act.Runs[0].Finished.IsZero()
			})

			if readFile(t, dir, shipReport) != disk || readFile(t, dir, shipJourn) != journal {
				t.Error("the open report or journal was written on disk")
			}
			var reports, journals []protocol.ApplyEditParams
			for _, r := range edits() {
				switch dc := r.Edit.DocumentChanges[0]; {
				case dc.TextDocument.URI == uriOf(dir, shipReport) && dc.TextDocument.Version == 3:
					reports = append(reports, r)
				case dc.TextDocument.URI == uriOf(dir, shipJourn) && dc.TextDocument.Version == 8:
					journals = append(journals, r)
				default:
					t.Errorf("applyEdit of %s version %d, want the report at 3 or the journal at 8", dc.TextDocument.URI, dc.TextDocument.Version)
				}
			}
			if len(reports) == 0 || len(journals) == 0 || tc.applied && (len(reports) != 1 || len(journals) != 1) {
				t.Fatalf("%d report and %d journal edits, want one each (or one a turn when refused)", len(reports), len(journals))
			}
			if got := applyLineEdits(t, buffer, reports[0]); !strings.Contains(got, "wake: 2\n") || strings.Contains(got, "Unsaved:") {
				t.Errorf("the editor's report after the edit:\n%s\nwant the second wake's report", got)
			}
			if got := applyLineEdits(t, journal, journals[0]); !strings.HasPrefix(got, journal) || !strings.HasSuffix(got, "Demo went well; Acme wants a flag first.\n") {
				t.Errorf("the editor's journal after the edit:\n%s\nwant one observation appended", got)
			}
			// The agent was shown the report as the person sees it.
			reqsToModel := fake.Requests()
			if msg := userMessage(reqsToModel[len(reqsToModel)-1]); !strings.Contains(msg, "Unsaved: Dana says 🚀 Friday.") {
				t.Errorf("the wake's prompt lacks the buffer's report:\n%s", msg)
			}
			var result string
			for _, m := range act.Messages {
				if m.Run == act.Runs[0].ID && m.Role == "tool" && m.ToolName == "update_report" {
					result = m.Content
				}
			}
			if tc.applied && (!strings.Contains(result, "report published") || act.Runs[0].Status != "completed") ||
				!tc.applied && !(strings.Contains(result, "refused") && strings.Contains(result, "nothing was written")) {
				t.Errorf("the model was told %q", result)
			}
		})
	}
}
