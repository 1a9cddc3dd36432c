package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/margin-md/margin/agents/changes"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/note"
)

type hoverParams struct {
	TextDocument struct {
		URI string `json:"uri"`
	} `json:"textDocument"`
	Position protocol.Position `json:"position"`
}

// hover shows, on a link to a task note anywhere in any note, what the
// task's agent knows: its TLDR, the task's status and due date, and how
// many changes wait for a decision (SPEC §6), and on a link to any note
// the notes related to it when it has vectors. Anywhere else there is no
// hover (a null result).
func (s *Server) hover(ctx context.Context, p *hoverParams) (*protocol.Hover, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return nil, err
	}
	text, err := s.documentText(v, path)
	if err != nil {
		return nil, err
	}
	enc := s.positionEncoding()
	src := string(text)
	off := enc.offsetOf(src, p.Position)
	var link *note.Link
	for _, l := range s.parse(v, path, text).Links {
		if l.Offset <= off && off < l.End {
			link = &l
			break
		}
	}
	if link == nil {
		return nil, nil
	}
	target, err := v.Index().ResolveLink(ctx, path, link.Target)
	if errors.Is(err, index.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	taskText, err := s.documentText(v, target)
	if errors.Is(err, vault.ErrNotFound) {
		return nil, nil // indexed, but gone since
	}
	if err != nil {
		return nil, err
	}
	r := protocol.Range{Start: enc.positionOf(src, link.Offset), End: enc.positionOf(src, link.End)}
	related := s.relatedNames(ctx, ws, target)
	task := s.parse(v, target, taskText)
	if task.Task == nil {
		if len(related) == 0 {
			return nil, nil
		}
		return &protocol.Hover{Contents: protocol.MarkupContent{Kind: "markdown", Value: relatedLine(related)}, Range: r}, nil
	}
	sets, err := ws.Changes.ChangeSets(ctx, changes.ChangeSetFilter{Task: target})
	if err != nil {
		return nil, err
	}
	pending := 0
	for _, cs := range sets {
		pending += openItems(cs)
	}

	var b strings.Builder
	title := task.Task.Title
	if title == "" {
		title = target
	}
	fmt.Fprintf(&b, "**%s**\n\n", title)
	switch rep, err := s.taskReportAt(ctx, ws, v, target); {
	case err == nil && rep.TLDR != "":
		fmt.Fprintf(&b, "%s\n\n", rep.TLDR)
	case err == nil || errors.Is(err, vault.ErrNotFound):
		b.WriteString("_No report yet._\n\n")
	default:
		return nil, err
	}
	status, due := task.Task.Status, task.Task.Due
	if status == "" {
		status = "no status"
	}
	if due == "" {
		due = "no due date"
	} else {
		due = "due " + due
	}
	fmt.Fprintf(&b, "%s · %s · %s", status, due, pluralChanges(pending))
	if len(related) > 0 {
		b.WriteString("\n\n" + relatedLine(related))
	}
	return &protocol.Hover{Contents: protocol.MarkupContent{Kind: "markdown", Value: b.String()}, Range: r}, nil
}

// parse parses a note the way the index does.
func (s *Server) parse(v *vault.Vault, path string, text []byte) *note.Note {
	return note.Parse(path, text, v.ParseOptions())
}

func pluralChanges(n int) string {
	if n == 1 {
		return "1 suggested change"
	}
	return fmt.Sprintf("%d suggested changes", n)
}
