package mcp

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/margin-md/margin/vault/edit"
)

// The resources (SPEC §10): the global context and each report, as
// file:// URIs of their files in the vault. Reports written after the
// server started are read through the template.

func (s *Server) fileURI(rel string) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(s.ws.Vault.Dir(), filepath.FromSlash(rel)))}
	return u.String()
}

func (s *Server) reportsFolder() string {
	return path.Join(s.ws.Vault.Options().OutputFolder, "Reports")
}

func (s *Server) addResources() error {
	ctxPath := s.ws.Query.ContextPath()
	s.mcp.AddResource(&sdk.Resource{URI: s.fileURI(ctxPath), Name: "context", Title: "Global context",
		Description: "What margin has learned about the person: preferences, patterns, facts, insights.", MIMEType: "text/markdown"}, s.readResource)
	// The reports are listed through the vault's root, as they are read:
	// a folder or a report linked out of the vault is not listed, where
	// its names would show what lies outside and reading it would fail.
	root := s.ws.Vault.Root()
	reports, err := root.ReadDir(s.reportsFolder())
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, edit.ErrOutsideVault) {
		return err
	}
	for _, e := range reports {
		if path.Ext(e.Name()) != ".md" {
			continue
		}
		if info, err := root.Stat(path.Join(s.reportsFolder(), e.Name())); err != nil || !info.Mode().IsRegular() {
			continue // a folder, or a link out of the vault or to nothing
		}
		name := strings.TrimSuffix(e.Name(), ".md")
		s.mcp.AddResource(&sdk.Resource{URI: s.fileURI(path.Join(s.reportsFolder(), e.Name())), Name: "report: " + name,
			Title: "Report on " + name, MIMEType: "text/markdown"}, s.readResource)
	}
	s.mcp.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: s.fileURI(s.reportsFolder()) + "/{name}.md", Name: "report",
		Title: "A task's report", Description: "The report margin's agent keeps on a task, by the agent's name.", MIMEType: "text/markdown"}, s.readResource)
	return nil
}

// readResource reads the context or a report, and nothing else: the URI
// must name one of them inside the vault.
func (s *Server) readResource(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	rel, err := s.ws.Vault.Path(uri)
	if err != nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if rel != s.ws.Query.ContextPath() && (path.Dir(rel) != s.reportsFolder() || path.Ext(rel) != ".md") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	snap, err := s.ws.Vault.Root().Read(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, edit.ErrOutsideVault) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: string(snap.Content)}}}, nil
}
