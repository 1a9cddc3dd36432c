package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/margin-md/margin/agents/evolution"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
)

// The template and evolution methods (SPEC §6, §4.4). Reading and saving a
// template are quick; evolution/start and evolution/send wait for the
// evolution agent's model calls, so they run as reads, like the query
// flow, rather than hold up document sync queued behind them. Sessions and
// templates serialise on their own locks.

type templateSummary struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Version    int    `json:"version"`
	AuthoredBy string `json:"authoredBy"`
	Path       string `json:"path"`
}

type templatesListResult struct {
	Templates []templateSummary `json:"templates"`
}

func (s *Server) templatesList(ctx context.Context, _ *empty) (templatesListResult, error) {
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templatesListResult{}, err
	}
	list, err := rt.Templates().List(ctx)
	if err != nil {
		return templatesListResult{}, templateError(err)
	}
	res := templatesListResult{Templates: make([]templateSummary, len(list))}
	for i, t := range list {
		res.Templates[i] = templateSummary{Name: t.Name, Kind: t.Kind, Version: t.Version, AuthoredBy: t.AuthoredBy, Path: t.Path}
	}
	return res, nil
}

type templateParams struct {
	Name    string `json:"name"`
	Version int    `json:"version"`
}

// templateResult is a version of a template; on the active version,
// problem says why a hand edit of its file was not taken.
type templateResult struct {
	templates.Template
	Problem string `json:"problem,omitempty"`
}

func (s *Server) templatesGet(ctx context.Context, p *templateParams) (templateResult, error) {
	if err := requireName(p.Name); err != nil {
		return templateResult{}, err
	}
	if p.Version < 0 {
		return templateResult{}, invalidParams("version", "must be a positive version number, or absent for the active one")
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templateResult{}, err
	}
	t, err := rt.Templates().Get(ctx, p.Name, p.Version)
	if err != nil {
		return templateResult{}, templateError(err)
	}
	res := templateResult{Template: t}
	if t.Status == templates.StatusActive {
		if res.Problem, err = rt.Templates().Problem(ctx, p.Name); err != nil {
			return templateResult{}, templateError(err)
		}
	}
	return res, nil
}

type templateVersionsResult struct {
	Name     string               `json:"name"`
	Versions []templates.Template `json:"versions"`
}

func (s *Server) templatesVersions(ctx context.Context, p *templateParams) (templateVersionsResult, error) {
	if err := requireName(p.Name); err != nil {
		return templateVersionsResult{}, err
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templateVersionsResult{}, err
	}
	vs, err := rt.Templates().Versions(ctx, p.Name)
	return templateVersionsResult{Name: p.Name, Versions: vs}, templateError(err)
}

type templateSaveParams struct {
	Name             string `json:"name"`
	GeneralDirective string `json:"generalDirective"`
	ReportDirective  string `json:"reportDirective"`
}

func (s *Server) templatesSave(ctx context.Context, p *templateSaveParams) (templates.Template, error) {
	if err := requireName(p.Name); err != nil {
		return templates.Template{}, err
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templates.Template{}, err
	}
	t, err := rt.Templates().Save(ctx, p.Name, p.GeneralDirective, p.ReportDirective)
	return t, templateError(err)
}

func (s *Server) templatesRollback(ctx context.Context, p *templateParams) (templates.Template, error) {
	if err := requireName(p.Name); err != nil {
		return templates.Template{}, err
	}
	if p.Version <= 0 {
		return templates.Template{}, invalidParams("version", "is required: the version to make active again")
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templates.Template{}, err
	}
	t, err := rt.Templates().Rollback(ctx, p.Name, p.Version)
	return t, templateError(err)
}

type evolutionStartParams struct {
	Template string `json:"template"`
}

func (s *Server) evolutionStart(ctx context.Context, p *evolutionStartParams) (evolution.Turn, error) {
	if err := checkTemplateName("template", p.Template); err != nil {
		return evolution.Turn{}, err
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return evolution.Turn{}, err
	}
	turn, err := rt.Evolution().Start(ctx, p.Template)
	return turn, templateError(err)
}

type evolutionSendParams struct {
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
}

func (s *Server) evolutionSend(ctx context.Context, p *evolutionSendParams) (evolution.Turn, error) {
	switch {
	case strings.TrimSpace(p.SessionID) == "":
		return evolution.Turn{}, invalidParams("sessionId", "required")
	case strings.TrimSpace(p.Text) == "":
		return evolution.Turn{}, invalidParams("text", "must not be empty")
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return evolution.Turn{}, err
	}
	turn, err := rt.Evolution().Send(ctx, p.SessionID, p.Text)
	return turn, templateError(err)
}

type evolutionDecideParams struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason"`
}

func (s *Server) evolutionApprove(ctx context.Context, p *evolutionDecideParams) (templates.Template, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return templates.Template{}, invalidParams("sessionId", "required")
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return templates.Template{}, err
	}
	t, err := rt.Evolution().Approve(ctx, p.SessionID)
	return t, templateError(err)
}

func (s *Server) evolutionReject(ctx context.Context, p *evolutionDecideParams) (evolution.Session, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return evolution.Session{}, invalidParams("sessionId", "required")
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return evolution.Session{}, err
	}
	sess, err := rt.Evolution().Reject(ctx, p.SessionID, p.Reason)
	return sess, templateError(err)
}

func requireName(name string) error {
	return checkTemplateName("name", name)
}

// checkTemplateName refuses what cannot name a template before the library
// looks for its files: a file name with .md names the active file, not the
// template, and would be looked up as a folder of versions.
func checkTemplateName(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return invalidParams(field, "required")
	case strings.HasSuffix(strings.ToLower(name), ".md"):
		return invalidParams(field, fmt.Sprintf("%q is a file name: name the template without .md (%q)", name, name[:len(name)-3]))
	}
	return nil
}

// templateError maps the template library's and evolution's errors to
// codes a client can act on; the rest go through toRPCError.
func templateError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, templates.ErrBadTemplateName):
		return invalidParams("name", err.Error())
	case errors.Is(err, templates.ErrEmptyReport), errors.Is(err, templates.ErrReportNotKept):
		return invalidParams("reportDirective", err.Error())
	case errors.Is(err, templates.ErrBadDirectives):
		return invalidParams("generalDirective", err.Error())
	case errors.Is(err, templates.ErrEvolutionDepth), errors.Is(err, evolution.ErrSessionClosed), errors.Is(err, evolution.ErrNoProposal):
		return &jsonrpc2.Error{Code: CodeRefused, Message: err.Error()}
	case errors.Is(err, llm.ErrUnavailable):
		return &jsonrpc2.Error{Code: CodeModelUnavailable, Message: err.Error()}
	case errors.Is(err, templates.ErrInvalidTemplate):
		return &jsonrpc2.Error{Code: CodeInvalidNote, Message: err.Error()}
	}
	return err
}
