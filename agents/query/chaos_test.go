package query_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/margin-md/margin/agents/query"
	"github.com/margin-md/margin/agents/query/querytest"
	"github.com/margin-md/margin/llm"
	"github.com/margin-md/margin/llm/llmtest"
	"github.com/margin-md/margin/vault"
	"github.com/margin-md/margin/vault/vaulttest"
)

// The chaos suite: every role of the query flow, in a flow that reaches it,
// meets a model that misbehaves in every way we know of. Whatever the
// model does, the flow must end within its caps, tell the user what went
// wrong, write nothing outside Margin/ (and today's daily note for a log),
// and leave the engine working for the next input.

// chaosFault is one way a model misbehaves. reply turns what a good model
// would have said (good, already JSON) into what this one says; n counts
// the calls of the faulty role so far (1-based), for transient faults.
type chaosFault struct {
	name  string
	reply func(good string, n int) llmtest.Reply
	// transparent faults must not change the outcome: the llm layer
	// repairs or retries them away.
	transparent bool
	// noRetry faults are not worth retrying (a missing model): each
	// invocation of the role makes exactly one request.
	noRetry bool
	// partial faults are valid replies that never settle: the flow must
	// stop at loop_max with a partial answer that names its gaps.
	partial bool
	// valid faults' replies are used as they come: nothing is retried.
	valid bool
	// transport faults fail the call itself and are retried llm_retry
	// times; the others are replies that do not parse, re-asked for
	// parse_retry times.
	transport bool
	// timesOut faults are ended by the timeout: the cell runs on an engine
	// where the faulty role has a short one, on a fake of its own.
	timesOut bool
	// why is what a degraded answer must say went wrong, when the fault
	// names it better than "degraded".
	why string
}

// chaosTimeout bounds the faulty role's calls in the cells of faults that
// time out, whose replies are all slow; slow replies are held far longer,
// so only the timeout can end them.
const chaosTimeout = 300 * time.Millisecond

// onFaultyProvider gives role a provider of its own, the fake at url with
// chaosTimeout, so only its calls can time out: the good roles keep
// llm.retry.timeout, there only to end a hang, however loaded the machine.
func onFaultyProvider(role, url string) func(*llm.Config) {
	return func(cfg *llm.Config) {
		p := cfg.Providers[llm.KindOllama]
		p.APIBase, p.Timeout = url, chaosTimeout
		cfg.Providers["faulty"] = p
		rc := cfg.Agents[role]
		rc.Provider = "faulty"
		cfg.Agents[role] = rc
		for _, models := range cfg.Tiers {
			models["faulty"] = models[llm.KindOllama]
		}
	}
}

// saysWhyDegraded reports whether a degraded answer tells the person why.
func saysWhyDegraded(answer string) bool {
	for _, why := range []string{"did not match the expected format", "no model was reachable", "the model call failed"} {
		if strings.Contains(answer, why) {
			return true
		}
	}
	return false
}

