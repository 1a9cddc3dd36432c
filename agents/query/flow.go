package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/edit"
	"github.com/margin-md/margin/vault/index"
	"github.com/margin-md/margin/vault/retrieve"
)

// State is a state of the flow (seed 003 §5.1).
type State string

const (
	StateRoute        State = "ROUTE"
	StateBuildContext State = "BUILD_CONTEXT"
	StatePlan         State = "PLAN"
	StateRetrieve     State = "RETRIEVE"
	StateAnalyze      State = "ANALYZE"
	StateSynthesize   State = "SYNTHESIZE"
	StateEvaluate     State = "EVALUATE"
	StateClarify      State = "CLARIFY"
	StateWaitUser     State = "WAIT_USER"
	StateExpandDomain State = "EXPAND_DOMAIN"
	StateParse        State = "PARSE"
	StateStore        State = "STORE"
	StateObserve      State = "OBSERVE"
	StateComplete     State = "COMPLETE"
	// StateDegraded is margin's addition: no model could serve a step, so
	// the flow finishes without one (retrieval hits, or the raw log).
	StateDegraded State = "DEGRADED"
)

// Options configure an Engine. Zero values take the documented defaults.
type Options struct {
	MaxEntries    int           // query.max_entries: entries one retrieval keeps (200)
	ResponseStyle string        // query.response_style: concise or detailed
	SessionTTL    time.Duration // query.session_ttl: how long a clarification waits (24h)
	// LoopMax is llm.retry.loop_max, the re-plan/re-evaluate rounds of one
	// query (2); negative means none.
	LoopMax int
	// ContextMaxTokens is context.max_tokens, the budget of Margin/Context.md.
	ContextMaxTokens int
	// PromptEntryTokens caps the retrieved text one prompt carries, so a
	// wide retrieval cannot overflow the model's context window (num_ctx
	// 8192 by default) and be cut silently.
	PromptEntryTokens int
	// MaxInput is the longest input accepted, in bytes.
	MaxInput int
	// Deadline is query.deadline, the longest one request runs its
	// states (2m); a clarification's wait for the person is not counted.
	Deadline time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Editor edits the notes open in the editor; nil when there is none
	// (the command line). A log appended to an open daily note goes
	// through it: the editor's buffer is the truth (SPEC §1.2).
	Editor edit.Editor
	// Meaning, unless nil, searches a question by its meaning too, when
	// the notes have vectors (see Retriever.Meaning).
	Meaning *retrieve.Retriever
	Logger  *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxEntries <= 0 {
		o.MaxEntries = 200
	}
	if o.ResponseStyle == "" {
		o.ResponseStyle = "concise"
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 24 * time.Hour
	}
	switch {
	case o.LoopMax == 0:
		o.LoopMax = 2
	case o.LoopMax < 0:
		o.LoopMax = 0
	}
	if o.ContextMaxTokens <= 0 {
		o.ContextMaxTokens = 2000
	}
	if o.PromptEntryTokens <= 0 {
		o.PromptEntryTokens = 4000
	}
	if o.MaxInput <= 0 {
		o.MaxInput = 16 << 10
	}
	if o.Deadline <= 0 {
		o.Deadline = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Errors callers branch on. Session errors wrap vault.ErrNotFound: to a
// client an unknown, expired or finished session is a thing not found.
var (
	ErrEmptyInput      = errors.New("the text is empty")
	ErrInputTooLong    = errors.New("the text is too long")
	ErrSessionNotFound = fmt.Errorf("clarification session %w", vault.ErrNotFound)
)

// Engine runs the query and log flows over one vault.
type Engine struct {
	v         Vault
	store     *Store
	client    *llm.Client // nil: no model configured, everything degrades
	opts      Options
	retriever *Retriever
	log       *slog.Logger
}

// New returns an engine over v, keeping its sessions in st. client may
// be nil.
func New(v Vault, st *Store, client *llm.Client, opts Options) *Engine {
	opts.setDefaults()
	exclude := append([]string{v.OutputFolder}, v.Rules.TemplateFolders...)
	return &Engine{
		v:      v,
		store:  st,
		client: client,
		opts:   opts,
		retriever: &Retriever{
			Index:      v.Index,
			Exclude:    exclude,
			MaxEntries: opts.MaxEntries,
			Meaning:    opts.Meaning,
		},
		log: opts.Logger,
	}
}

// Progress hears the stage a request has reached, for $/progress.
type Progress func(stage string)

// Ask runs the flow on a new input: the Router decides whether it is a
// log, a question, both or a correction.
func (e *Engine) Ask(ctx context.Context, text string, progress Progress) (Result, error) {
	s, err := e.newSession(ctx, text, e.opts.Now(), false)
	if err != nil {
		return Result{}, err
	}
	return e.finish(ctx, s, progress)
}

// Question runs the flow on an input that may only be answered: an AI
// application's question over MCP, which must write nothing into the
// person's notes. Whatever the Router takes it for, it is answered as a
// question; nothing is logged, and the Observer does not run.
func (e *Engine) Question(ctx context.Context, text string, progress Progress) (Result, error) {
	s, err := e.newSession(ctx, text, e.opts.Now(), false)
	if err != nil {
		return Result{}, err
	}
	s.QuestionOnly = true
	return e.finish(ctx, s, progress)
}

// Log runs the flow on an input the user asked to log, dated at (zero:
// now). The Router still tells a plain log from a correction or a log
// with a question; an input it takes for a pure question is logged anyway,
// because the user said so.
func (e *Engine) Log(ctx context.Context, text string, at time.Time, progress Progress) (Result, error) {
	if at.IsZero() {
		at = e.opts.Now()
	}
	s, err := e.newSession(ctx, text, at, true)
	if err != nil {
		return Result{}, err
	}
	return e.logFirst(ctx, s, progress)
}

// Reply continues a session waiting for clarification, with the user's
// answers by question id, or without them when the user declined.
func (e *Engine) Reply(ctx context.Context, id string, answers map[string]string, decline bool, progress Progress) (Result, error) {
	s, err := e.loadSession(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if s.State != StateWaitUser {
		return Result{}, fmt.Errorf("session %s is not waiting for a reply (it is %s): %w", id, strings.ToLower(string(s.State)), ErrSessionNotFound)
	}
	if err := e.prepare(s); err != nil {
		return Result{}, err
	}
	s.Answers = map[string]string{}
	for _, q := range s.Questions {
		if a := strings.TrimSpace(answers[q.ID]); a != "" {
			s.Answers[q.ID] = a
		}
	}
	switch {
	case decline || len(s.Answers) == 0:
		s.Declined, s.Partial = true, true
		s.move(StateSynthesize, "the user declined to answer", e.opts.Now())
	default:
		s.move(StateAnalyze, fmt.Sprintf("the user answered %d question(s)", len(s.Answers)), e.opts.Now())
	}
	return e.finish(ctx, s, progress)
}

func (e *Engine) newSession(ctx context.Context, text string, at time.Time, forceLog bool) (*Session, error) {
	text = strings.ReplaceAll(text, "\x00", "") // it would make the daily note it is logged to read as binary
	if strings.TrimSpace(text) == "" {
		return nil, ErrEmptyInput
	}
	if len(text) > e.opts.MaxInput {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrInputTooLong, len(text), e.opts.MaxInput)
	}
	id, err := newSessionID()
	if err != nil {
		return nil, err
	}
	now := e.opts.Now()
	s := &Session{
		ID:       id,
		Input:    strings.TrimSpace(text),
		At:       at,
		Today:    at.Format(time.DateOnly),
		ForceLog: forceLog,
		State:    StateRoute,
		Created:  now,
	}
	if err := e.prepare(s); err != nil {
		return nil, err
	}
	return s, nil
}

// prepare loads what a session reads but does not persist: the domain
// modules and the global context, read fresh so edits apply at once.
func (e *Engine) prepare(s *Session) error {
	domains, errs := loadDomains(e.v.Files, e.domainsFolder())
	for _, err := range errs {
		e.log.Warn("domain module skipped", "err", err)
	}
	s.domains = domains
	ctxText, err := e.readContext()
	if err != nil {
		return err
	}
	s.context = ctxText
	return nil
}

// finish runs the state machine to a stop, saves the session and builds
// the result.
func (e *Engine) finish(ctx context.Context, s *Session, progress Progress) (Result, error) {
	if progress == nil {
		progress = func(string) {}
	}
	if err := e.run(ctx, s, progress); err != nil {
		return Result{}, err
	}
	res := e.result(s)
	s.Updated = e.opts.Now()
	if err := e.saveSession(ctx, s); err != nil {
		return Result{}, err
	}
	return res, nil
}

// run steps through states until the flow completes or waits for the user,
// within the deadline: once it passes, the flow finishes with what it has
// (see cut), with ctx and no model.
func (e *Engine) run(ctx context.Context, s *Session, progress Progress) error {
	dctx, cancel := context.WithTimeout(ctx, e.opts.Deadline)
	defer cancel()
	for s.State != StateComplete && s.State != StateWaitUser {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.Cut == "" && dctx.Err() != nil {
			next, why := e.cut(s)
			s.move(next, why, e.opts.Now())
			continue
		}
		progress(stageText[s.State])
		stepCtx := dctx
		if s.Cut != "" {
			stepCtx = ctx
		}
		next, why, err := e.step(stepCtx, s)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if s.Cut == "" && dctx.Err() != nil {
				next, why = e.cut(s)
				s.move(next, why, e.opts.Now())
				continue
			}
			if !modelFailure(err) || s.State == StateDegraded {
				return fmt.Errorf("%s: %w", strings.ToLower(string(s.State)), err)
			}
			// The answer says why in a sentence; the error is detail.
			e.log.Debug("query flow degraded", "state", s.State, "err", err)
			s.Degraded = degradedReason(err)
			next, why = StateDegraded, err.Error()
		}
		s.move(next, why, e.opts.Now())
	}
	return nil
}

var stageText = map[State]string{
	StateRoute:        "classifying the input",
	StateBuildContext: "loading domains",
	StatePlan:         "planning the search",
	StateRetrieve:     "searching the notes",
	StateAnalyze:      "analysing the entries",
	StateSynthesize:   "writing the answer",
	StateEvaluate:     "checking the answer",
	StateClarify:      "preparing questions",
	StateExpandDomain: "loading more domains",
	StateParse:        "parsing the log entry",
	StateStore:        "writing the daily note",
	StateObserve:      "updating the global context",
	StateDegraded:     "searching without a model",
}

// step does the work of s.State and names the next state and why. The
// transitions are seed 003 §5.2; the comments name the deviations.
func (e *Engine) step(ctx context.Context, s *Session) (State, string, error) {
	switch s.State {
	case StateRoute:
		return e.stepRoute(ctx, s)
	case StateBuildContext:
		a := s.active()
		switch {
		case s.Type == InputQuery, s.Type == InputBoth && s.Logged != nil:
			return StatePlan, "query with domains " + strings.Join(a.Loaded, ", "), nil
		default:
			return StateParse, string(s.Type) + " with domains " + strings.Join(a.Loaded, ", "), nil
		}
	case StatePlan:
		return e.stepPlan(ctx, s)
	case StateExpandDomain:
		s.Selected = append(s.Selected, s.Pending...)
		s.Expanded = append(s.Expanded, s.Pending...)
		why := "loading " + strings.Join(s.Pending, ", ")
		s.Pending = nil
		return StateBuildContext, why, nil
	case StateRetrieve:
		return e.stepRetrieve(ctx, s)
	case StateAnalyze:
		return e.stepAnalyze(ctx, s)
	case StateClarify:
		return e.stepClarify(ctx, s)
	case StateSynthesize:
		return e.stepSynthesize(ctx, s)
	case StateEvaluate:
		return e.stepEvaluate(ctx, s)
	case StateParse:
		return e.stepParse(ctx, s)
	case StateStore:
		return e.stepStore(ctx, s)
	case StateObserve:
		return e.stepObserve(ctx, s)
	case StateDegraded:
		return e.stepDegraded(ctx, s)
	}
	return "", "", fmt.Errorf("no step for state %s", s.State)
}

func (e *Engine) stepRoute(ctx context.Context, s *Session) (State, string, error) {
	if e.client == nil {
		return "", "", errNoModel
	}
	r, err := e.route(ctx, s, s.Input)
	if err != nil {
		return "", "", err
	}
	s.Type = r.InputType
	s.CorrectionTarget = strings.TrimSpace(r.CorrectionTarget)
	for _, name := range r.SelectedDomains {
		if d, ok := findDomain(s.domains, name); ok && !slices.Contains(s.Selected, d) {
			s.Selected = append(s.Selected, d)
		}
	}
	s.Query, s.LogPortion = s.Input, s.Input
	if s.Type == InputBoth {
		if q := strings.TrimSpace(r.QueryPortion); q != "" {
			s.Query = q
		}
		if l := strings.TrimSpace(r.LogPortion); l != "" {
			s.LogPortion = l
		}
	}
	why := fmt.Sprintf("router: %s (%s)", s.Type, strings.TrimSpace(r.Reasoning))
	if s.ForceLog && s.Type == InputQuery {
		s.Type = InputLog
		why = "router took it for a question, but the user asked to log it"
	}
	if !s.ForceLog && (s.Type == InputLog || s.Type == InputCorrection) && oneQuestion(s.Input) {
		// Logged, a question would be written into the person's daily
		// note on a model's word: margin without a model answers it.
		why = fmt.Sprintf("router took it for %s, but it is one question: answered, nothing logged", s.Type)
		s.Type, s.CorrectionTarget = InputQuery, ""
	}
	if s.QuestionOnly && s.Type != InputQuery {
		why = fmt.Sprintf("router took it for %s, but it may only be answered: nothing is logged", s.Type)
		s.Type, s.CorrectionTarget = InputQuery, ""
	}
	return StateBuildContext, why, e.appendLogged(ctx, s)
}

func (e *Engine) stepPlan(ctx context.Context, s *Session) (State, string, error) {
	a := s.active()
	p, err := e.plan(ctx, s, a)
	if err != nil {
		return "", "", err
	}
	planned := len(p.RetrievalInstructions)
	dropped, err := e.checkPlan(ctx, &p)
	if err != nil {
		return "", "", err
	}
	var floor string
	if len(dropped) > 0 {
		floor = "; dropped: " + strings.Join(dropped, "; ")
	}
	s.Plan = &p
	s.QueryType = p.QueryType
	if s.Parts == nil {
		s.Parts = dependentParts(p)
	}
	action := p.NextAction
	if pending := loadable(s, p.DomainExpansionRequest); len(pending) > 0 {
		s.Pending = pending
		return StateExpandDomain, "planner asked for domains " + strings.Join(pending, ", "), nil
	}
	switch {
	case action == actionClarify && slices.ContainsFunc(p.ClarifyQuestions, func(q string) bool { return !emptyOfContent(q) }):
		return StateClarify, "planner: gaps only the user can fill", nil
	case action == actionSynthesize && len(s.Entries) > 0 && len(s.Parts) > 0 && s.Analysis == nil:
		// A later part whose evidence is already retrieved still needs
		// its own analysis.
		return StateAnalyze, fmt.Sprintf("planner: earlier retrieval covers part %d", s.Part+1), nil
	case action == actionSynthesize && len(s.Entries) > 0:
		return StateSynthesize, "planner: earlier retrieval is sufficient", nil
	}
	if len(p.RetrievalInstructions) == 0 {
		// A plan without instructions would retrieve nothing; RETRIEVE
		// searches the question's own words instead, which keeps "search
		// before asking" true.
		if planned > 0 {
			s.Fallback = true
			return StateRetrieve, "planner's instructions held nothing to search for; searching the question's words" + floor, nil
		}
		return StateRetrieve, "planner gave no instructions; searching the question's words", nil
	}
	return StateRetrieve, fmt.Sprintf("planner: %d instruction(s), %s%s", len(p.RetrievalInstructions), s.QueryType, floor), nil
}

// oneQuestion says the input is a single line that ends in a question
// mark: nothing in it to log.
func oneQuestion(text string) bool {
	text = strings.TrimSpace(text)
	r, _ := utf8.DecodeLastRuneInString(text)
	return !strings.Contains(text, "\n") && strings.ContainsRune("?？؟", r)
}

// dependentParts are the parts of a question p decomposed as dependent,
// nil for a question of one part or whose parts do not build on each
// other: independent parts are retrieved together (the retriever runs
// instructions in parallel) and coupled ones are one question.
func dependentParts(p Plan) []SubQuery {
	if p.ExecutionStrategy != strategyDependent {
		return nil
	}
	var parts []SubQuery
	for _, q := range p.SubQueries {
		if !emptyOfContent(q.Question) {
			parts = append(parts, q)
		}
	}
	if len(parts) < 2 {
		return nil
	}
	return parts
}

// loadable keeps the requested domains that exist and are not loaded yet,
// so an expansion always adds something and cannot loop.
func loadable(s *Session, names []string) []string {
	loaded := s.active().Loaded
	var out []string
	for _, n := range names {
		if d, ok := findDomain(s.domains, n); ok && !slices.Contains(loaded, d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func (e *Engine) stepRetrieve(ctx context.Context, s *Session) (State, string, error) {
	var r Retrieval
	var err error
	if len(s.Plan.RetrievalInstructions) == 0 {
		r, err = e.retriever.Question(ctx, s.Query, s.active().Vocabulary, len(s.Attempts)+1)
	} else {
		r, err = e.retriever.Retrieve(ctx, s.Plan.RetrievalInstructions, s.active().Vocabulary, len(s.Attempts)+1)
	}
	if err != nil {
		return "", "", fmt.Errorf("retrieving: %w", err)
	}
	s.Attempts = append(s.Attempts, r.Attempts...)
	var relaxed string
	if len(r.Entries) == 0 && len(s.Plan.RetrievalInstructions) > 0 {
		if r, relaxed, err = e.relax(ctx, s); err != nil {
			return "", "", err
		}
	}
	s.Truncated = s.Truncated || r.Truncated
	before := len(s.Entries)
	s.addEntries(r.Entries)
	if err := e.attachParsed(ctx, s.Entries); err != nil {
		return "", "", err
	}
	added := len(s.Entries) - before
	if len(s.Entries) == 0 {
		// Deviation from §5.2 (RETRIEVE → ANALYZE always): with nothing
		// retrieved the Analyzer has nothing to judge, so re-plan wider
		// while rounds remain, then say there is no data.
		if s.Loops < e.opts.LoopMax {
			s.Loops++
			return StatePlan, fmt.Sprintf("nothing found; re-planning (round %d of %d)", s.Loops, e.opts.LoopMax), nil
		}
		s.Partial = true
		return StateSynthesize, "nothing found after every round: no data", nil
	}
	why := fmt.Sprintf("%d new entries (%d in all)%s", added, len(s.Entries), relaxed)
	if r.Truncated {
		why += fmt.Sprintf("; truncated to %d", e.opts.MaxEntries)
	}
	return StateAnalyze, why, nil
}

// relax widens a plan that found nothing, step by step (see relaxations),
// and in the last round searches the question's own words, before any
// "found nothing"; it returns the first retrieval that found something
// and says how.
func (e *Engine) relax(ctx context.Context, s *Session) (Retrieval, string, error) {
	vocab := s.active().Vocabulary
	for _, st := range relaxations(s.Plan.RetrievalInstructions) {
		r, err := e.retriever.Retrieve(ctx, st.ins, vocab, len(s.Attempts)+1)
		if err != nil {
			return Retrieval{}, "", fmt.Errorf("retrieving: %w", err)
		}
		s.Attempts = append(s.Attempts, r.Attempts...)
		if len(r.Entries) > 0 {
			return r, "; the plan found nothing, its instructions " + st.what + " did", nil
		}
	}
	if s.Loops < e.opts.LoopMax {
		// The planner gets its rounds to look elsewhere first.
		return Retrieval{}, "", nil
	}
	r, err := e.retriever.Question(ctx, s.Query, vocab, len(s.Attempts)+1)
	if err != nil {
		return Retrieval{}, "", fmt.Errorf("retrieving: %w", err)
	}
	s.Attempts = append(s.Attempts, r.Attempts...)
	if len(r.Entries) == 0 {
		return r, "", nil
	}
	s.Fallback = true
	return r, "; the plan found nothing, even relaxed: searched the question's words", nil
}

func (e *Engine) stepAnalyze(ctx context.Context, s *Session) (State, string, error) {
	a := s.active()
	an, err := e.analyze(ctx, s, a)
	if err != nil {
		return "", "", err
	}
	s.Analysis = &an
	var wanted []string
	for _, g := range an.GapsIdentified {
		if g.OutsideCurrentExpertise && g.SuspectedDomain != "" {
			wanted = append(wanted, g.SuspectedDomain)
		}
	}
	// Expanding first, before spending a round, is seed §5.4's priority.
	if pending := loadable(s, wanted); len(pending) > 0 {
		s.Pending = pending
		return StateExpandDomain, "analysis needs domains " + strings.Join(pending, ", "), nil
	}
	if an.sufficient() {
		if s.Part+1 < len(s.Parts) {
			s.Earlier = append(s.Earlier, an.Findings...)
			s.Analysis = nil
			s.Part++
			return StatePlan, fmt.Sprintf("analysis: part %d of %d answered; planning part %d: %s",
				s.Part, len(s.Parts), s.Part+1, s.Parts[s.Part].Question), nil
		}
		return StateSynthesize, "analysis: sufficient", nil
	}
	if s.Loops < e.opts.LoopMax && len(s.Answers) == 0 {
		s.Loops++
		return StatePlan, fmt.Sprintf("analysis: insufficient; re-planning (round %d of %d)", s.Loops, e.opts.LoopMax), nil
	}
	s.Partial = true
	return StateSynthesize, "analysis: insufficient and no rounds left: partial answer", nil
}

func (e *Engine) stepClarify(ctx context.Context, s *Session) (State, string, error) {
	gaps := append([]string(nil), s.Plan.ClarifyQuestions...)
	if s.Analysis != nil {
		for _, g := range s.Analysis.GapsIdentified {
			if t := g.GapType; t == "subjective" || t == "clarification" {
				gaps = append(gaps, g.Description)
			}
		}
	}
	c, err := e.clarify(ctx, s, s.active(), gaps)
	if err != nil {
		return "", "", err
	}
	s.Questions = nil
	for i, q := range c.Questions {
		if emptyOfContent(q.Question) {
			// "ok" is no question to put to the person.
			continue
		}
		s.Questions = append(s.Questions, Question{ID: fmt.Sprintf("q%d", i+1), Question: q.Question, Options: nonNil(q.Options), Gap: q.GapAddressed})
		s.Asked = append(s.Asked, q.Question)
	}
	if len(s.Questions) == 0 {
		s.Partial = true
		return StateSynthesize, "clarifier had no question to ask: partial answer", nil
	}
	s.Explanation = c.ContextExplanation
	s.Expires = e.opts.Now().Add(e.opts.SessionTTL)
	return StateWaitUser, fmt.Sprintf("%d question(s) for the user", len(s.Questions)), nil
}

func (e *Engine) stepSynthesize(ctx context.Context, s *Session) (State, string, error) {
	if len(s.Entries) == 0 && len(s.Answers) == 0 {
		// Nothing to rest an answer on: margin says so itself rather than
		// let a model write around the void.
		s.Draft = &Draft{Response: noDataAnswer(s), Confidence: "low"}
		s.NoData = true
		return StateObserve, "no data: answered without a model", nil
	}
	if !s.OfflineSearched {
		if err := e.searchOffline(ctx, s); err != nil {
			return "", "", err
		}
	}
	d, err := e.synthesize(ctx, s, s.active(), s.openGaps())
	if err != nil {
		return "", "", err
	}
	s.Draft = &d
	if emptyOfContent(d.Response) {
		// Nothing for the Evaluator to judge: the answer is the offline
		// one, and says why.
		s.EmptyDraft, s.Partial = true, true
		return StateObserve, "the draft says nothing: answered with the plain search", nil
	}
	return StateEvaluate, "draft written", nil
}

func (e *Engine) stepEvaluate(ctx context.Context, s *Session) (State, string, error) {
	ev, err := e.evaluate(ctx, s, s.active(), *s.Draft)
	if err != nil {
		return "", "", err
	}
	s.Evaluation = &ev
	if ev.passed() {
		return StateObserve, "evaluation: pass", nil
	}
	s.Feedback = ev.Feedback
	if s.Loops < e.opts.LoopMax {
		s.Loops++
		return StatePlan, fmt.Sprintf("evaluation: fail; re-planning (round %d of %d)", s.Loops, e.opts.LoopMax), nil
	}
	s.Partial = true
	return StateObserve, "evaluation: fail and no rounds left: partial answer", nil
}

func (e *Engine) stepObserve(ctx context.Context, s *Session) (State, string, error) {
	if s.QuestionOnly {
		return StateComplete, "a question only: the global context stays as it is", nil
	}
	trigger := s.observerTrigger()
	if trigger == "" {
		return StateComplete, "nothing for the observer", nil
	}
	if e.client == nil || s.Degraded != "" || s.Cut != "" {
		return StateComplete, "no model for the observer", nil
	}
	n, dropped, err := e.updateContext(ctx, s, trigger)
	if err != nil {
		// The answer or the log is done; a context update that fails must
		// not take it away, and the context stays as it was.
		e.log.Warn("global context not updated", "err", err)
		return StateComplete, "observer failed, the global context is unchanged: " + err.Error(), nil
	}
	why := fmt.Sprintf("observer (%s): %d update(s)", trigger, n)
	if dropped > 0 {
		why += fmt.Sprintf("; dropped %d empty of content", dropped)
	}
	return StateComplete, why, nil
}

// Observer triggers (seed 003 §11.10).
const (
	triggerQuery      = "post_query"
	triggerCorrection = "user_correction"
	triggerLog        = "significant_log"
)

// observerTrigger decides whether the Observer runs. After a query it runs
// only when the analysis found patterns in a question beyond a lookup: a
// simple "show me" reveals nothing to remember, and skipping it keeps a
// simple query within five model calls.
func (s *Session) observerTrigger() string {
	switch {
	case s.Type == InputCorrection && s.Logged != nil:
		return triggerCorrection
	case s.Logged != nil && s.Significant && s.Type != InputBoth:
		return triggerLog
	case s.Draft != nil && !s.NoData && s.QueryType != QuerySimple && s.Analysis != nil && len(s.Analysis.PatternsIdentified) > 0:
		return triggerQuery
	case s.Type == InputBoth && s.Logged != nil && s.Significant:
		return triggerLog
	}
	return ""
}

// keywordsOf picks the content words of a question for a search without a
// plan: long enough to mean something, not a question or filler word; and
// in a script written without spaces, every pair of characters, which the
// search ranks by how rare each is (see index.QuestionTerms), a Korean
// question without its question words and endings (see hangulStems).
func keywordsOf(text string) []string {
	words, pairs := index.QuestionTerms(hangulStems(strings.ToLower(text)))
	var out []string
	for _, w := range words {
		if len([]rune(w)) >= 4 && !stopwords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	for _, p := range pairs {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

var stopwords = map[string]bool{
	"what": true, "when": true, "where": true, "which": true, "while": true, "why's": true, "how's": true,
	"does": true, "did": true, "have": true, "been": true, "were": true, "with": true, "that": true,
	"this": true, "there": true, "their": true, "about": true, "should": true, "would": true, "could": true,
	"from": true, "into": true, "your": true, "mine": true, "last": true, "week": true, "feel": true,
	"felt": true, "show": true, "tell": true, "much": true, "many": true, "some": true, "they": true,
	"them": true, "then": true, "than": true, "just": true, "like": true, "today": true, "yesterday": true,
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
