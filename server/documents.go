package server

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/margin-md/margin/server/protocol"
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

type didOpenParams struct {
	TextDocument textDocumentItem `json:"textDocument"`
}

type didChangeParams struct {
	TextDocument   protocol.VersionedTextDocument `json:"textDocument"`
	ContentChanges []contentChange                `json:"contentChanges"`
}

// contentChange replaces Range of the buffer with Text, or the whole
// buffer when Range is nil. Changes apply in order, each to the text the
// one before left.
type contentChange struct {
	Range *protocol.Range `json:"range"`
	Text  string          `json:"text"`
}

type didCloseParams struct {
	TextDocument protocol.VersionedTextDocument `json:"textDocument"`
}

type didSaveParams struct {
	TextDocument protocol.VersionedTextDocument `json:"textDocument"`
	Text         *string                        `json:"text"`
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

// change applies a didChange's changes to the buffer at path, with
// positions in enc.
func (d *documents) change(path string, version int, changes []contentChange, enc positionEncoding) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	doc, ok := d.open[path]
	if !ok {
		return nil
	}
	text := doc.Text
	for i, c := range changes {
		if c.Range == nil {
			text = c.Text
			continue
		}
		start, end := enc.offsetOf(text, c.Range.Start), enc.offsetOf(text, c.Range.End)
		if end < start {
			// margin no longer knows the buffer, and a wrong guess at it
			// would turn into a wrong edit of it: forget it until the
			// editor opens the note again (until then the file is read,
			// and written compare-and-swap).
			delete(d.open, path)
			return invalidParams(fmt.Sprintf("contentChanges[%d].range", i), "ends before it starts; margin reads the file until the note is opened again")
		}
		text = text[:start] + c.Text + text[end:]
	}
	doc.Text = text
	doc.Version = max(doc.Version, version)
	return nil
}

func (d *documents) remove(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, path)
}

// positionEncoding is the encoding of Position characters agreed at
// initialize.
func (s *Server) positionEncoding() positionEncoding {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.encoding == "" {
		return utf16Encoding
	}
	return s.encoding
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
	return nil, s.docs.change(path, p.TextDocument.Version, p.ContentChanges, s.positionEncoding())
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
