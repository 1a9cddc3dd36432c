package server

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
)

// The template and evolution methods (SPEC §6, §4.4). Reading and saving a
// template are quick; evolution/start and evolution/send wait for the
// evolution agent's model calls, so they run as reads, like the query
// flow, rather than hold up document sync queued behind them. Sessions and
// templates serialise on their own locks.

func (s *Server) templatesList(ctx context.Context, _ *empty) (protocol.TemplatesListResult, error) {
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.TemplatesListResult{}, err
	}
	list, err := ws.Templates.List(ctx)
	if err != nil {
		return protocol.TemplatesListResult{}, templateError(err)
	}
	res := protocol.TemplatesListResult{Templates: make([]protocol.TemplateSummary, len(list))}
	for i, t := range list {
		res.Templates[i] = protocol.TemplateSummary{Name: t.Name, Kind: t.Kind, Version: t.Version, AuthoredBy: t.AuthoredBy, Path: t.Path}
	}
	return res, nil
}

func (s *Server) templatesGet(ctx context.Context, p *protocol.TemplateParams) (protocol.TemplateResult, error) {
	if err := requireName(p.Name); err != nil {
		return protocol.TemplateResult{}, err
	}
	if p.Version < 0 {
		return protocol.TemplateResult{}, invalidParams("version", "must be a positive version number, or absent for the active one")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.TemplateResult{}, err
	}
	t, err := ws.Templates.Get(ctx, p.Name, p.Version)
	if err != nil {
		return protocol.TemplateResult{}, templateError(err)
	}
	res := protocol.TemplateResult{Template: wire.Template(t)}
	if t.Status == templates.StatusActive {
		if res.Problem, err = ws.Templates.Problem(ctx, p.Name); err != nil {
			return protocol.TemplateResult{}, templateError(err)
		}
	}
	return res, nil
}

func (s *Server) templatesVersions(ctx context.Context, p *protocol.TemplateParams) (protocol.TemplateVersionsResult, error) {
	if err := requireName(p.Name); err != nil {
		return protocol.TemplateVersionsResult{}, err
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.TemplateVersionsResult{}, err
	}
	vs, err := ws.Templates.Versions(ctx, p.Name)
	return protocol.TemplateVersionsResult{Name: p.Name, Versions: wire.Templates(vs)}, templateError(err)
}

func (s *Server) templatesSave(ctx context.Context, p *protocol.TemplateSaveParams) (protocol.Template, error) {
	if err := requireName(p.Name); err != nil {
		return protocol.Template{}, err
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.Template{}, err
	}
	t, err := ws.Templates.Save(ctx, p.Name, p.GeneralDirective, p.ReportDirective)
	return wire.Template(t), templateError(err)
}

func (s *Server) templatesRollback(ctx context.Context, p *protocol.TemplateParams) (protocol.Template, error) {
	if err := requireName(p.Name); err != nil {
		return protocol.Template{}, err
	}
	if p.Version <= 0 {
		return protocol.Template{}, invalidParams("version", "is required: the version to make active again")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.Template{}, err
	}
	t, err := ws.Templates.Rollback(ctx, p.Name, p.Version)
	return wire.Template(t), templateError(err)
}

func (s *Server) evolutionStart(ctx context.Context, p *protocol.EvolutionStartParams) (protocol.EvolutionTurn, error) {
	if err := checkTemplateName("template", p.Template); err != nil {
		return protocol.EvolutionTurn{}, err
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.EvolutionTurn{}, err
	}
	turn, err := ws.Evolution.Start(ctx, p.Template)
	return wire.EvolutionTurn(turn), templateError(err)
}

func (s *Server) evolutionSend(ctx context.Context, p *protocol.EvolutionSendParams) (protocol.EvolutionTurn, error) {
	switch {
	case strings.TrimSpace(p.SessionID) == "":
		return protocol.EvolutionTurn{}, invalidParams("sessionId", "required")
	case strings.TrimSpace(p.Text) == "":
		return protocol.EvolutionTurn{}, invalidParams("text", "must not be empty")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.EvolutionTurn{}, err
	}
	turn, err := ws.Evolution.Send(ctx, p.SessionID, p.Text)
	return wire.EvolutionTurn(turn), templateError(err)
}

func (s *Server) evolutionApprove(ctx context.Context, p *protocol.EvolutionDecideParams) (protocol.Template, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return protocol.Template{}, invalidParams("sessionId", "required")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.Template{}, err
	}
	t, err := ws.Evolution.Approve(ctx, p.SessionID)
	return wire.Template(t), templateError(err)
}

func (s *Server) evolutionReject(ctx context.Context, p *protocol.EvolutionDecideParams) (protocol.EvolutionSession, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return protocol.EvolutionSession{}, invalidParams("sessionId", "required")
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.EvolutionSession{}, err
	}
	sess, err := ws.Evolution.Reject(ctx, p.SessionID, p.Reason)
	return wire.EvolutionSession(sess), templateError(err)
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
