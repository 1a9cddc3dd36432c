package protocol

import "time"

// Template is one version of a template.
type Template struct {
	Name       string    `json:"name"`
	Kind       string    `json:"kind"`
	Version    int       `json:"version"`
	Status     string    `json:"status"`
	AuthoredBy string    `json:"authoredBy"`
	Created    time.Time `json:"created"`
	Tier       string    `json:"tier,omitempty"`
	Model      string    `json:"model,omitempty"`
	// Depth counts the evolutions of an improver template by itself in a
	// row that produced this version; a person's edit resets it.
	Depth   int    `json:"depth,omitempty"`
	General string `json:"generalDirective"`
	Report  string `json:"reportDirective"`
	// Legacy is the text of a template from before the split into
	// general and report directives.
	Legacy string `json:"directives,omitempty"`
	// Path is the version's file in the vault.
	Path string `json:"path"`
}

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
type EvolutionTurn struct {
	SessionID string    `json:"sessionId"`
	Message   string    `json:"message"`
	Proposal  *Proposal `json:"proposal,omitempty"`
	Path      string    `json:"path"`
	Metrics   Metrics   `json:"metrics"`
}

// EvolutionSession is one evolution session (evolution/reject).
type EvolutionSession struct {
	ID            string    `json:"sessionId"`
	Template      string    `json:"template"`
	BaseVersion   int       `json:"baseVersion"`
	Status        string    `json:"status"`
	Path          string    `json:"path"`
	Context       string    `json:"context"`
	Metrics       Metrics   `json:"metrics"`
	Proposal      *Proposal `json:"proposal,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	ResultVersion int       `json:"resultVersion,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
}

// Proposal is what the evolution agent proposed: both directives in
// full, why, and a unified diff of each against the version it started
// from.
type Proposal struct {
	General     string `json:"generalDirective"`
	Report      string `json:"reportDirective"`
	Rationale   string `json:"rationale"`
	BaseVersion int    `json:"baseVersion"`
	GeneralDiff string `json:"generalDiff"`
	ReportDiff  string `json:"reportDiff"`
}

// Metrics are how a template's agents did: Tally counts every run,
// Versions the active version and the one before it.
type Metrics struct {
	Agents int `json:"agents"`
	Tally
	Versions   []VersionMetrics `json:"versions,omitempty"`
	Rejections []Rejection      `json:"rejections"`
	// Unmeasured says why the template's runs are not measured (a
	// review's): its zeros are not a record of nothing done.
	Unmeasured string `json:"unmeasured,omitempty"`
}

// Tally is what a set of runs did: their wakes, model calls, and
// people's decisions on what they proposed.
type Tally struct {
	Wakes            int        `json:"wakes"`
	Completed        int        `json:"completed"`
	Incomplete       int        `json:"incomplete"`
	Failed           int        `json:"failed"`
	ModelCalls       int        `json:"modelCalls"`
	FailedCalls      int        `json:"failedCalls"`
	PromptTokens     int        `json:"promptTokens"`
	CompletionTokens int        `json:"completionTokens"`
	Tools            []ToolRate `json:"tools"`
}

// VersionMetrics is the tally of the runs of one template version.
type VersionMetrics struct {
	Version int  `json:"version"`
	Active  bool `json:"active"`
	Tally
}

// ToolRate counts how people decided one tool's proposals.
type ToolRate struct {
	Tool      string `json:"tool"`
	Confirmed int    `json:"confirmed"`
	Rejected  int    `json:"rejected"`
	Deferred  int    `json:"deferred"`
}

// Rejection is one rejected proposal and the person's reason.
type Rejection struct {
	Tool    string    `json:"tool"`
	Version int       `json:"version,omitempty"` // of the run that proposed it; 0 when not known
	Summary string    `json:"summary"`
	Reason  string    `json:"reason"`
	Date    time.Time `json:"date"`
}