func chaosFaults() []chaosFault {
	return []chaosFault{
		{name: "garbage text", reply: func(string, int) llmtest.Reply {
			return llmtest.Reply{Content: "Sure! Here is what I think about your notes: it depends."}
		}},
		{name: "fenced JSON", transparent: true, valid: true, reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: "Here you go:\n```json\n" + good + "\n```\nHope this helps."}
		}},
		{name: "truncated JSON", reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: good[:len(good)/2]}
		}},
		{name: "wrong argument types", reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: wrongTypes(good)}
		}},
		{name: "missing fields", reply: func(string, int) llmtest.Reply { return llmtest.Reply{Content: "{}"} }},
		{name: "extra fields", reply: func(good string, _ int) llmtest.Reply {
			var m map[string]any
			json.Unmarshal([]byte(good), &m)
			m["rm_rf"] = map[string]any{"path": "../../etc/passwd"}
			return llmtest.Reply{JSON: m}
		}},
		{name: "tool calls instead of JSON", reply: func(string, int) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Args: map[string]any{"path": "../outside.md", "content": "pwned"}}}}
		}},
		{name: "empty reply", reply: func(string, int) llmtest.Reply { return llmtest.Reply{} }},
		{name: "huge reply", reply: func(string, int) llmtest.Reply {
			return llmtest.Reply{Content: strings.Repeat("all work and no play ", 12_500), Chunks: 64}
		}},
		{name: "http 500", transport: true, why: "model server error", reply: func(string, int) llmtest.Reply {
			return llmtest.Reply{Status: 500, Error: "llama runner process has terminated"}
		}},
		{name: "http 500 once", transport: true, transparent: true, reply: func(good string, n int) llmtest.Reply {
			if n == 1 {
				return llmtest.Reply{Status: 500, Error: "llama runner process has terminated"}
			}
			return llmtest.Reply{Content: good}
		}},
		{name: "404 model not found", noRetry: true, reply: func(string, int) llmtest.Reply {
			return llmtest.Reply{Status: 404, Error: `model "qwen2.5:7b" not found, try pulling it first`}
		}},
		{name: "slow beyond the timeout", transport: true, timesOut: true, reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: good, Delay: time.Minute}
		}},
		{name: "stream cut mid-way", transport: true, why: "reply ended before it was complete", reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: good, Chunks: 4, CutAfter: 2}
		}},
		{name: "stream stalls mid-way", transport: true, timesOut: true, reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: good, Chunks: 4, StallAfter: 1}
		}},
		{name: "error mid-stream", transport: true, reply: func(good string, _ int) llmtest.Reply {
			return llmtest.Reply{Content: good, StreamError: "an error was encountered while running the model"}
		}},
		{name: "never satisfied", partial: true, valid: true, reply: func(good string, n int) llmtest.Reply {
			return llmtest.Reply{Content: neverSatisfied(good, n)}
		}},
	}
}

