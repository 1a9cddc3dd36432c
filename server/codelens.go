package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/note"
)

type codeLensParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
}

// lens is a code lens over r that runs command with args.
func lens(r protocol.Range, title, command string, args ...any) protocol.CodeLens {
	return protocol.CodeLens{Range: r, Command: protocol.Command{Title: title, Command: command, Arguments: args}}
}

// lineRange is the range of line n of text, in enc.
func lineRange(text string, n int, enc positionEncoding) protocol.Range {
	start, end, _ := lineSpan(text, n)
	return protocol.Range{Start: protocol.Position{Line: n}, End: protocol.Position{Line: n, Character: enc.character(text[start:end], end-start)}}
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

// codeLens shows the notes related to a note when it has vectors, a task
// note's TLDR and its open change sets, and an
// Apply and a Reject on each open item of a change set file, an Undo on
// each applied one (SPEC §6, §11).
func (s *Server) codeLens(ctx context.Context, p *codeLensParams) ([]protocol.CodeLens, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return nil, err
	}
	lenses := []protocol.CodeLens{}
	cs, isSet, err := ws.Changes.Store().ChangeSetAt(ctx, path)
	if err != nil {
		return nil, err
	}
	var (
		a       task.Agent
		noAgent bool // a note an AI application proposed changes to, or a task without an agent yet
	)
	if !isSet {
		a, err = ws.Agents.Store().AgentForTask(ctx, path)
		noAgent = errors.Is(err, vault.ErrNotFound)
		if err != nil && !noAgent {
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
				if it.ID != c.BlockID {
					continue
				}
				r := lineRange(src, c.Line-1, enc)
				switch it.Status {
				case changes.ItemPending, changes.ItemDeferred:
					lenses = append(lenses,
						lens(r, "Apply"+proposedBy(cs), "margin.confirm", cs.ID, it.ID),
						lens(r, "Reject", "margin.reject", cs.ID, it.ID),
						lens(r, "Diff", "margin.preview", cs.ID, it.ID))
				case changes.ItemConfirmed:
					lenses = append(lenses, lens(r, "Undo", "margin.undo", cs.ID, it.ID))
				case changes.ItemUndone:
					lenses = append(lenses, lens(r, "Apply again", "margin.undo", cs.ID, it.ID))
				}
			}
		}
		return lenses, nil
	}
	top := lineRange(src, 0, enc)
	if names := s.relatedNames(ctx, ws, path); len(names) > 0 {
		lenses = append(lenses, lens(top, "Related: "+strings.Join(names, ", "), "margin.showRelated", path))
	}
	if !noAgent {
		if rep, err := s.taskReport(v, a); err == nil && rep.TLDR != "" {
			lenses = append(lenses, lens(top, "TLDR: "+strings.Join(strings.Fields(rep.TLDR), " "), "margin.wake", a.ID))
		}
	}
	sets, err := ws.Changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: path})
	if err != nil {
		return nil, err
	}
	for _, cs := range sets {
		n := openItems(cs)
		if n == 0 {
			continue
		}
		lenses = append(lenses,
			lens(top, pluralChanges(n)+proposedBy(cs), "margin.showChanges", cs.ID),
			lens(top, "Apply all", "margin.confirmAll", cs.ID))
	}
	return lenses, nil
}

// proposedBy names the AI application that proposed a change set over
// MCP, so the person sees whose proposal a lens applies; "" for an agent's.
func proposedBy(cs changes.ChangeSet) string {
	if !changes.IsClient(cs.Agent) {
		return ""
	}
	return " (from " + strings.TrimPrefix(cs.Agent, changes.ClientPrefix) + ")"
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
	return task.ReadReport(v.Root(), v.Options().OutputFolder, a)
}

// taskReportAt is the report on the task at taskPath, found through its agent:
// the report's name is the agent's, not the task's.
func (s *Server) taskReportAt(ctx context.Context, ws *workspace.Workspace, v *vault.Vault, taskPath string) (task.Report, error) {
	a, err := ws.Agents.Store().AgentForTask(ctx, taskPath)
	if errors.Is(err, task.ErrNotFound) {
		return task.Report{}, fmt.Errorf("no report on %s yet: the task has no agent: %w", taskPath, vault.ErrNotFound)
	}
	if err != nil {
		return task.Report{}, err
	}
	return s.taskReport(v, a)
}
