package protocol

import (
	"github.com/margin-md/margin/agents/evolution"
	"github.com/margin-md/margin/agents/templates"
)

// Template is one version of a template.
type Template = templates.Template

// TemplateSummary is one template as templates/list shows it.
type TemplateSummary struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Version    int    `json:"version"`
	AuthoredBy string `json:"authoredBy"`
	Path       string `json:"path"`
}

// TemplatesListResult is templates/list's result.
type TemplatesListResult struct {
	Templates []TemplateSummary `json:"templates"`
}

// TemplateParams are the params of templates/get (version absent: the
// active one), templates/versions (no version) and templates/rollback.
type TemplateParams struct {
	Name    string `json:"name"`
	Version int    `json:"version,omitempty"`
}

// TemplateResult is templates/get's result: a version of a template; on
// the active version, problem says why a hand edit of its file was not
// taken.
type TemplateResult struct {
	Template
	Problem string `json:"problem,omitempty"`
}

// TemplateVersionsResult is templates/versions's result.
type TemplateVersionsResult struct {
	Name     string     `json:"name"`
	Versions []Template `json:"versions"`
}

// TemplateSaveParams are templates/save's params.
type TemplateSaveParams struct {
	Name             string `json:"name"`
	GeneralDirective string `json:"generalDirective"`
	ReportDirective  string `json:"reportDirective"`
}

// EvolutionStartParams are evolution/start's params.
type EvolutionStartParams struct {
	Template string `json:"template"`
}

// EvolutionSendParams are evolution/send's params.
type EvolutionSendParams struct {
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
}

// EvolutionDecideParams are the params of evolution/approve and
// evolution/reject (with its reason).
type EvolutionDecideParams struct {
	SessionID string `json:"sessionId"`
	Reason    string `json:"reason,omitempty"`
}

// EvolutionTurn is what evolution/start and evolution/send return: the
// evolution agent's message and its proposal when it made one.
type EvolutionTurn = evolution.Turn

// EvolutionSession is one evolution session (evolution/reject).
type EvolutionSession = evolution.Session
