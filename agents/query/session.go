package query

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/margin-md/margin/vault/edit"
)

// Session is the whole state of one input's flow (seed 003 §5.3). It is
// saved in the state database after every request, so a session waiting
// for clarification survives a restart and every transition can be read
// back.
type Session struct {
	ID       string    `json:"id"`
	Input    string    `json:"input"`
	At       time.Time `json:"at"`    // when the input was given; a log entry's time
	Today    string    `json:"today"` // At's day, what "last week" is relative to
	ForceLog bool      `json:"forceLog,omitempty"`
	// QuestionOnly is an input that may only be answered (Engine.Question):
	// nothing is logged and the global context is not updated.
	QuestionOnly bool `json:"questionOnly,omitempty"`

	Type             InputType `json:"type"`
	Selected         []string  `json:"selected"`
	Expanded         []string  `json:"expanded,omitempty"`
	Pending          []string  `json:"pending,omitempty"`
	CorrectionTarget string    `json:"correctionTarget,omitempty"`
	LogPortion       string    `json:"logPortion,omitempty"`
	Query            string    `json:"query,omitempty"`
	QueryType        QueryType `json:"queryType,omitempty"`

	Plan       *Plan       `json:"plan,omitempty"`
	Attempts   []Attempt   `json:"attempts,omitempty"`
	Entries    []Entry     `json:"entries,omitempty"`
	Truncated  bool        `json:"truncated,omitempty"`
	Analysis   *Analysis   `json:"analysis,omitempty"`
	Draft      *Draft      `json:"draft,omitempty"`
	Evaluation *Evaluation `json:"evaluation,omitempty"`
	Feedback   []Feedback  `json:"feedback,omitempty"`
	// Parts are the parts of a question whose later parts build on the
	// earlier ones (the planner's "dependent" strategy, seed 003 §7.4):
	// they are planned and analysed in order, Part being the one under
	// way, and the findings of those done are kept in Earlier. Empty for
	// any other question, which is answered in one pass.
	Parts   []SubQuery `json:"parts,omitempty"`
	Part    int        `json:"part,omitempty"`
	Earlier []Finding  `json:"earlier,omitempty"`
	// Loops counts returns to PLAN (re-plans and re-evaluations), capped
	// by Options.LoopMax; moving on to a question's next part is not one.
	Loops   int  `json:"loops"`
	Partial bool `json:"partial,omitempty"`
	NoData  bool `json:"noData,omitempty"`

	Questions   []Question        `json:"questions,omitempty"`
	Explanation string            `json:"explanation,omitempty"`
	Asked       []string          `json:"asked,omitempty"`
	Answers     map[string]string `json:"answers,omitempty"`
	Declined    bool              `json:"declined,omitempty"`
	Expires     time.Time         `json:"expires,omitzero"`

	Parsed *ParsedEntry `json:"parsed,omitempty"`
	// Appended is where the raw log text went, written before any model
	// call reads it (see Engine.appendLog).
	Appended    *Appended `json:"appended,omitempty"`
	Logged      *Logged   `json:"logged,omitempty"`
	Significant bool      `json:"significant,omitempty"`

	// Offline is what the plain search of the question's words found (see
	// Engine.searchOffline), once OfflineSearched; Fallback says the
	// answer's evidence is that search because the plan found nothing;
	// EmptyDraft says the Draft is empty of content, set aside for it;
	// KeywordOnly why that search could not search by meaning too.
	Offline         []Entry `json:"offline,omitempty"`
	OfflineSearched bool    `json:"offlineSearched,omitempty"`
	Fallback        bool    `json:"fallback,omitempty"`
	EmptyDraft      bool    `json:"emptyDraft,omitempty"`
	KeywordOnly     string  `json:"keywordOnly,omitempty"`

	Degraded string `json:"degraded,omitempty"`
	// Cut says the deadline passed and the flow finished without the
	// model (Engine.cut); the answer names it as a gap.
	Cut          string       `json:"cut,omitempty"`
	State        State        `json:"state"`
	Transitions  []Transition `json:"transitions"`
	Calls        int          `json:"calls"`
	PromptTokens int          `json:"promptTokens"`
	Created      time.Time    `json:"created"`
	Updated      time.Time    `json:"updated"`

	// Read fresh for every request, never saved: see Engine.prepare.
	domains []Domain
	context string
	// models is the model that answered each role in this request, which
	// margin's history names with the writes the role led to (cause).
	models map[string]string
}

func (s *Session) move(to State, why string, at time.Time) {
	s.Transitions = append(s.Transitions, Transition{From: s.State, To: to, Why: why, At: at})
	s.State = to
}

func (s *Session) active() Active { return combine(s.domains, s.Selected) }

// cause names a write of the query agents in margin's history (SPEC §11):
// the one who asked when ctx names them (an MCP client, the person at the
// command line), else what the query agents write; and the model whose
// answer as role led to it ("" before that model answered, as for a log's
// text, which is written first).
func (s *Session) cause(ctx context.Context, what, role string) context.Context {
	c := edit.Cause{Model: s.models[role]}
	if edit.CauseOf(ctx).Actor == "" {
		c.Actor = "query (" + what + ")"
	}
	return edit.WithCause(ctx, c)
}