// neverSatisfied keeps a reply valid but makes it ask for more, forever:
// an analysis is insufficient and wants another domain each time, an
// evaluation fails. Other roles answer as a good model would.
func neverSatisfied(good string, n int) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		return good
	}
	if _, ok := m["verdict"]; ok {
		m["verdict"] = "insufficient"
		gap := querytest.Gap("more data", "contextual", true)
		gap["outside_current_expertise"] = true
		gap["suspected_domain"] = []string{"Sleep", "Nutrition", "Work", "Strength training", "Running"}[n%5]
		m["gaps_identified"] = []any{gap}
	}
	if _, ok := m["overall_verdict"]; ok {
		m["overall_verdict"], m["recommendation"] = "fail", "retry_with_more_context"
		m["feedback"] = []any{map[string]any{"issue": "not good enough", "suggestion": "look further", "affected_claim": ""}}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// wrongTypes keeps the reply's fields but gives each the wrong JSON type.
func wrongTypes(good string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(good), &m); err != nil {
		return good
	}
	for k, v := range m {
		switch v.(type) {
		case string:
			m[k] = 42
		case []any, map[string]any:
			m[k] = "see above"
		default:
			m[k] = []any{v}
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// chaosFlow is an input and a script that reach the roles it covers, with
// the status a well-behaved model gets.
type chaosFlow struct {
	name, input string
	replies     querytest.Replies
	status      query.Status
	roles       []string
	// daily is the daily note the flow may write, "" for none.
	daily string
	// log sends the input through log/append, which logs it whatever
	// the router says.
	log bool
}

const today = "Daily/2026-11-22.md"

func chaosFlows() []chaosFlow {
	sc := map[string]querytest.Scenario{}
	for _, s := range querytest.Scenarios() {
		sc[s.Name] = s
	}
	return []chaosFlow{
		// The simple question reaches every role but the observer in five
		// calls; the insight one has patterns worth observing.
		{name: "ask", input: sc["simple"].Input, replies: sc["simple"].Replies, status: query.StatusAnswered,
			roles: []string{"router", "planner", "analyzer", "synthesizer", "evaluator"}},
		{name: "ask insight", input: sc["insight"].Input, replies: sc["insight"].Replies, status: query.StatusAnswered,
			roles: []string{"observer"}},
		{name: "clarify", input: "Was stress behind Friday's heavy bench?", status: query.StatusClarification, roles: []string{"clarifier"},
			replies: querytest.Replies{
				"router":    {querytest.Route("query", "Strength training")},
				"planner":   {querytest.PlanClarify("insight", "How stressed were you on Friday?")},
				"clarifier": {querytest.Clarify("How stressed were you on Friday?", "not at all", "somewhat", "very")},
			}},
		{name: "log", input: "Bench 3x5 @ 200, felt strong", status: query.StatusLogged, roles: []string{"parser"}, daily: today,
			replies: querytest.Replies{
				"router": {querytest.Route("log", "Strength training")},
				"parser": {querytest.Parse("Strength training", map[string]any{
					"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 200, "sets": 3, "reps": 5}}}, true)},
				"observer": {querytest.Observe("pattern", "bench_trend", "Bench is going up", "tentative")},
			}},
		{name: "log/append", input: "Bench 3x5 @ 200, felt strong", status: query.StatusLogged, roles: []string{"router"}, daily: today, log: true,
			replies: querytest.Replies{
				"router": {querytest.Route("log", "Strength training")},
				"parser": {querytest.Parse("Strength training", map[string]any{
					"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 200, "sets": 3, "reps": 5}}}, false)},
			}},
		{name: "correction", input: "Actually Friday's bench was 195, not 185", status: query.StatusLogged, roles: []string{"router", "parser", "observer"}, daily: today,
			replies: querytest.Replies{
				"router": {querytest.RouteCorrection("Friday's bench weight", "Strength training")},
				"parser": {querytest.ParseCorrection("[[Daily/2026-11-13#18:15]]", "Strength training",
					map[string]any{"exercises": []any{map[string]any{"name": "bench press", "weight_lbs": 195}}})},
				"observer": {querytest.Observe("preference", "weight_unit", "lbs", "likely")},
			}},
	}
}

// expandableDomains is how many domains of the sample vault a flow can
// load after routing (all but the base domain): each expansion loads at
// least one and costs a plan and an analysis outside loop_max.
const expandableDomains = 2

// maxInvocations is how often one flow may invoke each role: the re-planned
// roles once per round (the first and loop_max more), the planner and the
// analyzer once more per domain expansion, the rest once.
func maxInvocations(role string, loopMax int) int {
	switch role {
	case "planner", "analyzer":
		return 1 + loopMax + expandableDomains
	case "synthesizer", "evaluator":
		return 1 + loopMax
	}
	return 1
}

// chaosEnv is a fake Ollama with a client whose retries and parse retries
// are in play, and an engine over a fresh sample vault.
type chaosEnv struct {
	v      *vault.Vault
	fake   *llmtest.Ollama
	model  *querytest.Model
	engine *query.Engine
	cfg    llm.Config
}

// engineWith is another engine on the same vault and fake, its client's
// configuration edited.
func (env *chaosEnv) engineWith(t *testing.T, edit func(*llm.Config)) *query.Engine {
	t.Helper()
	cfg := env.cfg
	cfg.Providers = maps.Clone(cfg.Providers)
	cfg.Agents = maps.Clone(cfg.Agents)
	cfg.Tiers = map[string]map[string]string{}
	for tier, models := range env.cfg.Tiers {
		cfg.Tiers[tier] = maps.Clone(models)
	}
	edit(&cfg)
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e, err := query.NewEngine(context.Background(), env.v, client, query.Options{Now: func() time.Time { return querytest.Now }, LoopMax: chaosLoopMax})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const chaosLoopMax = 1

// chaosModels are the models of the default tiers, pulled on every fake.
var chaosModels = []string{"qwen2.5:3b", "qwen2.5:7b", "qwen2.5:14b"}

func newChaosEnv(t *testing.T, replies querytest.Replies, edit func(*llm.Config)) *chaosEnv {
	t.Helper()
	env := &chaosEnv{v: querytest.SampleVault(t), fake: llmtest.NewOllama(t, chaosModels...), model: querytest.NewModel(replies)}
	env.fake.Handle(env.model.Reply)
	cfg := env.fake.Config()
	cfg.Retry.LLMRetry = 1
	cfg.Retry.ParseRetry = 1
	cfg.Retry.Timeout = 30 * time.Second
	cfg.Retry.Backoff = llm.Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	env.cfg = cfg
	env.engine = env.engineWith(t, func(*llm.Config) {})
	return env
}

// roleCalls counts the requests each role made.
func roleCalls(reqs []llmtest.OllamaRequest) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[querytest.RoleOf(r)]++
	}
	return out
}

func (f chaosFlow) run(ctx context.Context, e *query.Engine) (query.Result, error) {
	if f.log {
		return e.Log(ctx, f.input, time.Time{}, nil)
	}
	return e.Ask(ctx, f.input, nil)
}

// TestChaosRoles is the table: every fault × every role. A column (one
// role in one flow) runs its faults one after the other on one engine, so
// each fault also meets whatever the earlier ones left behind; at the end
// a good model must get the flow's normal outcome. The columns run all at
// once rather than -parallel at a time: they mostly wait on timeouts.
func TestChaosRoles(t *testing.T) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, flow := range chaosFlows() {
		for _, role := range flow.roles {
			wg.Go(func() {
				t.Run(flow.name+"/"+role, func(t *testing.T) {
					env := newChaosEnv(t, flow.replies, nil)
					for _, fault := range chaosFaults() {
						t.Run(fault.name, func(t *testing.T) { chaosCell(t, env, flow, role, fault) })
					}
					// The engine still works with a good model.
					env.model.Set(flow.replies)
					env.fake.Handle(env.model.Reply)
					r, err := flow.run(context.Background(), env.engine)
					if err != nil || r.Status != flow.status {
						t.Errorf("after the faults, a good model gets status %s, %v; want %s", r.Status, err, flow.status)
					}
				})
			})
		}
	}
}

func chaosCell(t *testing.T, env *chaosEnv, flow chaosFlow, role string, fault chaosFault) {
	env.model.Set(flow.replies)
	var n atomic.Int32
	handle := func(req llmtest.OllamaRequest) llmtest.Reply {
		good := env.model.Reply(req)
		if querytest.RoleOf(req) != role {
			return good
		}
		return fault.reply(good.Content+jsonOf(good.JSON), int(n.Add(1)))
	}
	env.fake.Handle(handle)
	engine, own := env.engine, (*llmtest.Ollama)(nil)
	if fault.timesOut {
		// The faulty role gets a fake of its own: a request the client
		// gave up on can reach the server late, and must not be counted
		// in the next cell.
		own = llmtest.NewOllama(t, chaosModels...)
		own.Handle(handle)
		engine = env.engineWith(t, onFaultyProvider(role, own.URL))
	}
	before := vaulttest.UserFiles(t, env.v.Dir())
	earlier := len(env.fake.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to catch a hang
	defer cancel()

	r, err := flow.run(ctx, engine)
	if err != nil {
		t.Fatalf("the flow failed instead of degrading: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the flow hung until the test's deadline")
	}

	// Caps: a good role makes one request per invocation; the faulty one
	// up to its retries of the fault's kind, none when its replies were
	// valid or not worth retrying.
	reqs := env.fake.Requests()[earlier:]
	if own != nil {
		reqs = append(reqs, own.Requests()...)
	}
	calls := roleCalls(reqs)
	for rl, c := range calls {
		limit := maxInvocations(rl, chaosLoopMax)
		switch {
		case rl != role, fault.noRetry, fault.valid:
		case fault.transport:
			limit *= 1 + env.cfg.Retry.LLMRetry
		default:
			limit *= 1 + env.cfg.Retry.ParseRetry
		}
		if c > limit {
			for _, rq := range reqs {
				last := rq.Messages[len(rq.Messages)-1]
				t.Logf("request of the %s: %d messages, the last (%s) %.120q", querytest.RoleOf(rq), len(rq.Messages), last.Role, last.Content)
			}
			t.Errorf("%s made %d requests, cap %d (all: %v)", rl, c, limit, calls)
		}
	}
	// (A request the client gave up on may not have reached its server.)
	if calls[role] == 0 && !fault.timesOut {
		t.Fatalf("the flow never asked the %s (calls %v): the cell tests nothing", role, calls)
	}

	// What the user is told.
	switch {
	case fault.transparent:
		if r.Status != flow.status {
			t.Errorf("status %s, want %s as with a good model (answer %q)", r.Status, flow.status, r.Answer)
		}
	case fault.partial && (role == "analyzer" || role == "evaluator"):
		if r.Status != query.StatusPartial || len(r.Gaps) == 0 {
			t.Errorf("status %s gaps %v, want a partial answer naming its gaps", r.Status, r.Gaps)
		}
	case fault.partial:
		if r.Status != flow.status {
			t.Errorf("status %s, want %s: the %s's replies were good", r.Status, flow.status, role)
		}
	case r.Status == query.StatusDegraded:
		if !saysWhyDegraded(r.Answer) {
			t.Errorf("degraded answer does not say why: %q", r.Answer)
		}
		if fault.why != "" && !strings.Contains(r.Answer, fault.why) {
			t.Errorf("degraded answer %q does not say %q", r.Answer, fault.why)
		}
	default:
		// A role the flow can do without (the observer) may fail
		// quietly for the user, but the flow's record says so.
		said := false
		for _, tr := range r.Transitions {
			said = said || strings.Contains(tr.Why, "fail")
		}
		if !said && !strings.Contains(r.Answer, "unparsed") {
			t.Errorf("status %s and nothing says the %s failed; transitions %+v", r.Status, role, r.Transitions)
		}
	}
	if fault.noRetry && r.Status == query.StatusDegraded && !strings.Contains(r.Answer, "ollama pull") {
		t.Errorf("a missing model's answer does not say how to fix it: %q", r.Answer)
	}

	if out := vaulttest.Changed(before, vaulttest.UserFiles(t, env.v.Dir()), flow.daily); len(out) > 0 {
		t.Errorf("the flow wrote outside Margin/: %v", out)
	}
}

func jsonOf(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// asOllama wraps a system prompt so the role script can answer a request
// that reached another provider.
func asOllama(system string) llmtest.OllamaRequest {
	var r llmtest.OllamaRequest
	r.Messages = []api.Message{{Role: "system", Content: system}}
	return r
}

// TestChaosFallback: the primary provider fails for every role and the
// fallback (OpenAI-compatible or Anthropic) answers well, badly, or not
// at all. A good fallback gives the answer a good primary would; a bad one
// a degraded answer that says why; each provider within its retries.
func TestChaosFallback(t *testing.T) {
	var sc querytest.Scenario
	for _, s := range querytest.Scenarios() {
		if s.Name == "simple" {
			sc = s
		}
	}
	primary := map[string]llmtest.Reply{
		"http 500":            {Status: 500, Error: "llama runner process has terminated"},
		"404 model not found": {Status: 404, Error: `model "qwen2.5:7b" not found, try pulling it first`},
		"slow":                {Delay: time.Minute},
	}
	// fallback replies: good (nil), or a fault per provider.
	type fb struct {
		name   string
		openai func(good string) llmtest.Reply
		claude func(good string) llmtest.Reply
		status query.Status
	}
	fallbacks := []fb{
		{name: "answers", status: query.StatusAnswered,
			openai: func(good string) llmtest.Reply { return llmtest.Reply{Content: good} },
			claude: func(good string) llmtest.Reply { return llmtest.Reply{Content: good} }},
		{name: "misbehaves", status: query.StatusDegraded,
			openai: func(string) llmtest.Reply { return llmtest.Reply{Content: "I cannot help with that."} },
			claude: func(string) llmtest.Reply {
				return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "delete_notes", Args: map[string]any{"glob": "**"}}}}
			}},
		{name: "fails", status: query.StatusDegraded,
			openai: func(string) llmtest.Reply { return llmtest.Reply{Status: 503, Error: "overloaded"} },
			claude: func(string) llmtest.Reply { return llmtest.Reply{Status: 529, Error: "Overloaded"} }},
	}
	// All cells at once, as in TestChaosRoles.
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, provider := range []string{llm.KindOpenAI, llm.KindAnthropic} {
		for pname, prep := range primary {
			for _, f := range fallbacks {
				wg.Go(func() {
					t.Run(provider+"/"+pname+"/fallback "+f.name, func(t *testing.T) {
						var fallbackURL string
						var fallbackCalls func() int
						model := querytest.NewModel(sc.Replies)
						good := func(system string) string {
							rep := model.Reply(asOllama(system))
							return rep.Content + jsonOf(rep.JSON)
						}
						switch provider {
						case llm.KindOpenAI:
							fake := llmtest.NewOpenAI(t, "gpt-4o-mini", "gpt-4o")
							fake.Handle(func(r llmtest.OpenAIRequest) llmtest.Reply { return f.openai(good(r.Messages[0].Content)) })
							fallbackURL, fallbackCalls = fake.URL, func() int { return len(fake.Requests()) }
						default:
							fake := llmtest.NewAnthropic(t, "claude-3-5-haiku-20241022", "claude-sonnet-4-20250514")
							fake.Handle(func(r llmtest.AnthropicRequest) llmtest.Reply { return f.claude(good(r.System[0].Text)) })
							fallbackURL, fallbackCalls = fake.URL, func() int { return len(fake.Requests()) }
						}
						models := map[string]map[string]string{
							llm.KindOpenAI:    {"low": "gpt-4o-mini", "medium": "gpt-4o-mini", "high": "gpt-4o"},
							llm.KindAnthropic: {"low": "claude-3-5-haiku-20241022", "medium": "claude-3-5-haiku-20241022", "high": "claude-sonnet-4-20250514"},
						}[provider]
						env := newChaosEnv(t, sc.Replies, func(cfg *llm.Config) {
							// Every primary reply is bad, so only the primary
							// gets a short timeout; one attempt keeps a slow
							// primary to one timeout per call.
							cfg.Retry.LLMRetry = 0
							p := cfg.Providers[llm.KindOllama]
							p.Timeout = 500 * time.Millisecond
							cfg.Providers[llm.KindOllama] = p
							cfg.FallbackProvider = provider
							cfg.Providers[provider] = llm.ProviderConfig{Kind: provider, APIBase: fallbackURL, APIKey: "test-key"}
							for tier, m := range models {
								cfg.Tiers[tier][provider] = m
							}
						})
						env.fake.Handle(func(llmtest.OllamaRequest) llmtest.Reply { return prep })
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only to catch a hang
						defer cancel()
						r, err := env.engine.Ask(ctx, sc.Input, nil)
						if err != nil {
							t.Fatalf("the flow failed instead of degrading: %v", err)
						}
						if r.Status != f.status {
							t.Errorf("status %s, want %s (answer %q)", r.Status, f.status, r.Answer)
						}
						if r.Status == query.StatusDegraded && !saysWhyDegraded(r.Answer) {
							t.Errorf("degraded answer does not say why: %q", r.Answer)
						}
						// Every request to the fallback follows a failed primary
						// call, and both stay within invocations × attempts. (The
						// primary's recorded requests cannot bound the
						// fallback's: on a loaded machine a primary request can
						// time out before the fake reads it, and goes unrecorded.)
						perInvocation := 1 + env.cfg.Retry.LLMRetry
						if pname == "404 model not found" {
							perInvocation = 1
						}
						primaryCalls := len(env.fake.Requests())
						invocations := 0
						for _, role := range []string{"router", "planner", "analyzer", "synthesizer", "evaluator", "observer"} {
							invocations += maxInvocations(role, chaosLoopMax)
						}
						if primaryCalls > invocations*perInvocation*(1+env.cfg.Retry.ParseRetry) {
							t.Errorf("%d requests to the primary, cap %d", primaryCalls, invocations*perInvocation*(1+env.cfg.Retry.ParseRetry))
						}
						if n := fallbackCalls(); n == 0 || n > invocations*(1+env.cfg.Retry.LLMRetry)*(1+env.cfg.Retry.ParseRetry) {
							t.Errorf("%d requests to the fallback after %d to the primary, cap %d", n, primaryCalls, invocations*(1+env.cfg.Retry.LLMRetry)*(1+env.cfg.Retry.ParseRetry))
						}
					})
				})
			}
		}
	}
}
