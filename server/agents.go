package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/ledger"
	"github.com/margin-md/margin/agents/task"
	"github.com/margin-md/margin/agents/templates"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
)

// openAgents opens the task agents of v and the ledger of its model calls.
func (s *Server) openAgents(ctx context.Context, v *vault.Vault) (*agentsRoom, error) {
	if s.opts.Ledger != nil {
		l, err := ledger.Open(ctx, v.DB(), s.logger)
		if err != nil {
			return nil, err
		}
		s.opts.Ledger.Attach(recorders{l, &s.model})
	}
	opts := s.opts.Agents
	opts.Logger = s.logger
	opts.Notifier = task.NotifyFunc(s.agentNotify)
	opts.Editor = editor{s}
	var model llm.Model // a nil *llm.Client must stay a nil interface: no model at all
	if s.opts.LLM != nil {
		model = s.opts.LLM
		role := cmp.Or(opts.Role, task.DefaultRole)
		var also []string
		if tms, err := templates.New(v, opts.TemplatesOptions()).Models(); err == nil {
			for _, tm := range tms {
				if tm.Role == role {
					also = append(also, tm.Model)
				}
			}
		}
		go s.model.probe(context.WithoutCancel(ctx), s.opts.LLM, role, also)
	}
	rt, err := task.New(ctx, v, model, opts)
	if err != nil {
		return nil, fmt.Errorf("opening agents: %w", err)
	}
	evo, err := evolution.New(ctx, v, rt.Templates(), model, evolution.Options{Logger: opts.Logger, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("opening evolution sessions: %w", err)
	}
	return &agentsRoom{Runtime: rt, evolution: evo}, nil
}

// agentsRoom is a vault's agents: the task runtime (with its change sets
// and template library) and the evolution sessions of the templates.
type agentsRoom struct {
	*task.Runtime
	evolution *evolution.Evolution
}

// Evolution runs the evolution sessions of the vault's templates.
func (a *agentsRoom) Evolution() *evolution.Evolution { return a.evolution }

// agentsReady returns the agents once the vault's first scan is done.
func (s *Server) agentsReady(ctx context.Context) (*agentsRoom, *vault.Vault, error) {
	v, err := s.openVaultReady(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	rt := s.agents
	s.mu.Unlock()
	if rt == nil {
		return nil, nil, errNoVault
	}
	return rt, v, nil
}

type agentsListParams struct {
	Lifecycle string `json:"lifecycle"`
}

type agentsListResult struct {
	Agents []task.Agent `json:"agents"`
}

func checkLifecycle(l string) error {
	switch task.Lifecycle(l) {
	case "", task.Active, task.Dormant, task.Destroyed:
		return nil
	}
	return invalidParams("lifecycle", fmt.Sprintf("must be active, dormant or destroyed, got %q", l))
}

func (s *Server) agentsList(ctx context.Context, p *agentsListParams) (agentsListResult, error) {
	if err := checkLifecycle(p.Lifecycle); err != nil {
		return agentsListResult{}, err
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return agentsListResult{}, err
	}
	list, err := rt.Store().Agents(ctx, task.Lifecycle(p.Lifecycle))
	return agentsListResult{Agents: list}, err
}

// agentRef names an agent by id or by its task's path.
type agentRef struct {
	ID   string `json:"id"`
	Task string `json:"task"`
}

func (s *Server) resolveAgent(ctx context.Context, rt *agentsRoom, v *vault.Vault, ref agentRef) (task.Agent, error) {
	switch {
	case ref.ID != "":
		return rt.Store().Agent(ctx, ref.ID)
	case ref.Task != "":
		p, err := vaultPath(v, "task", ref.Task)
		if err != nil {
			return task.Agent{}, err
		}
		return rt.Store().AgentForTask(ctx, p)
	}
	return task.Agent{}, invalidParams("id", "id or task is required")
}

// agentDetail is agents/get's result: the agent, its queue state and a
// summary of its report.
type agentDetail struct {
	task.Agent
	State  task.WakeState `json:"state"`
	Report *reportSummary `json:"report"`
}

type reportSummary struct {
	Path        string `json:"path"`
	TLDR        string `json:"tldr"`
	Updated     string `json:"updated"`
	GeneratedBy string `json:"generatedBy"`
	Template    string `json:"template"`
}

func (s *Server) detail(rt *agentsRoom, v *vault.Vault, a task.Agent) (agentDetail, error) {
	d := agentDetail{Agent: a, State: rt.WakeState(a.ID)}
	rep, err := s.taskReport(v, a)
	switch {
	case err == nil:
		d.Report = &reportSummary{Path: rep.Path, TLDR: rep.TLDR, GeneratedBy: rep.GeneratedBy, Template: rep.Template}
		if !rep.Updated.IsZero() {
			d.Report.Updated = rep.Updated.Format("2006-01-02T15:04:05Z07:00")
		}
	case !errors.Is(err, vault.ErrNotFound):
		return d, err
	}
	return d, nil
}

func (s *Server) agentsGet(ctx context.Context, p *agentRef) (agentDetail, error) {
	rt, v, err := s.agentsReady(ctx)
	if err != nil {
		return agentDetail{}, err
	}
	a, err := s.resolveAgent(ctx, rt, v, *p)
	if err != nil {
		return agentDetail{}, err
	}
	return s.detail(rt, v, a)
}

type agentsCreateParams struct {
	Task string `json:"task"`
}

func (s *Server) agentsCreate(ctx context.Context, p *agentsCreateParams) (agentDetail, error) {
	if p.Task == "" {
		return agentDetail{}, invalidParams("task", "is required")
	}
	rt, v, err := s.agentsReady(ctx)
	if err != nil {
		return agentDetail{}, err
	}
	path, err := vaultPath(v, "task", p.Task)
	if err != nil {
		return agentDetail{}, err
	}
	a, err := rt.Create(ctx, path)
	if errors.Is(err, task.ErrNotATask) {
		return agentDetail{}, invalidParams("task", err.Error())
	}
	if err != nil {
		return agentDetail{}, err
	}
	return s.detail(rt, v, a)
}

type agentsControlParams struct {
	ID     string `json:"id"`
	Action string `json:"action"`
}

func (s *Server) agentsControl(ctx context.Context, p *agentsControlParams) (agentDetail, error) {
	switch p.Action {
	case "pause", "resume", "destroy", "wake":
	default:
		return agentDetail{}, invalidParams("action", fmt.Sprintf("must be pause, resume, destroy or wake, got %q", p.Action))
	}
	if p.ID == "" {
		return agentDetail{}, invalidParams("id", "is required")
	}
	rt, v, err := s.agentsReady(ctx)
	if err != nil {
		return agentDetail{}, err
	}
	a, err := rt.Control(ctx, p.ID, p.Action)
	if err != nil {
		return agentDetail{}, err
	}
	return s.detail(rt, v, a)
}

type agentsActivityParams struct {
	ID    string `json:"id"`
	Limit int    `json:"limit"`
}

func (s *Server) agentsActivity(ctx context.Context, p *agentsActivityParams) (task.Activity, error) {
	if p.ID == "" {
		return task.Activity{}, invalidParams("id", "is required")
	}
	if p.Limit < 0 || p.Limit > 1000 {
		return task.Activity{}, invalidParams("limit", fmt.Sprintf("must be between 1 and 1000, got %d", p.Limit))
	}
	if p.Limit == 0 {
		p.Limit = 50
	}
	rt, _, err := s.agentsReady(ctx)
	if err != nil {
		return task.Activity{}, err
	}
	if _, err := rt.Store().Agent(ctx, p.ID); err != nil {
		return task.Activity{}, err
	}
	return rt.Store().Activity(ctx, p.ID, p.Limit)
}

func (s *Server) reportsGet(ctx context.Context, p *agentRef) (task.Report, error) {
	rt, v, err := s.agentsReady(ctx)
	if err != nil {
		return task.Report{}, err
	}
	if p.ID != "" {
		a, err := rt.Store().Agent(ctx, p.ID)
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
	return s.taskReportAt(ctx, rt, v, path)
}