func (s *Session) weekday() string { return s.At.Weekday().String() }

func (s *Session) logText() string {
	if s.Type == InputBoth && s.LogPortion != "" {
		return s.LogPortion
	}
	return s.Input
}

func (s *Session) addEntries(es []Entry) {
	seen := make(map[string]bool, len(s.Entries))
	for _, en := range s.Entries {
		seen[en.key()] = true
	}
	for _, en := range es {
		if !seen[en.key()] {
			seen[en.key()] = true
			s.Entries = append(s.Entries, en)
		}
	}
	sortEntries(s.Entries)
}

// openGaps are what a partial answer must disclose: the analysis's critical
// gaps, the evaluator's last objections, and what a declined question
// would have filled.
// findings are the findings of the earlier parts of a question and of
// the last analysis.
func (s *Session) findings() []Finding {
	out := slices.Clip(s.Earlier)
	if s.Analysis != nil {
		out = append(out, s.Analysis.Findings...)
	}
	return out
}

func (s *Session) openGaps() []string {
	if !s.Partial {
		return nil
	}
	var out []string
	add := func(g string) {
		if g = strings.TrimSpace(g); g != "" && !containsFold(out, g) {
			out = append(out, g)
		}
	}
	if s.Analysis != nil {
		for _, g := range s.Analysis.GapsIdentified {
			if g.critical() {
				add(g.Description)
			}
		}
	}
	for _, f := range s.Feedback {
		add(f.Issue)
	}
	if s.Declined {
		for _, q := range s.Questions {
			add(q.Gap)
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func (e *Engine) entriesText(s *Session) string {
	text, cut := entriesTextCapped(s.Entries, e.opts.PromptEntryTokens*4)
	if cut {
		s.Truncated = true
	}
	return text
}

// schema holds the query component's migration steps. Append, never edit.
var schema = []string{`
CREATE TABLE query_sessions (
	id      TEXT PRIMARY KEY,
	state   TEXT NOT NULL,
	created TEXT NOT NULL,
	updated TEXT NOT NULL,
	expires TEXT,             -- RFC 3339; set while waiting for the user
	data    TEXT NOT NULL     -- the Session as JSON
);
CREATE INDEX query_sessions_updated ON query_sessions(updated);

-- Parsed data of logged entries, keyed by (note, entry heading, domain).
-- It can be rebuilt by parsing the daily notes again.
CREATE TABLE query_parsed (
	note         TEXT NOT NULL,
	entry        TEXT NOT NULL,
	domain       TEXT NOT NULL,
	data         TEXT NOT NULL,  -- JSON object
	uncertain    TEXT NOT NULL,  -- JSON array of field names
	raw          TEXT NOT NULL,
	corrected_by TEXT NOT NULL DEFAULT '',
	updated      TEXT NOT NULL,
	PRIMARY KEY (note, entry, domain)
) WITHOUT ROWID;
`}

func newSessionID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (e *Engine) saveSession(ctx context.Context, s *Session) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("saving session %s: %w", s.ID, err)
	}
	var expires any
	if s.State == StateWaitUser {
		expires = s.Expires.UTC().Format(time.RFC3339Nano)
	}
	_, err = e.store.db.ExecContext(ctx, `
		INSERT INTO query_sessions (id, state, created, updated, expires, data) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated = excluded.updated, expires = excluded.expires, data = excluded.data`,
		s.ID, string(s.State), s.Created.UTC().Format(time.RFC3339Nano), s.Updated.UTC().Format(time.RFC3339Nano), expires, string(data))
	if err != nil {
		return fmt.Errorf("saving session %s: %w", s.ID, err)
	}
	return nil
}

// Session reads a saved session, for inspection of its transitions.
func (e *Engine) Session(ctx context.Context, id string) (*Session, error) {
	var data string
	err := e.store.db.QueryRowContext(ctx, `SELECT data FROM query_sessions WHERE id = ?`, id).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("no session %q: %w", id, ErrSessionNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading session %s: %w", id, err)
	}
	var s Session
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return nil, fmt.Errorf("reading session %s: %w", id, err)
	}
	return &s, nil
}

// loadSession reads a session that may still be answered: known and not
// expired.
func (e *Engine) loadSession(ctx context.Context, id string) (*Session, error) {
	if strings.TrimSpace(id) == "" {
		return nil, fmt.Errorf("no session id given: %w", ErrSessionNotFound)
	}
	s, err := e.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.State == StateWaitUser && !s.Expires.IsZero() && e.opts.Now().After(s.Expires) {
		return nil, fmt.Errorf("session %s expired at %s (sessions last %s); ask again: %w",
			id, s.Expires.Format(time.RFC3339), e.opts.SessionTTL, ErrSessionNotFound)
	}
	return s, nil
}
