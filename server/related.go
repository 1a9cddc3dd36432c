package server

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/workspace"
)

// relatedShown is how many related notes a lens or a hover names.
const relatedShown = 3

// relatedNames are the names of the notes related to the note at p, for
// a lens or a hover: none, never an error, when there are no vectors or
// they cannot be read (the hover or the lens is shown without them).
func (s *Server) relatedNames(ctx context.Context, ws *workspace.Workspace, p string) []string {
	notes, err := ws.RelatedNow(ctx, p, relatedShown)
	if err != nil {
		s.opts.Logger.Debug("related notes left out", "path", p, "err", err)
		return nil
	}
	names := make([]string, len(notes))
	for i, n := range notes {
		names[i] = noteName(n.Path)
	}
	return names
}

// noteName is how a note at vault path p is linked: its file name
// without .md.
func noteName(p string) string { return strings.TrimSuffix(path.Base(p), ".md") }

// relatedLine is the hover's line naming related notes as links.
func relatedLine(names []string) string {
	links := make([]string, len(names))
	for i, n := range names {
		links[i] = "[[" + n + "]]"
	}
	return "Related: " + strings.Join(links, ", ")
}

// showRelated opens, when the client can show documents, the note most
// related to the note at p at its nearest section, and returns them all,
// so a client that cannot still lists them.
func (s *Server) showRelated(ctx context.Context, p string) (protocol.ShowRelatedResult, error) {
	rel, err := s.vaultRelated(ctx, &protocol.RelatedParams{Path: p, Limit: relatedShown})
	if err != nil {
		return protocol.ShowRelatedResult{}, err
	}
	res := protocol.ShowRelatedResult{RelatedResult: rel}
	s.mu.Lock()
	canShow := s.client.Window.ShowDocument.Support
	s.mu.Unlock()
	if !canShow || len(rel.Notes) == 0 {
		return res, nil
	}
	first := rel.Notes[0]
	line := max(first.Line-1, 0)
	at := protocol.Position{Line: line}
	var shown struct {
		Success bool `json:"success"`
	}
	if err := s.conn.Call(ctx, "window/showDocument", map[string]any{
		"uri": fileURI(s.open().Vault.Dir(), first.Path), "takeFocus": true,
		"selection": protocol.Range{Start: at, End: at},
	}, &shown); err != nil {
		return res, fmt.Errorf("window/showDocument: %w", err)
	}
	res.Shown = shown.Success
	return res, nil
}
