package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/server/protocol"
	"github.com/margin-md/margin/server/wire"
	"github.com/margin-md/margin/server/workspace"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// probeModel asks the model server, in the background, for the task
// agents' model and those their templates name, for vault/status.
func (s *Server) probeModel(ctx context.Context, lib *templates.Templates) {
	if s.opts.LLM == nil {
		return
	}
	role := cmp.Or(s.opts.Agents.Role, task.DefaultRole)
	var also []string
	if tms, err := lib.Models(); err == nil {
		for _, tm := range tms {
			if tm.Role == role {
				also = append(also, tm.Model)
			}
		}
	}
	go s.model.probe(context.WithoutCancel(ctx), s.opts.LLM, role, also)
}

// agentsReady returns the vault's workspace, with its agents, once the
// vault's first scan is done.
func (s *Server) agentsReady(ctx context.Context) (*workspace.Workspace, *vault.Vault, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return nil, nil, err
	}
	ws := s.open()
	if ws == nil {
		return nil, nil, errNoVault
	}
	return ws, v, nil
}

func checkLifecycle(l string) error {
	switch task.Lifecycle(l) {
	case "", task.Active, task.Dormant, task.Destroyed:
		return nil
	}
	return invalidParams("lifecycle", fmt.Sprintf("must be active, dormant or destroyed, got %q", l))
}

func (s *Server) agentsList(ctx context.Context, p *protocol.AgentsListParams) (protocol.AgentsListResult, error) {
	if err := checkLifecycle(p.Lifecycle); err != nil {
		return protocol.AgentsListResult{}, err
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.AgentsListResult{}, err
	}
	list, err := ws.Agents.Store().Agents(ctx, task.Lifecycle(p.Lifecycle))
	return protocol.AgentsListResult{Agents: wire.Agents(list)}, err
}

func (s *Server) resolveAgent(ctx context.Context, ws *workspace.Workspace, v *vault.Vault, ref protocol.AgentRef) (task.Agent, error) {
	switch {
	case ref.ID != "":
		return ws.Agents.Store().Agent(ctx, ref.ID)
	case ref.Task != "":
		p, err := vaultPath(v, "task", ref.Task)
		if err != nil {
			return task.Agent{}, err
		}
		return ws.Agents.Store().AgentForTask(ctx, p)
	}
	return task.Agent{}, invalidParams("id", "id or task is required")
}

func (s *Server) detail(ws *workspace.Workspace, v *vault.Vault, a task.Agent) (protocol.AgentDetail, error) {
	d := protocol.AgentDetail{Agent: wire.Agent(a), State: wire.WakeState(ws.Agents.WakeState(a.ID))}
	rep, err := s.taskReport(v, a)
	switch {
	case err == nil:
		d.Report = &protocol.ReportSummary{Path: rep.Path, TLDR: rep.TLDR, GeneratedBy: rep.GeneratedBy, Template: rep.Template}
		if !rep.Updated.IsZero() {
			d.Report.Updated = rep.Updated.Format("2006-01-02T15:04:05Z07:00")
		}
	case !errors.Is(err, vault.ErrNotFound):
		return d, err
	}
	return d, nil
}

func (s *Server) agentsGet(ctx context.Context, p *protocol.AgentRef) (protocol.AgentDetail, error) {
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	a, err := s.resolveAgent(ctx, ws, v, *p)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	return s.detail(ws, v, a)
}

func (s *Server) agentsCreate(ctx context.Context, p *protocol.AgentsCreateParams) (protocol.AgentDetail, error) {
	if p.Task == "" {
		return protocol.AgentDetail{}, invalidParams("task", "is required")
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	path, err := vaultPath(v, "task", p.Task)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	a, err := ws.Agents.Create(ctx, path)
	if errors.Is(err, task.ErrNotATask) {
		return protocol.AgentDetail{}, invalidParams("task", err.Error())
	}
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	return s.detail(ws, v, a)
}

func (s *Server) agentsControl(ctx context.Context, p *protocol.AgentsControlParams) (protocol.AgentDetail, error) {
	switch p.Action {
	case "pause", "resume", "destroy", "wake":
	default:
		return protocol.AgentDetail{}, invalidParams("action", fmt.Sprintf("must be pause, resume, destroy or wake, got %q", p.Action))
	}
	if p.ID == "" {
		return protocol.AgentDetail{}, invalidParams("id", "is required")
	}
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	a, err := ws.Agents.Control(ctx, p.ID, p.Action)
	if err != nil {
		return protocol.AgentDetail{}, err
	}
	return s.detail(ws, v, a)
}

func (s *Server) agentsActivity(ctx context.Context, p *protocol.AgentsActivityParams) (protocol.Activity, error) {
	if p.ID == "" {
		return protocol.Activity{}, invalidParams("id", "is required")
	}
	if p.Limit < 0 || p.Limit > 1000 {
		return protocol.Activity{}, invalidParams("limit", fmt.Sprintf("must be between 1 and 1000, got %d", p.Limit))
	}
	if p.Limit == 0 {
		p.Limit = 50
	}
	ws, _, err := s.agentsReady(ctx)
	if err != nil {
		return protocol.Activity{}, err
	}
	if _, err := ws.Agents.Store().Agent(ctx, p.ID); err != nil {
		return protocol.Activity{}, err
	}
	a, err := ws.Agents.Store().Activity(ctx, p.ID, p.Limit)
	return wire.Activity(a), err
}

func (s *Server) reportsGet(ctx context.Context, p *protocol.AgentRef) (protocol.Report, error) {
	r, err := s.findReport(ctx, p)
	return wire.Report(r), err
}

// findReport reads the report of the agent or the task ref names.
func (s *Server) findReport(ctx context.Context, p *protocol.AgentRef) (task.Report, error) {
	ws, v, err := s.agentsReady(ctx)
	if err != nil {
		return task.Report{}, err
	}
	if p.ID != "" {
		a, err := ws.Agents.Store().Agent(ctx, p.ID)
		if err != nil {
			return task.Report{}, err
		}
		return s.taskReport(v, a)
	}
	if p.Task == "" {
		return task.Report{}, invalidParams("task", "task or id is required")
	}
	// The task as the CLI takes it: its path, or its name or title.
	path, err := v.FindTask(ctx, p.Task)
	switch {
	case errors.Is(err, edit.ErrInvalidPath), errors.Is(err, vault.ErrAmbiguous):
		return task.Report{}, invalidParams("task", err.Error())
	case errors.Is(err, vault.ErrNotFound):
		// A note not indexed as a task may still have had an agent.
		if path, err = vaultPath(v, "task", p.Task); err != nil {
			return task.Report{}, err
		}
	case err != nil:
		return task.Report{}, err
	}
	return s.taskReportAt(ctx, ws, v, path)
}
