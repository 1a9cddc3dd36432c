package server

import (
	"context"
	"slices"
	"sync"
)

// documents tracks the notes open in the editor. For an open note the
// editor's buffer, not the file, is the truth: reads prefer it and edits go
// through workspace/applyEdit with its version.
type documents struct {
	mu   sync.Mutex // guards open
	open map[string]*document
}

type document struct {
	URI     string
	Path    string // vault-relative
	Version int
	Text    string
}

type textDocumentItem struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
	Text    string `json:"text"`
}

type versionedTextDocument struct {
	URI     string `json:"uri"`
	Version int    `json:"version"`
}

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type didChangeParams struct {
	TextDocument   versionedTextDocument `json:"textDocument"`
	ContentChanges []struct {
		// Only full-text sync is advertised, so a change without a range
		// replaces the whole buffer.
		Text string `json:"text"`
	} `json:"contentChanges"`
}

type didCloseParams struct {
	TextDocument versionedTextDocument `json:"textDocument"`
}

type didSaveParams struct {
	TextDocument versionedTextDocument `json:"textDocument"`
	Text         *string               `json:"text"`
}

// paths lists the vault paths of the open notes, sorted.
func (d *documents) paths() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	paths := make([]string, 0, len(d.open))
	for p := range d.open {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}

func (d *documents) set(doc document) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open == nil {
		d.open = make(map[string]*document)
	}
	d.open[doc.Path] = &doc
}

func (d *documents) update(path string, version int, text *string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.open[path]
	if !ok {
		return
	}
	doc.Version = max(doc.Version, version)
	if text != nil {
		doc.Text = *text
	}
}

func (d *documents) remove(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, path)
}

func (s *Server) didOpen(ctx context.Context, p *didOpenParams) (any, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	s.docs.set(document{URI: p.TextDocument.URI, Path: path, Version: p.TextDocument.Version, Text: p.TextDocument.Text})
	return nil, nil
}

func (s *Server) didChange(ctx context.Context, p *didChangeParams) (any, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	var text *string
	if n := len(p.ContentChanges); n > 0 {
		text = &p.ContentChanges[n-1].Text
	}
	s.docs.update(path, p.TextDocument.Version, text)
	return nil, nil
}

func (s *Server) didSave(ctx context.Context, p *didSaveParams) (any, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	s.docs.update(path, p.TextDocument.Version, p.Text)
	return nil, nil
}

func (s *Server) didClose(ctx context.Context, p *didCloseParams) (any, error) {
	path, err := s.uriPath(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	s.docs.remove(path)
	return nil, nil
}
