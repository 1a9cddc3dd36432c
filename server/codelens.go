package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

type codeLensParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
}

type command struct {
	Title     string `json:"title"`
	Command   string `json:"command"`
	Arguments []any  `json:"arguments,omitempty"`
}

type codeLens struct {
	Range   lspRange `json:"range"`
	Command command  `json:"command"`
}

// lineRange is the range of line n of text, in enc.
func lineRange(text string, n int, enc positionEncoding) lspRange {
	start, end, _ := lineSpan(text, n)
	return lspRange{Start: position{Line: n}, End: position{Line: n, Character: enc.character(text[start:end], end-start)}}
}

// openItems counts the items of a change set that wait for a decision.
func openItems(cs changes.ChangeSet) int {
	n := 0
	for _, it := range cs.Items {
		if it.Status == changes.ItemPending || it.Status == changes.ItemDeferred {
			n++
		}
	}
	return n
}

// codeLens shows a task note's TLDR and its open change sets, and an
// Apply and a Reject on each open item of a change set file (SPEC §6).
func (s *Server) codeLens(ctx context.Context, p *codeLensParams) ([]codeLens, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	rt, v, err := s.agentsReady(ctx)
	if err != nil {
		return nil, err
	}
	lenses := []codeLens{}
	cs, isSet, err := rt.Changes().Store().ChangeSetAt(ctx, path)
	if err != nil {
		return nil, err
	}
	var a task.Agent
	if !isSet {
		a, err = rt.Store().AgentForTask(ctx, path)
		if errors.Is(err, vault.ErrNotFound) {
			return lenses, nil // not a task with an agent: nothing to show
		}
		if err != nil {
			return nil, err
		}
	}
	text, err := s.documentText(v, path)
	if err != nil {
		return nil, err
	}
	src, enc := string(text), s.positionEncoding()
	if isSet {
		for _, c := range note.Parse(path, text, note.Options{}).Checklist {
			for _, it := range cs.Items {
				if it.ID != c.BlockID || it.Status != changes.ItemPending && it.Status != changes.ItemDeferred {
					continue
				}
				r := lineRange(src, c.Line-1, enc)
				lenses = append(lenses,
					codeLens{r, command{Title: "Apply", Command: "margin.confirm", Arguments: []any{cs.ID, it.ID}}},
					codeLens{r, command{Title: "Reject", Command: "margin.reject", Arguments: []any{cs.ID, it.ID}}})
			}
		}
		return lenses, nil
	}
	top := lineRange(src, 0, enc)
	if rep, err := s.taskReport(v, a); err == nil && rep.TLDR != "" {
		lenses = append(lenses, codeLens{top, command{Title: "TLDR: " + strings.Join(strings.Fields(rep.TLDR), " "), Command: "margin.wake", Arguments: []any{a.ID}}})
	}
	sets, err := rt.Changes().ChangeSets(ctx, changes.ChangeSetFilter{Task: path})
	if err != nil {
		return nil, err
	}
	for _, cs := range sets {
		n := openItems(cs)
		if n == 0 {
			continue
		}
		lenses = append(lenses,
			codeLens{top, command{Title: pluralChanges(n), Command: "margin.showChanges", Arguments: []any{cs.ID}}},
			codeLens{top, command{Title: "Apply all", Command: "margin.confirmAll", Arguments: []any{cs.ID}}})
	}
	return lenses, nil
}

// documentText is the note as the person sees it: the editor's buffer when
// it is open, else the file.
func (s *Server) documentText(v *vault.Vault, path string) ([]byte, error) {
	if text, _, ok := (editor{s}).Open(path); ok {
		return []byte(text), nil
	}
	snap, err := v.Root().Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, vault.ErrNotFound)
	}
	return snap.Content, err
}

// taskReport is the report of agent a as the person sees it: the editor's
// buffer when the report is open there, else the file.
func (s *Server) taskReport(v *vault.Vault, a task.Agent) (task.Report, error) {
	p := task.ReportPath(v.Options().OutputFolder, a.OutputName)
	if text, _, ok := (editor{s}).Open(p); ok {
		rep := task.ParseReport(p, []byte(text))
		if rep.Task == "" {
			rep.Task = a.Task
		}
		return rep, nil
	}
	return task.ReadReport(v, a)
}

// taskReportAt is the report on the task at taskPath, found through its agent:
// the report's name is the agent's, not the task's.
func (s *Server) taskReportAt(ctx context.Context, rt *agentsRoom, v *vault.Vault, taskPath string) (task.Report, error) {
	a, err := rt.Store().AgentForTask(ctx, taskPath)
	if errors.Is(err, task.ErrNotFound) {
		return task.Report{}, fmt.Errorf("no report on %s yet: the task has no agent: %w", taskPath, vault.ErrNotFound)
	}
	if err != nil {
		return task.Report{}, err
	}
	return s.taskReport(v, a)
}
