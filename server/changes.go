package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/vault/edit"
)

// editor implements edit.Editor: an open note's buffer and version come
// from didOpen/didChange, and an edit goes to the client as
// workspace/applyEdit with that version.
type editor struct{ s *Server }

// Open implements edit.Editor.
func (e editor) Open(path string) (string, int, bool) {
	e.s.docs.mu.Lock()
	defer e.s.docs.mu.Unlock()
	doc, ok := e.s.docs.open[path]
	if !ok {
		return "", 0, false
	}
	return doc.Text, doc.Version, true
}

// applyEditTimeout bounds the wait for the editor's answer: an editor may
// ask the person before applying, but one that never answers must not hold
// up the agents (a change set file is decided on their goroutine).
const applyEditTimeout = 2 * time.Minute

// ApplyEdit implements edit.Editor. It never runs inside Handle (the
// agents call it from a request's goroutine or their own), so waiting for
// the client's answer cannot block the read loop.
func (e editor) ApplyEdit(ctx context.Context, path string, version int, newText string) (bool, error) {
	e.s.docs.mu.Lock()
	doc, ok := e.s.docs.open[path]
	var uri, old string
	var current int
	if ok {
		uri, old, current = doc.URI, doc.Text, doc.Version
	}
	e.s.docs.mu.Unlock()
	if !ok {
		return false, fmt.Errorf("%s: %w", path, edit.ErrNotOpen)
	}
	if current != version {
		// The buffer moved on: newText was made from an older one, and
		// the line edit below would be cut against the newer text. A
		// client that ignores the version would apply it over the
		// person's typing; refused, the caller makes it again (edit.Change).
		return false, nil
	}
	p := protocol.ApplyEditParams{Label: "margin: edit " + path, Edit: protocol.WorkspaceEdit{DocumentChanges: []protocol.TextDocumentEdit{{
		TextDocument: protocol.VersionedTextDocument{URI: uri, Version: version},
		Edits:        []protocol.TextEdit{lineEdit(old, newText, e.s.positionEncoding())},
	}}}}
	var res protocol.ApplyEditResult
	ctx, cancel := context.WithTimeout(ctx, applyEditTimeout)
	defer cancel()
	if err := e.s.conn.Call(ctx, "workspace/applyEdit", p, &res); err != nil {
		return false, fmt.Errorf("workspace/applyEdit: %w", err)
	}
	if !res.Applied && res.FailureReason != "" {
		e.s.logger.Info("the editor refused an edit", "path", path, "reason", res.FailureReason)
	}
	return res.Applied, nil
}

// lineEdit is the smallest whole-line edit that turns old into new: the
// lines both share at the start and the end stay out of it. Whole lines
// keep positions clear of column arithmetic, except at the end of a text
// without a final line break: the edit then ends at the end of the last
// line, counted in enc, rather than at a line that does not exist.
func lineEdit(old, new string, enc positionEncoding) protocol.TextEdit {
	a, b := strings.SplitAfter(old, "\n"), strings.SplitAfter(new, "\n")
	pre, suf := edit.CommonEnds(a, b)
	var e protocol.TextEdit
	e.Range.Start = protocol.Position{Line: pre}
	e.Range.End = protocol.Position{Line: len(a) - suf}
	if last := len(a) - 1; e.Range.End.Line > last {
		e.Range.End = protocol.Position{Line: last, Character: enc.character(a[last], len(a[last]))}
	}
	e.NewText = strings.Join(b[pre:len(b)-suf], "")
	return e
}

func (s *Server) changesList(ctx context.Context, p *protocol.ChangesListParams) (protocol.ChangesListResult, error) {
	switch p.Status {
	case "", "all", changes.SetPending, changes.SetPartial, changes.SetResolved, changes.SetExpired, changes.SetSuperseded:
	default:
		return protocol.ChangesListResult{}, invalidParams("status", fmt.Sprintf("must be pending, partially-resolved, resolved, expired, superseded or all, got %q", p.Status))
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ChangesListResult{}, err
	}
	f := changes.ChangeSetFilter{Status: p.Status}
	if p.Task != "" {
		if f.Task, err = vaultPath(v, "task", p.Task); err != nil {
			return protocol.ChangesListResult{}, err
		}
	}
	sets, err := ws.Changes.ChangeSets(ctx, f)
	return protocol.ChangesListResult{ChangeSets: wire.ChangeSets(sets)}, err
}

func (s *Server) changesDecide(ctx context.Context, p *protocol.ChangesDecideParams) (protocol.ChangeSet, error) {
	if p.ID == "" {
		return protocol.ChangeSet{}, invalidParams("id", "is required")
	}
	if len(p.Decisions) == 0 {
		return protocol.ChangeSet{}, invalidParams("decisions", "at least one decision is required")
	}
	for i, d := range p.Decisions {
		if d.Item == "" {
			return protocol.ChangeSet{}, invalidParams(fmt.Sprintf("decisions[%d].item", i), "is required")
		}
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ChangeSet{}, err
	}
	cs, err := ws.Changes.Decide(ctx, p.ID, wire.ItemDecisions(p.Decisions))
	if errors.Is(err, changes.ErrBadVerdict) {
		return protocol.ChangeSet{}, invalidParams("decisions.verdict", err.Error())
	}
	return wire.ChangeSet(cs), err
}

func (s *Server) changesConfirmAll(ctx context.Context, p *protocol.ChangesConfirmAllParams) (protocol.ChangeSet, error) {
	if p.ID == "" {
		return protocol.ChangeSet{}, invalidParams("id", "is required")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ChangeSet{}, err
	}
	cs, err := ws.Changes.ConfirmAll(ctx, p.ID)
	return wire.ChangeSet(cs), err
}

func (s *Server) changesPreview(ctx context.Context, p *protocol.ChangesPreviewParams) (protocol.ChangePreview, error) {
	switch {
	case p.ID == "":
		return protocol.ChangePreview{}, invalidParams("id", "is required")
	case p.Item == "":
		return protocol.ChangePreview{}, invalidParams("item", "is required")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ChangePreview{}, err
	}
	pv, err := ws.Changes.Preview(ctx, p.ID, p.Item)
	if err != nil {
		return protocol.ChangePreview{}, err
	}
	return wire.ChangePreview(pv), nil
}

func (s *Server) changesUndo(ctx context.Context, p *protocol.ChangesUndoParams) (protocol.ChangesUndoResult, error) {
	switch {
	case p.Write < 0:
		return protocol.ChangesUndoResult{}, invalidParams("write", fmt.Sprintf("must be a write id from margin's history, got %d", p.Write))
	case p.Write > 0 && (p.ID != "" || p.Item != "" || len(p.Items) > 0):
		return protocol.ChangesUndoResult{}, invalidParams("write", "undoes one write: give it without id or items")
	case p.Write == 0 && p.ID == "":
		return protocol.ChangesUndoResult{}, invalidParams("id", "is required (or write)")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.ChangesUndoResult{}, err
	}
	ctx = edit.WithCause(ctx, edit.Cause{Actor: "person via " + s.clientName()})
	if p.Write > 0 {
		u, err := ws.Changes.UndoWrite(ctx, ws.History, p.Write)
		if err != nil {
			return protocol.ChangesUndoResult{}, err
		}
		return protocol.ChangesUndoResult{Write: &protocol.UndoneWrite{Write: u.Write, Path: u.Path}}, nil
	}
	items := p.Items
	if p.Item != "" {
		items = append([]string{p.Item}, items...)
	}
	cs, err := ws.Changes.Undo(ctx, ws.History, p.ID, items)
	return protocol.ChangesUndoResult{ChangeSet: new(wire.ChangeSet(cs))}, err
}

func (s *Server) decisionsList(ctx context.Context, p *protocol.DecisionsListParams) (protocol.DecisionsListResult, error) {
	if p.Limit < 0 || p.Limit > 1000 {
		return protocol.DecisionsListResult{}, invalidParams("limit", fmt.Sprintf("must be between 1 and 1000, got %d", p.Limit))
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.DecisionsListResult{}, err
	}
	f := changes.DecisionFilter{Agent: p.Agent, Limit: p.Limit}
	if p.Task != "" {
		if f.Task, err = vaultPath(v, "task", p.Task); err != nil {
			return protocol.DecisionsListResult{}, err
		}
	}
	ds, err := ws.Changes.Store().Decisions(ctx, f)
	return protocol.DecisionsListResult{Decisions: wire.Decisions(ds)}, err
}
